"""TF semantics that real code trips on: complex adjoints and gradients of matmul and division,
bitwise operators on integer tensors, sorting refuses strings, SparseTensor is not a Tensor."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import numeric_gradient

rng = np.random.default_rng(7)


def _cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _complex_grad_fd(loss, args, which):
    """TF's gradient of a real loss for complex input z = x + iy: dL/dx + i dL/dy."""

    def part(k):
        def f(flat):
            z = flat[: flat.size // 2] + 1j * flat[flat.size // 2 :]
            vals = list(args)
            vals[which] = z.reshape(args[which].shape)
            return loss(*vals)

        z = args[which].reshape(-1)
        g = numeric_gradient(f, np.concatenate([z.real, z.imag]))
        return g[: z.size] if k == 0 else g[z.size :]

    return (part(0) + 1j * part(1)).reshape(args[which].shape)


@pytest.mark.parametrize("kw", [{}, {"adjoint_a": True}, {"adjoint_b": True},
                                {"adjoint_a": True, "transpose_b": True}])  # fmt: skip
def test_matmul_adjoint_conjugates_and_complex_gradient(kw):
    a, b, w = _cplx(3, 3), _cplx(3, 3), _cplx(3, 3)
    ma = a.conj().T if kw.get("adjoint_a") else a
    mb = b.conj().T if kw.get("adjoint_b") else (b.T if kw.get("transpose_b") else b)
    out = tf.linalg.matmul(tf.constant(a), tf.constant(b), **kw)
    np.testing.assert_allclose(out.numpy(), ma @ mb, rtol=1e-12)

    def loss(x, y):
        xa = x.conj().T if kw.get("adjoint_a") else x
        yb = y.conj().T if kw.get("adjoint_b") else (y.T if kw.get("transpose_b") else y)
        return float(np.real(np.sum((xa @ yb) * w)))

    ta, tb = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([ta, tb])
        s = tf.math.real(tf.reduce_sum(tf.linalg.matmul(ta, tb, **kw) * tf.constant(w)))
    ga, gb = tape.gradient(s, [ta, tb])
    np.testing.assert_allclose(ga.numpy(), _complex_grad_fd(loss, [a, b], 0), atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), _complex_grad_fd(loss, [a, b], 1), atol=1e-6)


@pytest.mark.parametrize("fn", [tf.math.divide, tf.realdiv, tf.math.truediv, lambda x, y: x / y])
def test_complex_division_gradient_is_the_adjoint(fn):
    a, b, w = _cplx(4), _cplx(4) + 2.0, _cplx(4)
    ta, tb = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([ta, tb])
        s = tf.math.real(tf.reduce_sum(fn(ta, tb) * tf.constant(w)))
    ga, gb = tape.gradient(s, [ta, tb])

    def loss(x, y):
        return float(np.real(np.sum(x / y * w)))

    np.testing.assert_allclose(ga.numpy(), _complex_grad_fd(loss, [a, b], 0), atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), _complex_grad_fd(loss, [a, b], 1), atol=1e-6)
    # The value TF 2.21 gives for this case (dy = 1): conj(1 / b) and conj(-a / b**2).
    with tf.GradientTape() as tape:
        tape.watch([ta, tb])
        r = tf.math.divide(ta, tb)
    ga, gb = tape.gradient(r, [ta, tb])
    np.testing.assert_allclose(ga.numpy(), np.conj(1 / b), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), np.conj(-a / b**2), rtol=1e-12)


def test_integer_operators_are_bitwise():
    x, y = tf.constant([5, 12, -3]), tf.constant([3, 10, 6])
    xn, yn = x.numpy(), y.numpy()
    np.testing.assert_array_equal((x & y).numpy(), xn & yn)
    np.testing.assert_array_equal((x | y).numpy(), xn | yn)
    np.testing.assert_array_equal((x ^ y).numpy(), xn ^ yn)
    np.testing.assert_array_equal((~x).numpy(), ~xn)
    np.testing.assert_array_equal((6 & x).numpy(), 6 & xn)
    assert (x & y).dtype == tf.int32
    u = tf.constant([5, 0], tf.uint8)
    np.testing.assert_array_equal((~u).numpy(), [250, 255])
    v = tf.Variable([6, 7])
    np.testing.assert_array_equal((v & 3).numpy(), [2, 3])
    np.testing.assert_array_equal((~v).numpy(), [-7, -8])
    # bool stays logical
    b = tf.constant([True, False])
    np.testing.assert_array_equal((b & True).numpy(), [True, False])
    np.testing.assert_array_equal((~b).numpy(), [False, True])


def test_bitwise_operators_refuse_floats_and_mixed_dtypes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32"):
        tf.constant(1.0) & tf.constant(2.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32"):
        ~tf.constant(1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 and bool"):
        tf.constant(1) & tf.constant(True)


@pytest.mark.parametrize("values", [["b", "a"], [True, False], [1 + 1j, 2j]])
@pytest.mark.parametrize("fn", [tf.sort, tf.argsort])
def test_sort_refuses_strings_bools_and_complex(fn, values):
    with pytest.raises(tf.errors.InvalidArgumentError, match="not allowed"):
        fn(tf.constant(values))


def test_sort_still_orders_unsigned_and_floats():
    np.testing.assert_array_equal(tf.sort(tf.constant([3, 1], tf.uint8)).numpy(), [1, 3])
    np.testing.assert_array_equal(tf.argsort([2.0, -1.0, 0.5]).numpy(), [1, 2, 0])


def test_convert_to_tensor_refuses_sparse_tensor():
    st = tf.sparse.SparseTensor([[0, 0]], [1.0], [2, 2])
    with pytest.raises(ValueError, match=r"unsupported type \(SparseTensor\).*sparse.to_dense"):
        tf.convert_to_tensor(st)
    with pytest.raises(ValueError, match="SparseTensor"):
        tf.constant(st)
    np.testing.assert_array_equal(tf.sparse.to_dense(st).numpy(), [[1.0, 0.0], [0.0, 0.0]])
