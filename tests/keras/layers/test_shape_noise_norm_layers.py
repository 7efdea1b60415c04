"""Shape, noise and normalization layers: run_layer_test, their values against NumPy, training-
only randomness with the right statistics, configs and errors."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
RNG = np.random.default_rng(0)

CASES = [
    (L.UpSampling1D, {"size": 3}, (2, 3, 4), [2, 9, 4]),
    (L.UpSampling2D, {"size": (2, 3)}, (2, 3, 2, 2), [2, 6, 6, 2]),
    (L.UpSampling2D, {"size": 2, "interpolation": "bilinear"}, (1, 3, 2, 2), [1, 6, 4, 2]),
    (L.UpSampling2D, {"size": (1, 2), "data_format": "channels_first"}, (1, 2, 3, 2),
     [1, 2, 3, 4]),
    (L.UpSampling3D, {"size": (1, 2, 2)}, (1, 2, 2, 2, 2), [1, 2, 4, 4, 2]),
    (L.ZeroPadding1D, {"padding": (1, 2)}, (2, 3, 4), [2, 6, 4]),
    (L.ZeroPadding3D, {"padding": 1}, (1, 2, 2, 2, 2), [1, 4, 4, 4, 2]),
    (L.ZeroPadding3D, {"padding": (1, 0, 2), "data_format": "channels_first"}, (1, 2, 2, 2, 2),
     [1, 2, 4, 2, 6]),
    (L.Cropping1D, {"cropping": (1, 2)}, (2, 5, 3), [2, 2, 3]),
    (L.Cropping2D, {"cropping": ((1, 0), (0, 2))}, (2, 4, 5, 3), [2, 3, 3, 3]),
    (L.Cropping3D, {"cropping": 1}, (1, 3, 4, 5, 2), [1, 1, 2, 3, 2]),
    (L.GaussianNoise, {"stddev": 0.3}, (2, 3), [2, 3]),
    (L.GaussianDropout, {"rate": 0.3}, (2, 3), [2, 3]),
    (L.AlphaDropout, {"rate": 0.3}, (2, 3), [2, 3]),
    (L.SpatialDropout1D, {"rate": 0.3}, (2, 3, 4), [2, 3, 4]),
    (L.SpatialDropout2D, {"rate": 0.3}, (2, 3, 3, 4), [2, 3, 3, 4]),
    (L.SpatialDropout3D, {"rate": 0.3, "data_format": "channels_first"}, (1, 2, 2, 2, 2),
     [1, 2, 2, 2, 2]),
    (L.ActivityRegularization, {"l1": 0.1, "l2": 0.01}, (2, 3), [2, 3]),
    (L.GroupNormalization, {"groups": 2}, (2, 3, 4), [2, 3, 4]),
    (L.GroupNormalization, {"groups": 3, "axis": 1, "center": False}, (2, 6), [2, 6]),
    (L.UnitNormalization, {}, (2, 5), [2, 5]),
    (L.UnitNormalization, {"axis": [1, 2]}, (2, 3, 4), [2, 3, 4]),
]  # fmt: skip


@pytest.mark.parametrize("cls,kwargs,shape,expected", CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, *_) in enumerate(CASES)])  # fmt: skip
def test_layer_contract(cls, kwargs, shape, expected):
    run_layer_test(cls, kwargs, input_shape=shape, expected_output_shape=expected)


def test_upsampling_and_padding_values():
    x = np.arange(12, dtype="float32").reshape(1, 2, 3, 2)
    np.testing.assert_array_equal(L.UpSampling2D((2, 2))(x).numpy(),
                                  x.repeat(2, axis=1).repeat(2, axis=2))  # fmt: skip
    y = np.arange(6, dtype="float32").reshape(1, 3, 2)
    np.testing.assert_array_equal(L.UpSampling1D(2)(y).numpy(), y.repeat(2, axis=1))
    np.testing.assert_array_equal(L.ZeroPadding1D((1, 2))(y).numpy(),
                                  np.pad(y, ((0, 0), (1, 2), (0, 0))))  # fmt: skip
    np.testing.assert_array_equal(L.Cropping1D((1, 1))(y).numpy(), y[:, 1:2])
    # bilinear along one axis of 2 values, scale 2 (TF's half-pixel centres): a, .75a+.25b, ...
    z = np.array([0.0, 4.0], "float32").reshape(1, 2, 1, 1)
    up = L.UpSampling2D((2, 1), interpolation="bilinear")(z).numpy().ravel()
    np.testing.assert_allclose(up, [0.0, 1.0, 3.0, 4.0])


def test_shape_layer_errors():
    with pytest.raises(NotImplementedError, match="not supported yet"):
        L.UpSampling2D(interpolation="bicubic")
    with pytest.raises(NotImplementedError, match="not recognized"):
        L.UpSampling2D(interpolation="cubic-ish")
    with pytest.raises(ValueError, match="size"):
        L.UpSampling3D(size=(2, 0, 1))
    with pytest.raises(ValueError, match="padding"):
        L.ZeroPadding3D(padding=(1, 2))
    with pytest.raises(ValueError, match="cropping"):
        L.Cropping2D(cropping=-1)
    with pytest.raises(ValueError, match="leaves nothing"):
        L.Cropping1D((2, 3))(tf.ones((1, 5, 2)))
    with pytest.raises(ValueError, match="data_format"):
        L.Cropping3D(data_format="nhwc")


def test_noise_layers_are_identity_outside_training():
    x = RNG.standard_normal((4, 5)).astype("float32")
    for layer in (L.GaussianNoise(1.0), L.GaussianDropout(0.5), L.AlphaDropout(0.5)):
        np.testing.assert_array_equal(layer(x).numpy(), x)
        np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
        assert not np.allclose(layer(x, training=True).numpy(), x)


def test_noise_statistics_in_training():
    x = np.ones((200, 500), "float32")
    d = L.GaussianNoise(0.5)(x, training=True).numpy() - 1.0
    assert abs(d.mean()) < 0.01 and abs(d.std() - 0.5) < 0.01
    g = L.GaussianDropout(0.2)(x, training=True).numpy()
    assert abs(g.mean() - 1.0) < 0.01 and abs(g.std() - np.sqrt(0.2 / 0.8)) < 0.01
    n = RNG.standard_normal((200, 500)).astype("float32")
    a = L.AlphaDropout(0.2)(n, training=True).numpy()
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1.0) < 0.02  # self-normalizing
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    scale = ((1 - 0.2) * (1 + 0.2 * alpha_p**2)) ** -0.5
    dropped = np.isclose(a, scale * alpha_p - scale * alpha_p * 0.2, atol=1e-5)
    assert abs(dropped.mean() - 0.2) < 0.01


@pytest.mark.parametrize(
    "layer,shape,channel_axis",
    [
        (L.SpatialDropout1D(0.5), (50, 6, 8), 2),
        (L.SpatialDropout2D(0.5), (50, 3, 3, 8), 3),
        (L.SpatialDropout2D(0.5, data_format="channels_first"), (50, 8, 3, 3), 1),
        (L.SpatialDropout3D(0.5), (20, 2, 2, 2, 8), 4),
    ],
)
def test_spatial_dropout_drops_whole_channels(layer, shape, channel_axis):
    y = layer(np.ones(shape, "float32"), training=True).numpy()
    other = tuple(a for a in range(1, len(shape)) if a != channel_axis)
    lo, hi = y.min(axis=other), y.max(axis=other)
    np.testing.assert_array_equal(lo, hi)  # one decision per (sample, channel)
    assert set(np.unique(lo)) == {0.0, 2.0}
    np.testing.assert_array_equal(layer(np.ones(shape, "float32")).numpy(), 1.0)


def test_activity_regularization_adds_the_loss():
    layer = L.ActivityRegularization(l1=0.1, l2=0.2)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    assert len(layer.losses) == 1
    np.testing.assert_allclose(float(layer.losses[0]), (0.1 * 15 + 0.2 * 55) / 2, rtol=1e-6)
    assert layer.get_config()["l1"] == 0.1 and "activity_regularizer" not in layer.get_config()


def test_group_normalization_values_and_errors():
    x = RNG.standard_normal((3, 5, 6)).astype("float64")
    y = L.GroupNormalization(groups=3, epsilon=1e-5, dtype="float64")(x).numpy()
    g = x.reshape(3, 5, 3, 2)
    want = (g - g.mean(axis=(1, 3), keepdims=True)) / np.sqrt(
        g.var(axis=(1, 3), keepdims=True) + 1e-5
    )
    np.testing.assert_allclose(y, want.reshape(3, 5, 6), rtol=1e-10)
    with pytest.raises(ValueError, match="multiple of the number of groups"):
        L.GroupNormalization(groups=4)(tf.ones((1, 6)))
    with pytest.raises(ValueError, match="cannot be more than"):
        L.GroupNormalization(groups=8)(tf.ones((1, 6)))
    with pytest.raises(ValueError, match="groups must be a positive int"):
        L.GroupNormalization(groups=0)
    layer = L.GroupNormalization(groups=-1)
    layer(tf.ones((1, 4)))
    assert layer.groups == 4  # Keras 2 reports the resolved count


def test_unit_normalization_values():
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    y = L.UnitNormalization(axis=[1, 2])(x).numpy()
    np.testing.assert_allclose(np.sqrt((y**2).sum(axis=(1, 2))), 1.0, rtol=1e-6)
    with pytest.raises(TypeError, match="axis must be an int"):
        L.UnitNormalization(axis="last")


def test_group_normalization_on_a_middle_axis():
    run_layer_test(L.GroupNormalization, {"groups": 3, "axis": 1}, input_shape=(2, 6, 2),
                   check_input_spec=False)  # fmt: skip


BUILT_INS = [
    L.MultiHeadAttention(2, 3), L.EinsumDense("ab,bc->ac", 3), L.Attention(causal=True),
    L.AdditiveAttention(use_scale=False), L.Dot(axes=(1, 2)), L.GroupNormalization(4),
    L.UnitNormalization([1]), L.UpSampling1D(3), L.UpSampling2D(interpolation="bilinear"),
    L.UpSampling3D(1), L.ZeroPadding1D(2), L.ZeroPadding3D(2), L.Cropping1D(2),
    L.Cropping2D(2), L.Cropping3D(2), L.GaussianNoise(0.1), L.GaussianDropout(0.1),
    L.AlphaDropout(0.1), L.SpatialDropout1D(0.1), L.SpatialDropout2D(0.1),
    L.SpatialDropout3D(0.1, data_format="channels_first"), L.ActivityRegularization(0.1),
]  # fmt: skip


@pytest.mark.parametrize("layer", BUILT_INS, ids=[type(x).__name__ for x in BUILT_INS])
def test_built_in_layers_deserialize_by_name(layer):
    config = tf.keras.layers.serialize(layer)
    assert config["class_name"] == type(layer).__name__
    again = tf.keras.layers.deserialize(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
