"""tf.keras.applications.imagenet_utils: preprocess_input (modes caffe/tf/torch, NumPy and
tensors, both data formats) against tf_keras's outputs (fixtures/preprocess.json), and the
helpers' rules and errors as tf_keras has them."""

import hashlib
import json
import pathlib
import urllib.error
import urllib.request

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import imagenet_utils

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures/preprocess.json").read_text())
A = tf.keras.applications
MODE_CASES = [c for c in FIXTURE if "mode" in c]
MODULE_CASES = [c for c in FIXTURE if "module" in c]


def _case_id(c):
    return "-".join(str(c[k]) for k in ("mode", "data_format", "rank", "kind"))


@pytest.mark.parametrize("case", MODE_CASES, ids=[_case_id(c) for c in MODE_CASES])
def test_preprocess_input_matches_tf_keras(case):
    x = np.array(case["input"], dtype="float32")
    arg = x if case["kind"] == "numpy" else tf.constant(x)
    out = A.imagenet_utils.preprocess_input(arg, data_format=case["data_format"], mode=case["mode"])
    if case["kind"] == "numpy":
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
    else:
        assert out.dtype == tf.float32
        out = out.numpy()
    np.testing.assert_allclose(out, np.array(case["output"]), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("case", MODULE_CASES, ids=[c["module"] for c in MODULE_CASES])
def test_family_preprocess_input_of_uint8_images_matches_tf_keras(case):
    x = np.array(case["input"], dtype="uint8")
    out = getattr(A, case["module"]).preprocess_input(x.copy())
    np.testing.assert_allclose(np.asarray(out, "float64"), case["output"], rtol=1e-6, atol=1e-5)


def test_float_numpy_input_is_preprocessed_in_place_as_in_keras():
    x = np.full((1, 2, 2, 3), 255.0, dtype="float32")
    out = A.mobilenet.preprocess_input(x)
    assert out is x and np.all(x == 1.0)
    y = np.zeros((1, 1, 1, 3), dtype="float64")
    A.vgg16.preprocess_input(y)  # caffe: the BGR view of y is centred, so y changes too
    np.testing.assert_allclose(y[0, 0, 0], [-123.68, -116.779, -103.939])


def test_preprocess_input_in_a_functional_model():
    inputs = tf.keras.Input((2, 2, 3))
    model = tf.keras.Model(inputs, A.resnet50.preprocess_input(inputs))
    x = np.arange(12, dtype="float32").reshape(1, 2, 2, 3)
    expected = A.resnet50.preprocess_input(x.copy())
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-6)
    assert A.mobilenet_v3.preprocess_input(x) is x  # the model rescales itself


def test_preprocess_input_errors():
    with pytest.raises(ValueError, match="Expected mode to be one of `caffe`, `tf` or `torch`"):
        A.imagenet_utils.preprocess_input(np.zeros((1, 2, 2, 3)), mode="keras")
    with pytest.raises(ValueError, match="Expected data_format"):
        A.imagenet_utils.preprocess_input(np.zeros((1, 2, 2, 3)), data_format="NHWC")


@pytest.fixture
def class_index(keras_home, monkeypatch):
    """A 1000-class index in the Keras cache, accepted under its own hash; no network."""
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    data = json.dumps(index).encode()
    models = keras_home / "models"
    models.mkdir(parents=True)
    (models / "imagenet_class_index.json").write_bytes(data)
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX", None)
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX_HASH", hashlib.md5(data).hexdigest())
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)
    return models / "imagenet_class_index.json"


def _no_network(*args, **kwargs):
    raise urllib.error.URLError("network disabled in tests")


