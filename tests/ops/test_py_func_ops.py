"""tf.py_function, tf.numpy_function and the gradient helpers, with TF 2.21's behaviour."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import numeric_gradient


def test_py_function_outputs_and_tout():
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(tf.py_function(lambda a: a * 2, [x], tf.float32), [2, 4])
    a, b = tf.py_function(lambda a: (a * 2, a), [x], [tf.float32, tf.float32])
    np.testing.assert_array_equal(b, [1, 2])
    assert tf.py_function(lambda a: None, [x], []) == []
    three = tf.py_function(lambda a: 3, [x], tf.int64)
    assert three.dtype == tf.int64 and int(three) == 3
    spec_out = tf.py_function(lambda a: a * 2, [x], tf.TensorSpec(None, tf.float32))
    assert spec_out.dtype == tf.float32
    assert float(tf.py_function(lambda: 1.0, [], tf.float32)) == 1.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="requested dtype int32"):
        tf.py_function(lambda a: a * 2, [x], tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="returned 1 value"):
        tf.py_function(lambda a: a, [x], [tf.float32, tf.float32])


def test_py_function_errors_become_op_errors():
    x = tf.constant(1.0)
    with pytest.raises(tf.errors.UnknownError, match="ZeroDivisionError"):
        tf.py_function(lambda a: 1 / 0, [x], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="ValueError: bad"):
        tf.py_function(lambda a: (_ for _ in ()).throw(ValueError("bad")), [x], tf.float32)


def test_py_function_is_differentiable_through_its_ops():
    x0 = np.array([0.3, -1.2, 2.0])

    def f(x):
        return tf.reduce_sum(tf.py_function(lambda a: tf.sin(a) * a, [x], tf.float64))

    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    numeric = numeric_gradient(lambda a: float(f(tf.constant(a))), x0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), numeric, rtol=1e-6)


def test_numpy_function():
    x = tf.constant([1.0, 2.0])
    assert tf.numpy_function(lambda a: type(a).__name__, [x], tf.string).numpy() == b"ndarray"
    # as TF eagerly: NumPy results keep their dtype, Tout is not a cast
    assert tf.numpy_function(lambda a: a.astype(np.float64), [x], tf.float32).dtype == tf.float64
    assert tf.numpy_function(lambda a: 3, [x], tf.int64).dtype == tf.int64
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.numpy_function(lambda a: a * a, [x], tf.float32)
    assert tape.gradient(y, x) is None
    with pytest.raises(tf.errors.OutOfRangeError):
        tf.numpy_function(lambda a: next(iter([])), [x], tf.float32)


def test_grad_pass_through():
    x = tf.constant([0.4, 1.6])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.grad_pass_through(tf.round)(x * 3.0)
    np.testing.assert_array_equal(y, [1, 5])
    np.testing.assert_array_equal(tape.gradient(y, x), [3, 3])


def test_recompute_grad_matches_plain_gradients_with_variables():
    w = tf.Variable([[0.5, -1.0], [2.0, 0.25]], dtype=tf.float64)

    def block(z):
        return tf.reduce_sum(tf.tanh(tf.matmul(z, w)) * z)

    x = tf.constant([[1.0, 2.0], [-0.5, 0.3]], dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        plain = block(x)
    want = tape.gradient(plain, [x, w])
    with tf.GradientTape() as tape:
        tape.watch(x)
        again = tf.recompute_grad(block)(x)
    got = tape.gradient(again, [x, w])
    assert float(again) == float(plain)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)


def test_enums_and_graph_only_functions():
    assert tf.UnconnectedGradients.ZERO.value == "zero" and tf.UnconnectedGradients.NONE == "none"
    assert tf.AggregationMethod.ADD_N == tf.AggregationMethod.DEFAULT == 0
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = tf.constant(2.0) * 1.0
    zero = tape.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert float(zero) == 0.0
    with pytest.raises(RuntimeError, match="tf.gradients is not supported when eager"):
        tf.gradients(y, x)
    with pytest.raises(RuntimeError, match="Use tf.GradientTape instead"):
        tf.hessians(y, x)


def test_batch_jacobian():
    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = x * x
    np.testing.assert_array_equal(
        tape.batch_jacobian(y, x).numpy(), [[[2, 0], [0, 4]], [[6, 0], [0, 8]]]
    )
    rng = np.random.default_rng(0)
    w = tf.constant(rng.standard_normal((3, 4)))
    xs = tf.constant(rng.standard_normal((5, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        out = tf.tanh(tf.matmul(xs, w))
    full = tape.jacobian(out, xs).numpy()  # [5, 4, 5, 3]
    batch = tape.batch_jacobian(out, xs).numpy()  # [5, 4, 3]
    for b in range(5):
        np.testing.assert_allclose(batch[b], full[b, :, b, :], rtol=1e-12)
    with pytest.raises(ValueError, match="Need first dimension of target shape"):
        tape.batch_jacobian(out, tf.transpose(xs))
    assert tape.batch_jacobian(out, tf.constant(np.zeros((5, 2)))) is None


def test_forward_accumulator_jvp_matches_finite_differences():
    rng = np.random.default_rng(1)
    x0, v0 = rng.standard_normal(4), rng.standard_normal(4)

    def f(x):
        return tf.sin(x) * tf.reduce_sum(x * x)

    x = tf.constant(x0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(v0)) as acc:
        y = f(x)
    eps = 1e-6
    numeric = (f(tf.constant(x0 + eps * v0)) - f(tf.constant(x0 - eps * v0))).numpy() / (2 * eps)
    np.testing.assert_allclose(acc.jvp(y).numpy(), numeric, rtol=1e-6)
    np.testing.assert_array_equal(acc.jvp(x).numpy(), v0)
    assert acc.jvp(tf.constant(1.0)) is None
    assert float(acc.jvp(tf.constant(1.0), unconnected_gradients="zero")) == 0.0
    with pytest.raises(ValueError, match="Tangent shape"):
        tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0]))


def test_hessian_vector_product_forward_over_reverse():
    x0, v0 = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -1.0])
    x = tf.constant(x0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(v0)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.exp(x) * x * x)
        grad = tape.gradient(y, x)
    hvp = acc.jvp(grad).numpy()
    hess_diag = np.exp(x0) * (x0 * x0 + 4 * x0 + 2)  # the Hessian is diagonal
    np.testing.assert_allclose(hvp, hess_diag * v0, rtol=1e-10)


def test_tf1_not_differentiable_is_absent_with_a_helpful_error():
    with pytest.raises(AttributeError, match="tf.no_gradient"):
        getattr(tf, "NotDifferentiable")  # noqa: B009 - the attribute access is the test
