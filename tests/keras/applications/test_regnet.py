"""RegNetX/Y 002..320 against tf_keras 2.21 (fixtures/modern_regnet*, written by
fixtures/make_modern_oracles.py): structure of every constructor, errors, forward passes of
tiny X and Y configurations with tf_keras's weights (inference and training), and ImageNet
weights from the Keras cache without a download."""

import hashlib
import pathlib
import shutil
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import imagenet_utils, regnet

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import modern_oracles as mo  # noqa: E402
from modern_oracles import zero_weights  # noqa: E402, F401

FAMILY = "regnet"
SLOW = {"RegNetX320", "RegNetY160"}  # RegNetY320 stays: the largest, structure only


@pytest.mark.usefixtures("zero_weights")
@pytest.mark.parametrize("entry", mo.structure_cases(FAMILY, slow=SLOW))
def test_structure_matches_tf_keras(entry):
    model = mo.build_case(tf.keras.applications, entry)
    mo.assert_same_structure(mo.structure(model), entry["structure"])


@pytest.mark.parametrize("key", sorted(mo.oracle(FAMILY)["errors"]))
def test_errors_match_tf_keras(key):
    mo.check_error(tf.keras.applications, FAMILY, key)


@pytest.mark.parametrize("k", [0, 1])
def test_tiny_forward_matches_tf_keras_with_its_weights_file(k):
    model = mo.check_tiny_forward(regnet.RegNet, FAMILY, k)
    arrays = mo.tiny_arrays(FAMILY)
    x = arrays[f"m{k}/x"]
    # training=True normalizes with the batch's moments (no dropout in RegNet)
    np.testing.assert_allclose(
        model(x, training=True).numpy(), arrays[f"m{k}/y_train"], rtol=1e-4, atol=1e-4
    )


def test_head_returns_logits_as_tf_keras_2():
    # tf_keras 2.x's RegNet head has no activation: classifier_activation is only validated
    tf.keras.backend.clear_session()
    model = tf.keras.applications.RegNetX002(weights=None, input_shape=(32, 32, 3), classes=4)
    head = model.layers[-1]
    assert head.name == "1head_dense" and head.get_config()["activation"] == "linear"
    assert model.layers[-2].name == "1_head_gap"


def test_group_width_wider_than_the_stage_means_one_group():
    tf.keras.backend.clear_session()
    model = tf.keras.applications.RegNetX080(weights=None, include_top=False,
                                             input_shape=(32, 32, 3))  # fmt: skip
    conv = model.get_layer("regnetx080_Stage_0_XBlock_0_conv_3x3")  # 80 filters, width 120
    assert conv.groups == 1 and tuple(conv.kernel.shape) == (3, 3, 80, 80)


def test_imagenet_weights_from_the_keras_cache_without_download(tmp_path, monkeypatch):
    """weights="imagenet" loads `<model_name>.h5` from `$KERAS_HOME/models` when its hash
    matches (tf_keras-written Keras 2 HDF5, by layer order) and never downloads."""
    src = mo.tiny_h5(FAMILY, 1)
    sha = hashlib.sha256(pathlib.Path(src).read_bytes()).hexdigest()
    (tmp_path / "models").mkdir()
    shutil.copy(src, tmp_path / "models" / "regnety_test.h5")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setitem(regnet.WEIGHTS_HASHES, "test", (sha, "unused"))
    monkeypatch.setattr(imagenet_utils, "get_file", pytest.fail)
    kwargs = {**mo.kwargs_of(mo.tiny_meta(FAMILY)[1]), "weights": "imagenet"}
    tf.keras.backend.clear_session()
    model = regnet.RegNet(**kwargs)
    x = mo.tiny_arrays(FAMILY)["m1/x"]
    np.testing.assert_allclose(
        model(x).numpy(), mo.tiny_arrays(FAMILY)["m1/y"], rtol=1e-4, atol=1e-4
    )
    # a cached file with another hash is not used; offline, the error says what to do
    monkeypatch.setitem(regnet.WEIGHTS_HASHES, "test", ("0" * 64, "unused"))
    monkeypatch.setattr(imagenet_utils, "get_file", _offline)
    with pytest.raises((FileNotFoundError, ValueError), match="regnety_test.h5"):
        regnet.RegNet(**kwargs)


def _offline(fname, origin, **kwargs):
    raise OSError(f"offline: {origin}")


def test_imagenet_needs_a_published_model_name():
    with pytest.raises(ValueError, match="model_name='regnet_mine'"):
        tf.keras.applications.RegNetX002(model_name="regnet_mine", include_top=False)


def test_unknown_block_type():
    with pytest.raises(NotImplementedError, match="Block type `W` not recognized"):
        regnet.Stage("W", 1, 8, 8, 8)


def test_submodule_names():
    A = tf.keras.applications
    assert A.regnet.RegNetY320 is A.RegNetY320
    assert len([n for n in dir(A.regnet) if n.startswith("RegNet")]) == 24
    x = np.ones((1, 2, 2, 3))
    assert A.regnet.preprocess_input(x) is x


def test_z_blocks_build_and_run():
    # tf_keras's ZBlock never applies its squeeze-and-excite and cannot build; ours does
    tf.keras.backend.clear_session()
    model = regnet.RegNet([1, 2, 1, 1], [8, 16, 24, 32], 8, "Z", 32, model_name="z",
                          weights=None, input_shape=(32, 32, 3), classes=3)  # fmt: skip
    names = [layer.name for layer in model.layers]
    assert "z_Stage_1_ZBlock_1_squeeze_and_excite_gap" in names
    assert "z_Stage_1_ZBlock_1_skip_1x1" not in names  # Z blocks have no projection shortcut
    y = model(np.ones((2, 32, 32, 3), "float32"))
    assert y.shape == (2, 3) and np.isfinite(y.numpy()).all()