def test_decode_predictions_reads_the_cached_class_index(class_index):
    preds = np.zeros((2, 1000), dtype="float32")
    preds[0, [7, 3, 999]] = [0.5, 0.3, 0.2]
    preds[1, 42] = 1.0
    top = A.resnet50.decode_predictions(tf.constant(preds), top=3)
    assert [t[:2] for t in top[0]] == [("n00000007", "class_7"), ("n00000003", "class_3"),
                                       ("n00000999", "class_999")]  # fmt: skip
    assert [float(t[2]) for t in top[0]] == pytest.approx([0.5, 0.3, 0.2])
    assert top[1][0][:2] == ("n00000042", "class_42") and len(top[1]) == 3
    assert len(A.imagenet_utils.decode_predictions(preds)[0]) == 5


def test_decode_predictions_errors(class_index, monkeypatch):
    with pytest.raises(ValueError, match=r"shape \(samples, 1000\).*\(2, 10\)"):
        A.vgg16.decode_predictions(np.zeros((2, 10)))
    class_index.write_text(json.dumps({"0": ["n0", "x"]}))
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX_HASH", None)
    with pytest.raises(ValueError, match="does not map the class ids"):
        A.vgg16.decode_predictions(np.zeros((1, 1000)))
    class_index.unlink()
    with pytest.raises(FileNotFoundError, match="imagenet_class_index.json.*weights="):
        A.vgg16.decode_predictions(np.zeros((1, 1000)))


def test_obtain_input_shape_rules():
    ois = imagenet_utils.obtain_input_shape
    assert ois(None, 224, 32, "channels_last", require_flatten=False) == (None, None, 3)
    assert ois(None, 224, 32, "channels_first", require_flatten=False) == (3, None, None)
    assert ois(None, 299, 75, "channels_last", require_flatten=True) == (299, 299, 3)
    assert ois((64, 48, 3), 224, 32, "channels_last", True, weights=None) == (64, 48, 3)
    assert ois(None, 224, 32, "channels_last", True, weights="imagenet") == (224, 224, 3)
    with pytest.raises(ValueError, match="at least 32x32"):
        ois((31, 64, 3), 224, 32, "channels_last", False)
    with pytest.raises(ValueError, match="must have 3 channels"):
        ois((64, 64, 1), 224, 32, "channels_last", False, weights="imagenet")
    with pytest.raises(ValueError, match="tuple of three integers"):
        ois((64, 64), 224, 32, "channels_last", False)
    with pytest.raises(ValueError, match="static `input_shape`"):
        ois((None, 64, 3), 224, 32, "channels_last", True)
    with pytest.warns(UserWarning, match="1 or 3 input channels"):
        assert ois((64, 64, 5), 224, 32, "channels_last", False) == (64, 64, 5)


def test_correct_pad_and_validate_activation():
    assert imagenet_utils.correct_pad(tf.keras.Input((32, 32, 8)), 3) == ((0, 1), (0, 1))
    assert imagenet_utils.correct_pad(tf.keras.Input((33, 32, 8)), (5, 3)) == ((2, 2), (0, 1))
    assert imagenet_utils.correct_pad(tf.keras.Input((None, None, 8)), 3) == ((0, 1), (0, 1))
    imagenet_utils.validate_activation("relu", None)
    imagenet_utils.validate_activation(None, "imagenet")
    with pytest.raises(ValueError, match="Only `None` and `softmax`"):
        imagenet_utils.validate_activation("sigmoid", "imagenet")


@pytest.mark.parametrize("family", ["VGG16", "EfficientNetB0"])
def test_non_tensor_input_tensor_is_refused_as_in_tf_keras(family):
    # tf_keras checks `input_tensor` with `backend.is_keras_tensor`: every family (classic or
    # modern) raises its ValueError for an array, before building anything.
    array = np.zeros((1, 32, 32, 3), "float32")
    with pytest.raises(ValueError, match="Expected a symbolic tensor instance"):
        getattr(tf.keras.applications, family)(weights=None, include_top=False,
                                               input_tensor=array)  # fmt: skip
    inp = tf.keras.Input((32, 32, 3))
    model = getattr(tf.keras.applications, family)(weights=None, include_top=False,
                                                   input_tensor=inp)  # fmt: skip
    assert model.inputs[0] is inp
