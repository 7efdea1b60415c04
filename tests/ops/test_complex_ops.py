"""Complex numbers: construction, parts, conjugate, angle, and TF's gradient convention
(the gradient for z = x + iy of a real loss is dL/dx + i dL/dy)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(3)
RE, IM = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))


def test_complex_dtypes_and_broadcasting():
    z = tf.complex([2.25, 3.25], [4.75, 5.75])
    assert z.dtype == tf.complex64
    np.testing.assert_array_equal(z.numpy(), [2.25 + 4.75j, 3.25 + 5.75j])
    z64 = tf.complex(tf.constant([1.0, 2.0], tf.float64), tf.constant(3.0, tf.float64))
    assert z64.dtype == tf.complex128
    np.testing.assert_array_equal(z64.numpy(), [1 + 3j, 2 + 3j])
    assert tf.dtypes.complex is tf.complex


def test_complex_refuses_mixed_or_integer_parts():
    with pytest.raises(TypeError, match="float32 float64"):
        tf.complex(tf.constant([1.0]), tf.constant([1.0], tf.float64))
    with pytest.raises(TypeError, match="int32"):
        tf.complex(tf.constant([1]), tf.constant([1]))


def test_parts_conj_and_angle_against_numpy():
    z = RE + 1j * IM
    t = tf.constant(z)
    np.testing.assert_array_equal(tf.math.real(t).numpy(), z.real)
    np.testing.assert_array_equal(tf.math.imag(t).numpy(), z.imag)
    np.testing.assert_array_equal(tf.math.conj(t).numpy(), np.conj(z))
    np.testing.assert_allclose(tf.math.angle(t).numpy(), np.angle(z))
    assert tf.math.real(tf.constant(z.astype(np.complex64))).dtype == tf.float32


def test_real_tensors_follow_tf():
    x = tf.constant([-1.0, 2.0])
    assert tf.math.real(x) is x and tf.math.conj(x) is x
    np.testing.assert_array_equal(tf.math.imag(x).numpy(), [0.0, 0.0])
    np.testing.assert_allclose(tf.math.angle(x).numpy(), [np.pi, 0.0])
    assert tf.math.real(tf.constant([1, 2])).dtype == tf.int32
    with pytest.raises(TypeError, match="numeric"):
        tf.math.conj(tf.constant(["a"]))


@pytest.mark.parametrize("part", ["real", "imag", "angle", "abs_of_conj"])
def test_gradients_through_complex_back_to_real_parts(part):
    def f(x, y):
        z = tf.complex(x, y)
        if part == "abs_of_conj":
            z = tf.math.conj(z)
            return tf.math.real(z) * tf.math.imag(z)
        return getattr(tf.math, part)(z)

    refs = {"real": lambda x, y: x, "imag": lambda x, y: y,
            "angle": lambda x, y: np.arctan2(y, x), "abs_of_conj": lambda x, y: -x * y}  # fmt: skip
    check_op(f, [RE, IM], refs[part])


def test_complex_gradient_convention_matches_tf():
    # Values from TF 2.21: d sum(angle(z)) / dz and d sum(real(asinh(z))) / dz.
    z = tf.constant([1 + 2j, -0.5 + 0.3j])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(z)
        a = tf.reduce_sum(tf.math.angle(z))
        s = tf.reduce_sum(tf.math.real(tf.math.asinh(z)))
    ga, gs = tape.gradient(a, z), tape.gradient(s, z)
    w = z.numpy()
    np.testing.assert_allclose(ga.numpy(), -1 / (w.imag + 1j * w.real))
    np.testing.assert_allclose(gs.numpy(), np.conj(1 / np.sqrt(w**2 + 1)))


def test_complex_multiply_and_abs_gradients_are_adjoints():
    # TF's MulGrad conjugates the other operand; ComplexAbsGrad is dy * z / |z| (0 at z = 0).
    w = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))

    def product(re, im):
        z = tf.complex(re, im) * tf.constant(w)
        return tf.concat([tf.math.real(z), tf.math.imag(z)], axis=-1)

    check_op(product, [RE, IM], None, dtypes=("float64",))
    check_op(lambda re, im: tf.abs(tf.complex(re, im)), [RE, IM],
             lambda re, im: np.abs(re + 1j * im))  # fmt: skip
    z = tf.constant([3 + 4j, 0j])
    with tf.GradientTape() as tape:
        tape.watch(z)
        loss = tf.reduce_sum(tf.abs(z))
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), [0.6 + 0.8j, 0j])
