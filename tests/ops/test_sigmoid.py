"""sigmoid: the vectorised form against float64, its limits, and its fused gradient."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_extremes_are_exact_and_silent(dtype):
    # pytest turns warnings into errors: an overflow warning from exp would fail here.
    x = np.array([-1e4, -1000.0, -100.0, 0.0, 100.0, 1000.0, 1e4], dtype=dtype)
    y = tf.sigmoid(x).numpy()
    assert y.dtype == dtype
    assert y[0] == 0.0 and y[1] == 0.0 and y[-1] == 1.0 and y[-2] == 1.0 and y[3] == 0.5
    assert np.all(np.isfinite(y)) and np.all((y >= 0) & (y <= 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_relative_accuracy_in_both_tails(dtype):
    x = np.linspace(-80, 80, 20001).astype(dtype)
    ref = 1 / (1 + np.exp(-x.astype(np.float64)))
    got = tf.sigmoid(x).numpy().astype(np.float64)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, ref, rtol=tol, atol=0)


def test_sigmoid_gradient_at_extremes_is_zero_not_nan():
    x = tf.constant([-1e4, -50.0, 0.0, 50.0, 1e4])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sigmoid(x)
    g = tape.gradient(y, x).numpy()
    assert np.all(np.isfinite(g))
    assert g[0] == 0.0 and g[-1] == 0.0 and g[2] == 0.25


def test_sigmoid_gradient_and_second_derivative():
    x = np.random.default_rng(5).standard_normal((3, 4)) * 4
    check_op(tf.sigmoid, [x], lambda a: 1 / (1 + np.exp(-a)))
    check_second_derivative(tf.sigmoid, x)


def test_sigmoid_grad_op_both_inputs_second_order():
    """d/dx of (dy * s(x) * (1 - s(x))) with dy itself depending on x: both inputs of the
    fused sigmoid_grad op get gradients on the outer tape."""
    x0 = np.array([-2.0, -0.3, 0.7, 3.0])

    def first(xv):
        s = 1 / (1 + np.exp(-xv))
        return xv**2 * s * (1 - s)  # d/dx sigmoid(x) with output gradient x**2

    x = tf.constant(x0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.sigmoid(x)
        g = inner.gradient(y, x, output_gradients=x * x)
    gg = outer.gradient(g, x).numpy()
    np.testing.assert_allclose(g.numpy(), first(x0), rtol=1e-12)
    eps = 1e-6
    np.testing.assert_allclose(gg, (first(x0 + eps) - first(x0 - eps)) / (2 * eps), rtol=1e-6)


def test_scalar_and_integer_inputs():
    assert float(tf.sigmoid(tf.constant(0.0))) == 0.5
    assert float(tf.keras.activations.sigmoid(0.0)) == 0.5
    x = tf.constant(0.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sigmoid(x)
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(float(tape.gradient(y, x)), s * (1 - s), rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="float"):
        tf.sigmoid(tf.constant([1, 2]))
