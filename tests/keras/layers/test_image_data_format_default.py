"""Layers built with `data_format=None` follow `tf.keras.backend.image_data_format()`, as
tf_keras's do (`conv_utils.normalize_data_format`)."""

import numpy as np
import pytest

import layerflow as tf


@pytest.fixture
def channels_first():
    K = tf.keras.backend
    old = K.image_data_format()
    K.set_image_data_format("channels_first")
    try:
        yield
    finally:
        K.set_image_data_format(old)


@pytest.mark.parametrize(
    "make",
    [
        lambda: tf.keras.layers.Conv2D(2, 3),
        lambda: tf.keras.layers.MaxPooling2D(),
        lambda: tf.keras.layers.GlobalAveragePooling2D(),
        lambda: tf.keras.layers.ZeroPadding2D(1),
        lambda: tf.keras.layers.Flatten(),
    ],
)
def test_none_takes_the_global_format(channels_first, make):
    assert make().data_format == "channels_first"


def test_default_stays_channels_last():
    assert tf.keras.layers.Conv2D(2, 3).data_format == "channels_last"
    assert tf.keras.layers.Flatten().data_format == "channels_last"


def test_explicit_format_wins(channels_first):
    assert tf.keras.layers.Conv2D(2, 3, data_format="channels_last").data_format == "channels_last"


def test_conv_under_channels_first_reads_nchw(channels_first):
    layer = tf.keras.layers.Conv2D(4, 3, padding="same", use_bias=False)
    x = np.random.default_rng(0).random((2, 3, 5, 5), dtype=np.float32)
    y = layer(x)
    assert tuple(y.shape) == (2, 4, 5, 5)
    ref = tf.nn.conv2d(np.transpose(x, (0, 2, 3, 1)), layer.kernel, 1, "SAME")
    np.testing.assert_allclose(
        np.transpose(y.numpy(), (0, 2, 3, 1)), ref.numpy(), rtol=1e-5, atol=1e-6
    )
