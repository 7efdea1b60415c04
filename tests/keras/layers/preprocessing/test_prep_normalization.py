"""Normalization and Rescaling/Resizing/CenterCrop: values against NumPy and real TF fixtures,
adapt on arrays and Datasets, configs, models and tf.data."""

import os

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "preprocessing_tf.npz"))
RNG = np.random.default_rng(0)


def test_normalization_adapt_array_matches_numpy_moments():
    x = (RNG.standard_normal((100, 3)) * [1, 2, 3] + [4, 5, 6]).astype("float32")
    layer = L.Normalization()
    layer.adapt(x)  # 4 batches of 32, combined exactly
    np.testing.assert_allclose(layer.mean.numpy().ravel(), x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(layer.variance.numpy().ravel(), x.var(0), rtol=1e-5)
    assert int(layer.count.numpy()) == 100
    y = layer(x).numpy()
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(y.std(0), 1, rtol=1e-4)
    assert layer.is_adapted


def test_normalization_adapt_dataset_and_axis():
    x = RNG.standard_normal((20, 4, 5)).astype("float32") + np.arange(4)[:, None]
    ds = tf.data.Dataset.from_tensor_slices(x).batch(7)
    layer = L.Normalization(axis=1)
    layer.adapt(ds)
    np.testing.assert_allclose(layer.mean.numpy().ravel(), x.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.variance.numpy().ravel(), x.var((0, 2)), rtol=1e-5)
    assert layer.mean.shape == (1, 4, 1)
    both = L.Normalization(axis=(1, 2))
    both.adapt(x, batch_size=3, steps=2)  # only the first 6 rows
    np.testing.assert_allclose(both.mean.numpy()[0], x[:6].mean(0), rtol=1e-5, atol=1e-6)
    scalar = L.Normalization(axis=None)
    scalar.adapt(x)
    np.testing.assert_allclose(float(scalar.mean.numpy().ravel()[0]), x.mean(), rtol=1e-5)


def test_normalization_given_mean_invert_and_docstring_values():
    layer = L.Normalization(mean=3.0, variance=2.0)
    np.testing.assert_allclose(
        layer(np.array([[1.0], [2.0], [3.0]], "float32")).numpy().ravel(),
        [-1.4142135, -0.70710677, 0.0], rtol=1e-6,
    )  # fmt: skip
    assert layer.weights == []
    adapt_data = np.array([[0, 7, 4], [2, 9, 6], [0, 7, 4], [2, 9, 6]], "float32")
    inv = L.Normalization(axis=-1, invert=True)
    inv.adapt(adapt_data)
    np.testing.assert_allclose(inv(np.array([[1.0, 2.0, 3.0]], "float32")).numpy(), [[2, 10, 8]])
    per_feature = L.Normalization(mean=[1.0, 2.0], variance=[4.0, 1.0])
    np.testing.assert_allclose(per_feature(np.array([[3, 3]], "int64")).numpy(), [[1.0, 1.0]])


def test_normalization_errors_name_the_layer():
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="Cannot `adapt`"):
        L.Normalization(mean=1.0, variance=1.0).adapt(np.ones((2, 1)))
    layer = L.Normalization(axis=3, name="norm_bad")
    with pytest.raises(ValueError, match="norm_bad.*range"):
        layer(np.ones((2, 3), "float32"))
    layer = L.Normalization(name="norm_ds")
    with pytest.raises(ValueError, match="norm_ds.*features only"):
        layer.adapt(tf.data.Dataset.from_tensor_slices((np.ones((4, 2)), np.ones(4))).batch(2))
    with pytest.raises(ValueError, match="empty"):
        L.Normalization().adapt(np.ones((0, 2), "float32"))


def test_normalization_config_keras_file_and_models(tmp_path):
    x = RNG.standard_normal((40, 3)).astype("float32") * 3 + 1
    layer = L.Normalization()
    layer.adapt(x)
    out = run_layer_test(L.Normalization, {"mean": [1.0, 2.0, 3.0], "variance": [1.0, 4.0, 9.0]},
                         input_shape=(2, 3), expected_output_shape=(2, 3))  # fmt: skip
    assert out.shape == (2, 3)
    model = tf.keras.Sequential([tf.keras.Input((3,)), layer, L.Dense(2)])
    ref = model.predict(x, verbose=0)
    path = str(tmp_path / "norm.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), ref, rtol=1e-5, atol=1e-6)
    inp = tf.keras.Input((3,))
    fmodel = tf.keras.Model(inp, L.Normalization(mean=0.0, variance=4.0)(inp))
    np.testing.assert_allclose(fmodel(np.ones((1, 3), "float32")).numpy(), 0.5)
    ds = tf.data.Dataset.from_tensor_slices(x).batch(8).map(layer)
    np.testing.assert_allclose(np.concatenate([b.numpy() for b in ds]), layer(x).numpy())


def test_rescaling_casts_uint8_and_round_trips():
    out = run_layer_test(L.Rescaling, {"scale": 0.5, "offset": -1.0}, input_shape=(2, 3))
    assert out.dtype == tf.float32
    got = L.Rescaling(1 / 127.5, offset=-1)(tf.constant([[0, 255]], tf.uint8)).numpy()
    np.testing.assert_allclose(got, [[-1, 1]])


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic", "area", "lanczos3",
                                    "lanczos5", "gaussian", "mitchellcubic"])  # fmt: skip
