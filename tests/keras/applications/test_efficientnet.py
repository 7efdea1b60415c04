"""EfficientNet B0-B7 against tf_keras 2.21 (fixtures/modern_efficientnet*, written by
fixtures/make_modern_oracles.py): structure of every constructor, errors, a tiny configuration's
forward pass with tf_keras's weights, and the ImageNet-only rescaling layer."""

import pathlib
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import efficientnet

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import modern_oracles as mo  # noqa: E402
from modern_oracles import zero_weights  # noqa: E402, F401

FAMILY = "efficientnet"


@pytest.mark.usefixtures("zero_weights")
@pytest.mark.parametrize("entry", mo.structure_cases(FAMILY, slow=set()))
def test_structure_matches_tf_keras(entry):
    model = mo.build_case(tf.keras.applications, entry)
    mo.assert_same_structure(mo.structure(model), entry["structure"])


@pytest.mark.parametrize("key", sorted(mo.oracle(FAMILY)["errors"]))
def test_errors_match_tf_keras(key):
    mo.check_error(tf.keras.applications, FAMILY, key)


def test_tiny_forward_matches_tf_keras_with_its_weights_file():
    model = mo.check_tiny_forward(efficientnet.EfficientNet, FAMILY, 0)
    # the stem Normalization is not adapted: its mean/variance/count come from the file
    norm = model.get_layer("normalization")
    assert [w.name for w in norm.weights] == [
        "normalization/mean:0",
        "normalization/variance:0",
        "normalization/count:0",
    ]
    assert int(norm.weights[2].numpy()) == 5


def test_real_initializers_and_a_training_step():
    tf.keras.backend.clear_session()
    kwargs = {**mo.kwargs_of(mo.tiny_meta(FAMILY)[0]), "classes": 3}
    model = efficientnet.EfficientNet(**kwargs)
    kernel = model.get_layer("top_conv").kernel.numpy()  # 1x1, 32 -> 128 filters
    # VarianceScaling(2.0, fan_out, truncated_normal): std = sqrt(2 / fan_out) / .8796 before
    # truncation at 2 std, which leaves sqrt(2 / fan_out)
    assert kernel.shape == (1, 1, 32, 128)
    assert abs(kernel.std() - np.sqrt(2.0 / 128)) < 0.1 * np.sqrt(2.0 / 128)
    dense = model.get_layer("predictions").kernel.numpy()  # uniform, limit sqrt(3 * 1/3 / 3)
    assert np.abs(dense).max() <= np.sqrt(1.0 / 3) + 1e-6
    model.compile("sgd", "sparse_categorical_crossentropy")
    x = np.random.default_rng(0).uniform(0, 255, (4, 32, 32, 3)).astype("float32")
    history = model.fit(x, np.array([0, 1, 2, 0]), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert model.predict(x, verbose=0).shape == (4, 3)


def test_imagenet_weights_add_the_stddev_multiply_and_never_download(tmp_path, monkeypatch):
    from layerflow._src.keras.applications import imagenet_utils

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    asked = []

    def offline(fname, origin, **kwargs):
        asked.append((fname, origin))
        raise OSError("no network in tests")

    monkeypatch.setattr(imagenet_utils, "get_file", offline)
    tf.keras.backend.clear_session()
    with pytest.raises(FileNotFoundError, match="efficientnetb0_notop.h5") as info:
        tf.keras.applications.EfficientNetB0(include_top=False, input_shape=(32, 32, 3))
    assert str(tmp_path / "models" / "efficientnetb0_notop.h5") in str(info.value)
    assert asked == [
        (
            "efficientnetb0_notop.h5",
            "https://storage.googleapis.com/keras-applications/efficientnetb0_notop.h5",
        )
    ]


def test_imagenet_weights_from_the_keras_cache(tmp_path, monkeypatch):
    """A file in `$KERAS_HOME/models` under the published name and hash loads, no download;
    weights="imagenet" adds tf_keras's extra 1/sqrt(std) multiply after the Normalization."""
    import hashlib

    from layerflow._src.keras.applications import imagenet_utils

    kwargs = mo.kwargs_of(mo.tiny_meta(FAMILY)[0])
    kwargs.update(include_top=False, model_name="efficientnet_tiny_b0")
    tf.keras.backend.clear_session()
    reference = efficientnet.EfficientNet(**{**kwargs, "weights": None})
    (tmp_path / "models").mkdir()
    cached = tmp_path / "models" / "efficientnet_tiny_b0_notop.h5"
    reference.save_weights(str(cached))
    md5 = hashlib.md5(cached.read_bytes()).hexdigest()
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setitem(efficientnet.WEIGHTS_HASHES, "b0", ("unused", md5))
    monkeypatch.setattr(imagenet_utils, "get_file", pytest.fail)  # no download may happen
    tf.keras.backend.clear_session()
    model = efficientnet.EfficientNet(**{**kwargs, "weights": "imagenet"})
    for got, want in zip(model.weights, reference.weights, strict=True):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    names = [layer.name for layer in model.layers]
    assert names.index("tf.math.multiply") == names.index("normalization") + 1
    assert len(names) == len(reference.layers) + 1
    x = mo.tiny_arrays(FAMILY)["m0/x"]
    normalized = tf.keras.Model(reference.input, reference.get_layer("normalization").output)
    scaled = tf.keras.Model(model.input, model.get_layer("tf.math.multiply").output)
    np.testing.assert_allclose(
        scaled(x).numpy(),
        normalized(x).numpy() / np.sqrt([0.229, 0.224, 0.225]).astype("float32"),
        rtol=1e-6,
    )


def test_submodule_names():
    A = tf.keras.applications
    assert A.efficientnet.EfficientNetB3 is A.EfficientNetB3
    assert A.efficientnet.EfficientNetB3.__name__ == "EfficientNetB3"
    x = np.arange(6.0).reshape(1, 1, 2, 3)
    assert A.efficientnet.preprocess_input(x) is x  # preprocessing lives inside the model
    with pytest.raises(ValueError, match="shape"):
        A.efficientnet.decode_predictions(np.zeros((1, 10)))


def test_depthwise_kernel_is_named_as_in_tf_keras():
    layer = tf.keras.layers.DepthwiseConv2D(3, name="dw")
    layer(tf.ones((1, 5, 5, 2)))
    assert [w.name for w in layer.weights] == ["dw/depthwise_kernel:0", "dw/bias:0"]
    assert layer.depthwise_kernel is layer.kernel
