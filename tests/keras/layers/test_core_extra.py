"""Masking, Identity, ThresholdedReLU, SpectralNormalization (issue 11), checked against
tf_keras's definitions (numbers below computed by hand or with NumPy)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers


@pytest.mark.parametrize(
    "cls, kwargs",
    [(L.Masking, {"mask_value": 0.5}), (L.Identity, {}), (L.ThresholdedReLU, {"theta": 0.3})],
)
def test_harness(cls, kwargs):
    run_layer_test(cls, kwargs, input_shape=(2, 3, 4), expected_output_shape=(2, 3, 4))


def test_masking_zeroes_masked_steps_and_carries_the_mask():
    x = np.array([[[1.0, 2.0], [-1.0, -1.0], [0.0, 3.0]]], np.float32)
    y = L.Masking(mask_value=-1.0)(x)
    np.testing.assert_array_equal(y.numpy(), [[[1, 2], [0, 0], [0, 3]]])
    np.testing.assert_array_equal(y._keras_mask.numpy(), [[True, False, True]])
    symbolic = L.Masking()(tf.keras.Input((3, 2)))
    assert tuple(symbolic._keras_mask.shape) == (None, 3)
    assert L.Masking(mask_value=2.0).get_config()["mask_value"] == 2.0


def test_identity_returns_a_copy_of_each_input():
    a, b = tf.constant([1.0]), tf.constant([2.0])
    out = L.Identity()([a, b])
    assert [o.numpy().tolist() for o in out] == [[1.0], [2.0]]


def test_thresholded_relu_values_and_errors():
    out = L.ThresholdedReLU(theta=1.0)(tf.constant([-2.0, 0.5, 1.0, 1.5]))
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 0.0, 1.5])
    with pytest.raises(ValueError, match="cannot be None"):
        L.ThresholdedReLU(theta=None)
    with pytest.raises(ValueError, match=">=0"):
        L.ThresholdedReLU(theta=-1.0)


def test_spectral_normalization_power_iteration_matches_numpy():
    tf.keras.utils.set_random_seed(0)
    layer = L.SpectralNormalization(L.Dense(3), power_iterations=2)
    x = np.ones((2, 4), np.float32)
    layer(x)  # build
    w = layer.layer.kernel.numpy().copy()
    u = layer.vector_u.numpy().copy()
    for _ in range(2):  # tf_keras's normalize_weights, in NumPy
        v = u @ w.T
        v /= np.linalg.norm(v)
        u = v @ w
        u /= np.linalg.norm(u)
    sigma = (v @ w @ u.T).item()
    out = layer(x, training=True)
    np.testing.assert_allclose(layer.layer.kernel.numpy(), w / sigma, rtol=1e-5)
    np.testing.assert_allclose(layer.vector_u.numpy(), u, rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), x @ (w / sigma) + layer.layer.bias.numpy(), rtol=1e-5)
    for _ in range(30):
        layer(x, training=True)
    assert abs(np.linalg.svd(layer.layer.kernel.numpy(), compute_uv=False)[0] - 1.0) < 1e-3
    before = layer.layer.kernel.numpy()
    layer(x)  # inference leaves the kernel alone
    np.testing.assert_array_equal(layer.layer.kernel.numpy(), before)
    assert not layer.vector_u.trainable


def test_spectral_normalization_errors_and_config():
    with pytest.raises(ValueError, match="greater than zero"):
        L.SpectralNormalization(L.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="nor 'embeddings'"):
        L.SpectralNormalization(L.Flatten())(np.ones((1, 2, 2), np.float32))
    layer = L.SpectralNormalization(L.Dense(2), power_iterations=3)
    clone = L.SpectralNormalization.from_config(layer.get_config())
    assert clone.power_iterations == 3 and clone.layer.units == 2


def test_dense_features_is_absent_with_a_reason():
    with pytest.raises(AttributeError, match="feature_column"):
        tf.keras.layers.DenseFeatures  # noqa: B018
