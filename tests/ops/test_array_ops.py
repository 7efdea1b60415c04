"""concat along the channels of conv outputs (channels-first arrays behind NHWC views) joins
them as they lie and keeps that layout; values and gradients are those of np.concatenate."""

import numpy as np

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(2)


def _conv_output(x):
    """`x` (NHWC) differentiably as a conv output is laid out: 1x1 identity convolution."""
    c = x.shape[-1]
    return tf.nn.conv2d(x, tf.eye(c, dtype=x.dtype)[None, None], 1, "VALID")


def test_concat_of_channels_first_views_keeps_their_layout():
    xs = [rng.standard_normal((2, 3, 4, c)) for c in (2, 5, 1)]
    ys = [_conv_output(tf.constant(x)) for x in xs]
    assert all(np.moveaxis(y._data, -1, 0).flags.c_contiguous for y in ys)
    out = tf.concat(ys, axis=-1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(xs, axis=-1))
    assert np.moveaxis(out._data, -1, 0).flags.c_contiguous
    check_op(lambda a, b, c: tf.concat([_conv_output(a), _conv_output(b), _conv_output(c)], 3),
             xs, lambda a, b, c: np.concatenate([a, b, c], -1))  # fmt: skip


def test_concat_of_mixed_layouts_is_plain():
    a, b = rng.standard_normal((2, 3, 3, 2)), rng.standard_normal((2, 3, 3, 4))
    out = tf.concat([_conv_output(tf.constant(a)), tf.constant(b)], axis=3)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([a, b], axis=3))
    assert out._data.flags.c_contiguous
