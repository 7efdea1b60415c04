"""Pretrained-weight loading of tf.keras.applications: files tf_keras wrote (Keras 2 HDF5, as
the published ImageNet files are) load and give tf_keras's outputs; "imagenet" reads the Keras
cache and never downloads in a test; every failure names the file and the fix."""

import pathlib
import sys
import urllib.error
import urllib.request

import h5py
import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.saving.weights_file import WeightsFileError

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from app_configs import FORWARD  # noqa: E402

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
A = tf.keras.applications


@pytest.fixture
def offline(monkeypatch):
    """No network: any download attempt fails at once, and is recorded."""
    attempts = []

    def refuse(url, *args, **kwargs):
        attempts.append(getattr(url, "full_url", url))
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return attempts


@pytest.mark.parametrize("key", sorted(FORWARD))
def test_tf_keras_weights_give_tf_keras_outputs(key, offline):
    ctor, kwargs = FORWARD[key]
    arrays = np.load(FIXTURES / "forward.npz")
    tf.keras.backend.clear_session()
    model = getattr(A, ctor)(weights=str(FIXTURES / f"forward_{key}.h5"), **kwargs)
    module = {"MobileNet": A.mobilenet, "MobileNetV3Small": A.mobilenet_v3}[ctor]
    x = module.preprocess_input(arrays[f"{key}_x"].copy())
    got = model.predict(x, verbose=0)
    np.testing.assert_allclose(got, arrays[f"{key}_y"], rtol=1e-4, atol=1e-4)
    # A wrong-size random model gives other outputs: the check above can fail.
    other = getattr(A, ctor)(weights=None, **kwargs)
    assert not np.allclose(other.predict(x, verbose=0), arrays[f"{key}_y"], atol=1e-3)
    assert offline == []


def test_tf_keras_weights_into_another_architecture_fail_and_assign_nothing(offline):
    model = A.MobileNet(input_shape=(32, 32, 3), alpha=0.25, classes=3, weights=None)
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(WeightsFileError, match="forward_mobilenet.h5") as info:
        imagenet_utils.load_model_weights(model, str(FIXTURES / "forward_mobilenet.h5"))
    assert "has shape" in str(info.value) and "Nothing was assigned" in str(info.value)
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, model.weights))


def _write_keras2_weights(model, path):
    """Keras 2's weights-only HDF5 layout (tf_keras `save_weights("w.h5")`)."""
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = np.array([layer.name.encode() for layer in model.layers])
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.21.0"
        for layer in model.layers:
            group = f.create_group(layer.name)
            weights = list(layer.trainable_weights) + list(layer.non_trainable_weights)
            names = [f"{layer.name}/{w.name.split('/')[-1]}" for w in weights]
            group.attrs["weight_names"] = np.array([n.encode() for n in names])
            for name, w in zip(names, weights):
                group.create_dataset(name, data=w.numpy())


def test_imagenet_weights_load_from_the_keras_cache_without_downloading(keras_home, offline):
    # MobileNet's files have no published hash, so a file put in the cache is used as it is.
    source = A.MobileNet(input_shape=(128, 128, 3), alpha=0.25, include_top=False, weights=None)
    rng = np.random.default_rng(0)
    for w in source.weights:
        w.assign(rng.normal(0, 0.1, w.shape).astype("float32"))
    models = keras_home / "models"
    models.mkdir(parents=True)
    _write_keras2_weights(source, models / "mobilenet_2_5_128_tf_no_top.h5")
    tf.keras.backend.clear_session()
    model = A.MobileNet(input_shape=(128, 128, 3), alpha=0.25, include_top=False)
    for a, b in zip(source.weights, model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert model.name == "mobilenet_0.25_128"
    assert offline == []


def test_missing_imagenet_file_names_the_file_and_the_fix(keras_home, offline):
    with pytest.raises(FileNotFoundError) as info:
        A.ResNet50(weights="imagenet", include_top=False, input_shape=(32, 32, 3))
    message = str(info.value)
    assert "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5" in message
    assert str(keras_home / "models") in message
    assert "weights='/path/to/file.h5'" in message
    assert offline == [
        "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
        "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5"
    ]


def test_cached_file_with_the_wrong_hash_is_not_used(keras_home, offline):
    models = keras_home / "models"
    models.mkdir(parents=True)
    bad = models / "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5"
    bad.write_bytes(b"not the published file")
    with pytest.raises(FileNotFoundError, match="hash"):
        A.VGG16(weights="imagenet", include_top=False, input_shape=(32, 32, 3))
    assert len(offline) == 1  # tried to fetch the right file once, then reported


def test_weights_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="`weights` argument should be either"):
        A.VGG16(weights=str(tmp_path / "absent.h5"))
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        A.DenseNet121(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="Only `None` and `softmax`"):
        A.ResNet50V2(weights="imagenet", classifier_activation="relu")
    with pytest.raises(ValueError, match="Unknown argument"):
        A.ResNet50(weights=None, include_top=False, colour="red")
    with pytest.raises(ValueError, match="alpha can be one of"):
        A.MobileNet(weights="imagenet", alpha=0.3)
    with pytest.raises(ValueError, match="alpha must be one of"):
        A.MobileNetV2(weights="imagenet", alpha=0.3)
    with pytest.raises(ValueError, match="alpha can be one of"):
        A.MobileNetV3Small(weights="imagenet", alpha=0.5)
    with pytest.raises(ValueError, match="depth multiplier must be 1"):
        A.MobileNet(weights="imagenet", depth_multiplier=2)
    with pytest.raises(ValueError, match="must be static"):
        A.NASNetMobile(weights="imagenet", input_shape=(None, None, 3), include_top=False)
