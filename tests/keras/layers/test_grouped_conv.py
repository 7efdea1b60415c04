"""`Conv1D/Conv2D(groups=g)`: Keras 2's grouped convolution, checked against a composition of
plain convolutions (one per group) for values and gradients."""

import numpy as np
import pytest

import layerflow as tf


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


def _reference(x, kernel, bias, groups, conv):
    """Group g of the input channels convolved with group g of the filters, then joined."""
    xs = tf.split(x, groups, axis=-1)
    ks = tf.split(kernel, groups, axis=-1)
    return tf.concat([conv(a, k) for a, k in zip(xs, ks)], axis=-1) + bias


@pytest.mark.parametrize(
    "make, shape, conv",
    [
        (
            lambda: tf.keras.layers.Conv2D(6, 3, strides=2, padding="same", groups=3),
            (2, 7, 7, 9),
            lambda a, k: tf.nn.conv2d(a, k, 2, "SAME"),
        ),
        (
            lambda: tf.keras.layers.Conv2D(4, (2, 3), dilation_rate=2, groups=2),
            (1, 8, 9, 4),
            lambda a, k: tf.nn.conv2d(a, k, 1, "VALID", dilations=2),
        ),
        (
            lambda: tf.keras.layers.Conv1D(8, 3, groups=4),
            (3, 10, 4),
            lambda a, k: tf.nn.conv1d(a, k, 1, "VALID"),
        ),
    ],
    ids=["conv2d-stride", "conv2d-dilated", "conv1d"],
)
def test_grouped_conv_matches_plain_convolutions_values_and_gradients(make, shape, conv):
    layer = make()
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal(shape).astype(np.float64))
    layer = type(layer).from_config({**layer.get_config(), "dtype": "float64"})
    layer.build(x.shape)
    layer.bias.assign(rng.standard_normal(layer.bias.shape))
    groups = layer.groups
    assert layer.kernel.shape[-2] == shape[-1] // groups  # in-channels per group
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out = layer(x)
        ref = _reference(x, layer.kernel, layer.bias, groups, conv)
        weights = tf.constant(rng.standard_normal(out.shape))
        loss, loss_ref = tf.reduce_sum(out * weights), tf.reduce_sum(ref * weights)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    for source in (x, layer.kernel, layer.bias):
        np.testing.assert_allclose(
            tape.gradient(loss, source).numpy(),
            tape.gradient(loss_ref, source).numpy(),
            rtol=1e-12,
            atol=1e-12,
        )


def test_groups_one_is_a_plain_convolution_and_output_shape_is_known():
    layer = tf.keras.layers.Conv2D(4, 3, groups=2)
    out = layer(tf.keras.Input((5, 5, 6)))
    assert out.shape == (None, 3, 3, 4)
    assert layer.kernel.shape == (3, 3, 3, 4)
    assert tf.keras.layers.Conv2D(4, 3).groups == 1


def test_groups_round_trip_through_config():
    layer = tf.keras.layers.Conv2D(4, 3, groups=2, name="g")
    clone = tf.keras.layers.Conv2D.from_config(layer.get_config())
    assert clone.groups == 2


def test_groups_must_divide_filters_and_input_channels():
    with pytest.raises(ValueError, match=r"filters \(4\) must be divisible .* groups \(3\)"):
        tf.keras.layers.Conv2D(4, 3, groups=3)
    layer = tf.keras.layers.Conv2D(4, 3, groups=2)
    with pytest.raises(ValueError, match=r"input channels \(3\) must be divisible .* groups \(2\)"):
        layer(tf.ones((1, 5, 5, 3)))
    assert not layer.built and layer.weights == []
    with pytest.raises(ValueError, match="groups"):
        tf.keras.layers.Conv2D(4, 3, groups=-1)
    with pytest.raises(ValueError, match="groups"):
        tf.keras.layers.Conv2D(4, 3, groups=1.5)


def test_groups_zero_or_none_is_one_group_as_in_tf_keras():
    # tf_keras stores `groups or 1`; RegNetX080 (group width 120 > 80 filters) depends on it.
    for groups in (0, None):
        layer = tf.keras.layers.Conv2D(4, 3, groups=groups)
        assert layer.groups == 1
        assert layer(tf.ones((1, 5, 5, 3))).shape == (1, 3, 3, 4)
        assert tuple(layer.kernel.shape) == (3, 3, 3, 4)
