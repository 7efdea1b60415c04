"""The fused training-mode batch norm (`normalization_ops.fused_batch_norm_train`) against a
NumPy reference: values, batch statistics, finite-difference gradients of x, scale and offset
for both memory layouts it takes without a copy (channels-first behind an NHWC view, as conv
outputs are, and C-contiguous), gradients through the returned statistics, second
derivatives, and the Keras layer that uses it."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative
from layerflow._src.ops.normalization_ops import fused_batch_norm_train

rng = np.random.default_rng(3)
EPS = 1e-3


def bn_ref(x, scale, offset):
    axes = tuple(range(x.ndim - 1))
    mean, var = x.mean(axes), x.var(axes)
    return (x - mean) / np.sqrt(var + EPS) * scale + offset, mean, var


def _channels_first_view(t):
    """`t` (NHWC), differentiably, as a tensor whose array is channels-first behind an NHWC
    view (adding a C-contiguous zero array lays the sum out channels-first)."""
    cf = tf.transpose(t, (3, 0, 1, 2))
    cf = cf + tf.zeros(cf.shape, dtype=cf.dtype)
    out = tf.transpose(cf, (1, 2, 3, 0))
    assert np.moveaxis(out._data, -1, 0).flags.c_contiguous
    return out


@pytest.mark.parametrize("layout", ["contiguous", "channels-first"])
@pytest.mark.parametrize("shape", [(3, 4, 5, 2), (6, 3)])
def test_values_statistics_and_gradients(layout, shape):
    if layout == "channels-first" and len(shape) == 2:
        pytest.skip("a 2-D array has one channels-last layout")
    c = shape[-1]
    x = rng.standard_normal(shape) * 2 + 1
    scale, offset = rng.standard_normal(c), rng.standard_normal(c)

    def fn(t, s, o):
        if layout == "channels-first":
            t = _channels_first_view(t)
        return fused_batch_norm_train(t, s, o, EPS)[0]

    check_op(fn, [x, scale, offset], lambda *a: bn_ref(*a)[0], rtol=1e-4, atol=1e-5,
             grad_rtol=1e-4, grad_atol=1e-6)  # fmt: skip
    y, mean, var = fused_batch_norm_train(tf.constant(x), tf.constant(scale), tf.constant(offset),
                                          EPS)  # fmt: skip
    _, m_ref, v_ref = bn_ref(x, scale, offset)
    np.testing.assert_allclose(mean.numpy(), m_ref, rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), v_ref, rtol=1e-10)


def test_output_keeps_the_channels_first_layout():
    x = _channels_first_view(tf.constant(rng.standard_normal((2, 3, 3, 4)).astype(np.float32)))
    y = fused_batch_norm_train(x, tf.ones(4), tf.zeros(4), EPS)[0]
    assert np.moveaxis(y._data, -1, 0).flags.c_contiguous


def test_gradient_through_the_statistics():
    x = rng.standard_normal((4, 3))
    ws = rng.standard_normal(3), rng.standard_normal(3)

    def fn(t):
        y, m, v = fused_batch_norm_train(t, tf.ones(3, t.dtype), tf.zeros(3, t.dtype), EPS)
        w0, w1 = tf.cast(ws[0], t.dtype), tf.cast(ws[1], t.dtype)
        return tf.reduce_sum(y) + tf.reduce_sum(m * w0) + tf.reduce_sum(v * w1)

    check_op(fn, [x], None, grad_rtol=1e-5)


def test_second_derivative():
    x = rng.standard_normal((5, 2))
    w = tf.constant(rng.standard_normal((5, 2)))
    s, o = tf.constant(np.array([1.5, -0.5])), tf.constant(np.array([0.1, 0.2]))
    check_second_derivative(
        lambda t: tf.reduce_sum(fused_batch_norm_train(t, s, o, EPS)[0] ** 2 * w), x
    )


def test_layer_training_uses_the_kernel_and_matches_the_composed_form():
    x = rng.standard_normal((4, 3, 3, 5)).astype(np.float32)
    fused = tf.keras.layers.BatchNormalization(momentum=0.5)
    composed = tf.keras.layers.BatchNormalization(momentum=0.5, center=False)  # not fusable
    xt = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y1 = fused(xt, training=True)
        y2 = composed(xt, training=True)
        l1, l2 = tf.reduce_sum(y1 * y1 * x), tf.reduce_sum(y2 * y2 * x)
    ref, mean, var = bn_ref(x.astype(np.float64), 1.0, 0.0)
    np.testing.assert_allclose(y1.numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y2.numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fused.moving_mean.numpy(), 0.5 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused.moving_variance.numpy(), 0.5 + 0.5 * var, rtol=1e-5)
    g1, g2 = tape.gradient(l1, xt), tape.gradient(l2, xt)
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-3, atol=1e-4)
    # Inference uses the moving statistics.
    y3 = fused(xt, training=False)
    mm, mv = fused.moving_mean.numpy(), fused.moving_variance.numpy()
    np.testing.assert_allclose(y3.numpy(), (x - mm) / np.sqrt(mv + EPS), rtol=1e-4, atol=1e-5)
