"""The masking pattern `tf.where(x > 0, f(x), 0.)` has gradient 0 where masked, as in TF.

TF's SqrtGrad, RsqrtGrad and ReciprocalGrad kernels return 0 wherever the incoming gradient is
0; other gradients (log, division) have no such rule in TF and stay NaN (checked against TF
2.21). The gradient ops are written with ops, so second derivatives are checked too.
"""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

SAFE = {"sqrt": tf.sqrt, "rsqrt": tf.math.rsqrt, "reciprocal": tf.math.reciprocal}


def _masked_grad(fn, values):
    x = tf.constant(values)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.where(x > 0, fn(x), 0.0)
    return tape.gradient(y, x).numpy()


@pytest.mark.parametrize("name", sorted(SAFE))
def test_masked_gradient_is_zero_at_masked_points(name):
    with np.errstate(all="ignore"):  # the forward itself makes nan/inf at x <= 0
        g = _masked_grad(SAFE[name], [-1.0, 0.0, 4.0])
    assert g[0] == 0.0 and g[1] == 0.0
    x = 4.0
    want = {"sqrt": 0.5 / np.sqrt(x), "rsqrt": -0.5 * x**-1.5, "reciprocal": -1 / x**2}[name]
    np.testing.assert_allclose(g[2], want, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(SAFE))
def test_a_zero_upstream_gradient_gives_zero_even_where_the_derivative_is_infinite(name):
    x = tf.constant([0.0, -1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with np.errstate(all="ignore"):
            y = SAFE[name](x)
    g = tape.gradient(y, x, output_gradients=tf.zeros_like(x))
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])


def test_log_keeps_tf_nan_at_zero():
    # TF's log gradient is dy / x: 0 / 0 is nan there too.
    with np.errstate(all="ignore"):
        g = _masked_grad(tf.math.log, [-1.0, 0.0])
    assert g[0] == 0.0 and np.isnan(g[1])


@pytest.mark.parametrize("name", sorted(SAFE))
def test_gradients_match_central_differences(name):
    x = np.array([0.3, 1.7, 4.0])
    check_op(SAFE[name], [x], {"sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a),
                               "reciprocal": lambda a: 1 / a}[name])  # fmt: skip


@pytest.mark.parametrize("name", sorted(SAFE))
def test_second_derivatives_through_nested_tapes(name):
    check_second_derivative(SAFE[name], np.array([0.3, 1.7, 4.0]), rtol=1e-4)


@pytest.mark.parametrize("name", sorted(SAFE))
def test_third_derivative_of_sqrt_family_is_right(name):
    # d^3/dx^3 of x^p = p (p-1) (p-2) x^(p-3)
    p = {"sqrt": 0.5, "rsqrt": -0.5, "reciprocal": -1.0}[name]
    x = tf.constant([1.3, 2.0], tf.float64)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = SAFE[name](x)
            g1 = t1.gradient(y, x)
        g2 = t2.gradient(g1, x)
    g3 = t3.gradient(g2, x)
    xv = x.numpy()
    np.testing.assert_allclose(g3.numpy(), p * (p - 1) * (p - 2) * xv ** (p - 3), rtol=1e-10)
