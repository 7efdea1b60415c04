"""The composed convolution family (convolution, tf.conv, conv1d_transpose, conv_transpose,
atrous and separable convolutions, the exported gradient ops) against direct NumPy loops,
with numerical gradients. The expected values were also checked against TF 2.21."""

import numpy as np
import pytest
from conv_reference import conv_ref, conv_transpose_ref

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(11)


@pytest.mark.parametrize("xs,ws,s,padding,d", [
    ((2, 7, 3), (3, 3, 2), (1,), "SAME", (2,)),
    ((1, 5, 6, 2), (2, 3, 2, 3), (2, 1), "VALID", None),
    ((1, 4, 3, 4, 1), (2, 2, 2, 1, 2), (1, 2, 1), "SAME", None),
])  # fmt: skip
def test_convolution_by_rank(xs, ws, s, padding, d):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, b: tf.nn.convolution(a, b, s, padding, dilations=d), [x, w],
             lambda a, b: conv_ref(a, b, s, padding, d), grad_rtol=1e-4)  # fmt: skip


def test_convolution_channels_first_and_bad_format():
    x, w = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 3, 4))
    y = tf.nn.convolution(np.moveaxis(x, -1, 1), w, padding="SAME", data_format="NCW").numpy()
    np.testing.assert_allclose(np.moveaxis(y, 1, -1), conv_ref(x, w, (1,), "SAME"), atol=1e-6)
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.convolution(x, w, data_format="NHWC")


def test_tf_conv_batch_dims_explicit_padding_and_channels_first():
    x, w = rng.standard_normal((2, 3, 5, 4, 2)), rng.standard_normal((2, 2, 2, 3))
    y = tf.conv(x, w, [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 1, 0, 0, 2, 0, 0],
                batch_dims=2)  # fmt: skip
    xp = np.pad(x.reshape(6, 5, 4, 2), [(0, 0), (1, 0), (0, 2), (0, 0)])
    np.testing.assert_allclose(y.numpy(), conv_ref(xp, w, (1, 1), "VALID").reshape(2, 3, 5, 5, 3),
                               atol=1e-6)  # fmt: skip
    x3, w3 = rng.standard_normal((1, 2, 3, 3, 3)), rng.standard_normal((1, 2, 2, 2, 2))
    y3 = tf.conv(x3, w3, [1, 1, 1, 1, 1], "VALID", data_format="CHANNELS_FIRST").numpy()
    want = conv_ref(np.moveaxis(x3, 1, -1), w3, (1, 1, 1), "VALID")
    np.testing.assert_allclose(np.moveaxis(y3, 1, -1), want, atol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch_dims"):
        tf.conv(x, w, [1, 1, 1, 1], "VALID")


@pytest.mark.parametrize("xs,ws,s,padding,d", [
    ((2, 8, 3), (3, 3, 4), (2,), "SAME", None),
    ((1, 9, 2), (2, 2, 2), (3,), "VALID", None),
    ((1, 7, 2), (3, 2, 1), (1,), "SAME", (2,)),
])  # fmt: skip
def test_conv1d_transpose_is_conv1d_input_gradient(xs, ws, s, padding, d):
    """`xs` is the forward conv's input shape [N, W, O]; filters are [K, O, C]."""
    w = rng.standard_normal(ws)
    y = rng.standard_normal(conv_ref(np.zeros(xs), w, s, padding, d).shape)
    check_op(lambda a, b: tf.nn.conv1d_transpose(a, b, xs, s, padding, dilations=d), [y, w],
             lambda a, b: conv_transpose_ref(a, b, xs, s, padding, d), grad_rtol=1e-4)  # fmt: skip


def test_conv1d_transpose_channels_first():
    w, y = rng.standard_normal((3, 2, 4)), rng.standard_normal((1, 4, 4))
    got = tf.nn.conv1d_transpose(np.moveaxis(y, -1, 1), w, [1, 2, 8], 2, data_format="NCW")
    want = conv_transpose_ref(y, w, (1, 8, 2), (2,), "SAME")
    np.testing.assert_allclose(np.moveaxis(got.numpy(), 1, -1), want, atol=1e-6)


@pytest.mark.parametrize("out_shape,ws,s", [
    ((1, 6, 2), (2, 2, 3), 2),
    ((2, 4, 6, 2), (3, 3, 2, 3), 2),
    ((1, 4, 4, 2, 2), (2, 2, 1, 2, 1), 1),
])  # fmt: skip
def test_conv_transpose_by_rank(out_shape, ws, s):
    w = rng.standard_normal(ws)
    m = len(out_shape) - 2
    y = rng.standard_normal(conv_ref(np.zeros(out_shape), w, (s,) * m, "SAME").shape)
    got = tf.nn.conv_transpose(y, w, out_shape, s).numpy()
    np.testing.assert_allclose(got, conv_transpose_ref(y, w, out_shape, (s,) * m, "SAME"),
                               atol=1e-6)  # fmt: skip


def test_conv_transpose_nchw():
    w, y = rng.standard_normal((3, 3, 2, 3)), rng.standard_normal((1, 2, 2, 3))
    got = tf.nn.conv_transpose(np.moveaxis(y, -1, 1), w, [1, 2, 4, 4], [1, 1, 2, 2],
                               data_format="NCHW").numpy()  # fmt: skip
    want = conv_transpose_ref(y, w, (1, 4, 4, 2), (2, 2), "SAME")
    np.testing.assert_allclose(np.moveaxis(got, 1, -1), want, atol=1e-6)
    with pytest.raises(ValueError, match="3, 4 or 5"):
        tf.nn.conv_transpose(y, w, [1, 4], 2)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("rate", [1, 2, 3])
def test_atrous_conv2d_and_transpose(padding, rate):
    x, w = rng.standard_normal((1, 8, 7, 2)), rng.standard_normal((3, 2, 2, 3))
    check_op(lambda a, b: tf.nn.atrous_conv2d(a, b, rate, padding), [x, w],
             lambda a, b: conv_ref(a, b, (1, 1), padding, (rate, rate)),
             grad_rtol=1e-4)  # fmt: skip
    y = rng.standard_normal(conv_ref(x, w, (1, 1), padding, (rate, rate)).shape)
    check_op(lambda a, b: tf.nn.atrous_conv2d_transpose(a, b, x.shape, rate, padding), [y, w],
             lambda a, b: conv_transpose_ref(a, b, x.shape, (1, 1), padding, (rate, rate)),
             grad_rtol=1e-4)  # fmt: skip
    with pytest.raises(ValueError, match="rate"):
        tf.nn.atrous_conv2d(x, w, 0, padding)


def _depthwise_as_dense(dw):
    """A depthwise filter [KH, KW, C, M] as the dense filter [KH, KW, C, C * M]."""
    kh, kw, c, m = dw.shape
    dense = np.zeros((kh, kw, c, c * m))
    for ch in range(c):
        dense[:, :, ch, ch * m : (ch + 1) * m] = dw[:, :, ch, :]
    return dense


@pytest.mark.parametrize("s,padding,d", [((1, 1), "SAME", (1, 1)), ((2, 2), "VALID", (1, 1)),
                                          ((1, 1), "SAME", (2, 2))])  # fmt: skip
def test_separable_conv2d(s, padding, d):
    x = rng.standard_normal((2, 6, 5, 3))
    dw, pw = rng.standard_normal((3, 3, 3, 2)), rng.standard_normal((1, 1, 6, 4))

    def ref(a, b, c):
        return conv_ref(conv_ref(a, _depthwise_as_dense(b), s, padding, d), c, (1, 1), "VALID")

    check_op(lambda a, b, c: tf.nn.separable_conv2d(a, b, c, [1, *s, 1], padding, dilations=d),
             [x, dw, pw], ref, atol=1e-5, grad_rtol=1e-4)  # fmt: skip
    with pytest.raises(ValueError, match="pointwise"):
        tf.nn.separable_conv2d(x, dw, np.ones((1, 1, 5, 4)), 1, padding)


@pytest.mark.parametrize("s,padding", [((1, 1), "SAME"), ((2, 2), "SAME"), ((2, 1), "VALID")])
def test_depthwise_backprops(s, padding):
    x, dw = rng.standard_normal((2, 6, 5, 3)), rng.standard_normal((3, 2, 3, 2))
    dense = _depthwise_as_dense(dw)
    dy = rng.standard_normal(conv_ref(x, dense, s, padding).shape)
    check_op(lambda a, b: tf.nn.depthwise_conv2d_backprop_input(x.shape, a, b, [1, *s, 1],
                                                                padding), [dw, dy],
             lambda a, b: conv_transpose_ref(b, _depthwise_as_dense(a), x.shape, s, padding),
             grad_rtol=1e-4)  # fmt: skip
    # The filter gradient is the gradient of <conv(x, w), dy> in w.
    with tf.GradientTape() as tape:
        w = tf.constant(dw)
        tape.watch(w)
        loss = tf.reduce_sum(tf.nn.depthwise_conv2d(x, w, [1, *s, 1], padding) * dy)
    want = tape.gradient(loss, w).numpy()
    got = tf.nn.depthwise_conv2d_backprop_filter(x, dw.shape, dy, [1, *s, 1], padding)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)
    check_op(lambda a, b: tf.nn.depthwise_conv2d_backprop_filter(a, dw.shape, b, [1, *s, 1],
                                                                 padding), [x, dy], None,
             grad_rtol=1e-4)  # fmt: skip