def test_image_resize_matches_tensorflow(method):
    img = FIX["resize_input"]
    for key in FIX.files:
        if key.startswith(f"resize_{method}_"):
            h, w = map(int, key.split("_")[-1].split("x"))
            got = tf.image.resize(img, (h, w), method=method)
            assert got.dtype == tf.float32
            np.testing.assert_allclose(got.numpy(), FIX[key], atol=2e-5, err_msg=key)
            layer = L.Resizing(h, w, interpolation=method)
            np.testing.assert_allclose(layer(img).numpy(), FIX[key], atol=2e-5, err_msg=key)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
def test_resize_gradients(method):
    x = RNG.standard_normal((1, 3, 4, 1))
    xt = tf.constant(x.astype("float32"))
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(tf.image.resize(xt, (5, 3), method=method) * np.arange(15.0).reshape(
            1, 5, 3, 1).astype("float32"))  # fmt: skip
    g = tape.gradient(y, xt).numpy()
    eps, num = 1e-2, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        fp = tf.image.resize((x + d).astype("float32"), (5, 3), method=method).numpy()
        fm = tf.image.resize((x - d).astype("float32"), (5, 3), method=method).numpy()
        num[idx] = ((fp - fm) * np.arange(15.0).reshape(1, 5, 3, 1)).sum() / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-3, atol=1e-3)


def test_resizing_crop_to_aspect_ratio_and_center_crop_match_tf():
    img = FIX["resize_input"]
    for key in FIX.files:
        if key.startswith("resizing_crop_"):
            method, size = key.split("_")[2:]
            h, w = map(int, size.split("x"))
            got = L.Resizing(h, w, interpolation=method, crop_to_aspect_ratio=True)(img)
            np.testing.assert_allclose(got.numpy(), FIX[key], atol=2e-5, err_msg=key)
        if key.startswith("center_crop_"):
            h, w = map(int, key.split("_")[-1].split("x"))
            np.testing.assert_allclose(L.CenterCrop(h, w)(img).numpy(), FIX[key], atol=2e-5,
                                       err_msg=key)  # fmt: skip


def test_image_layers_contract_and_errors():
    # tf.image.resize computes in float32 (TF's rule), too coarse for float64 differences;
    # test_resize_gradients checks its gradient in float32.
    run_layer_test(L.Resizing, {"height": 3, "width": 2}, input_shape=(2, 4, 5, 1),
                   expected_output_shape=(2, 3, 2, 1), check_gradients_=False)  # fmt: skip
    run_layer_test(L.CenterCrop, {"height": 2, "width": 3}, input_shape=(2, 4, 5, 1),
                   expected_output_shape=(2, 2, 3, 1))  # fmt: skip
    inp = tf.keras.Input((8, 8, 3))
    model = tf.keras.Model(inp, L.CenterCrop(4, 4)(L.Resizing(6, 6)(inp)))
    assert model.output_shape == (None, 4, 4, 3)
    assert model(np.ones((2, 8, 8, 3), "float32")).shape == (2, 4, 4, 3)
    with pytest.raises(ValueError, match="resizer.*rank 3"):
        L.Resizing(2, 2, name="resizer")(np.ones((2, 3), "float32"))
    with pytest.raises(NotImplementedError, match="interpolation"):
        L.Resizing(2, 2, interpolation="cubic")
    with pytest.raises(ValueError, match="height must be a positive int"):
        L.CenterCrop(0, 2)
    with pytest.raises(ValueError, match="unknown method"):
        tf.image.resize(np.ones((2, 2, 1)), (3, 3), method="spline")


def test_experimental_preprocessing_aliases_and_serialization():
    exp = tf.keras.layers.experimental.preprocessing
    for name in ("Normalization", "Rescaling", "Resizing", "CenterCrop", "Discretization",
                 "CategoryEncoding", "Hashing", "HashedCrossing", "IntegerLookup", "RandomFlip",
                 "RandomRotation", "RandomZoom", "RandomCrop", "RandomTranslation",
                 "RandomContrast", "RandomHeight", "RandomWidth"):  # fmt: skip
        assert getattr(exp, name) is getattr(L, name)
    assert issubclass(L.Normalization, exp.PreprocessingLayer)
    for layer in (L.Normalization(mean=1.0, variance=2.0), L.RandomZoom(0.1, seed=3),
                  L.Hashing(4, salt=5), L.IntegerLookup(vocabulary=[3, 4])):  # fmt: skip
        clone = L.deserialize(L.serialize(layer))
        assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