def test_conv2d_backprop_v2_ops():
    x, w = rng.standard_normal((2, 5, 6, 2)), rng.standard_normal((3, 3, 2, 4))
    dy = rng.standard_normal((2, 5, 6, 4))
    got = tf.conv2d_backprop_input_v2(x, w, dy, [1, 1, 1, 1], "SAME")
    np.testing.assert_allclose(got.numpy(), conv_transpose_ref(dy, w, x.shape, (1, 1), "SAME"),
                               atol=1e-8)  # fmt: skip
    with tf.GradientTape() as tape:
        wt = tf.constant(w)
        tape.watch(wt)
        loss = tf.reduce_sum(tf.nn.conv2d(x, wt, 1, [[0, 0], [0, 1], [1, 1], [0, 0]]) * dy[:, :4])
    want = tape.gradient(loss, wt).numpy()
    got = tf.conv2d_backprop_filter_v2(x, w, dy[:, :4], [1, 1, 1, 1], "EXPLICIT",
                                       explicit_paddings=[0, 0, 0, 1, 1, 1, 0, 0])  # fmt: skip
    np.testing.assert_allclose(got.numpy(), want, atol=1e-8)
    xc = np.moveaxis(x, -1, 1)
    got = tf.conv2d_backprop_input_v2(xc, w, np.moveaxis(dy, -1, 1), [1, 1, 1, 1], "SAME",
                                      data_format="NCHW")  # fmt: skip
    np.testing.assert_allclose(
        np.moveaxis(got.numpy(), 1, -1),
        conv_transpose_ref(dy, w, x.shape, (1, 1), "SAME"),
        atol=1e-8,
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels"):
        tf.conv2d_backprop_filter_v2(x, np.ones((3, 3, 3, 4)), dy, 1, "SAME")
