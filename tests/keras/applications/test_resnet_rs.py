"""ResNet-RS 50..420 against tf_keras 2.21 (fixtures/modern_resnet_rs*, written by
fixtures/make_modern_oracles.py): structure of every constructor, errors (the "imagenet-i<size>"
variants included), and a tiny configuration's forward pass with tf_keras's weights."""

import pathlib
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import imagenet_utils, resnet_rs

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import modern_oracles as mo  # noqa: E402
from modern_oracles import zero_weights  # noqa: E402, F401

FAMILY = "resnet_rs"
SLOW = {"ResNetRS270", "ResNetRS350"}  # ResNetRS420 stays: the largest, structure only


@pytest.mark.usefixtures("zero_weights")
@pytest.mark.parametrize("entry", mo.structure_cases(FAMILY, slow=SLOW))
def test_structure_matches_tf_keras(entry):
    model = mo.build_case(tf.keras.applications, entry)
    mo.assert_same_structure(mo.structure(model), entry["structure"])


@pytest.mark.parametrize("key", sorted(mo.oracle(FAMILY)["errors"]))
def test_errors_match_tf_keras(key):
    mo.check_error(tf.keras.applications, FAMILY, key)


def test_tiny_forward_matches_tf_keras_with_its_weights_file():
    model = mo.check_tiny_forward(resnet_rs.ResNetRS, FAMILY, 0)
    drops = [layer for layer in model.layers if layer.name.endswith("_drop")]
    # drop_connect_rate 0.2 over 3 groups: rates 0.2 * (i + 2) / 4 used as the Dropout rate
    assert sorted({round(d.rate, 6) for d in drops}) == [0.1, 0.15, 0.2]


@pytest.mark.parametrize(
    ("ctor", "weights", "fname"),
    [
        ("ResNetRS50", "imagenet", "resnet-rs-50-i160_notop.h5"),
        ("ResNetRS152", "imagenet", "resnet-rs-152-i256_notop.h5"),
        ("ResNetRS152", "imagenet-i192", "resnet-rs-152-i192_notop.h5"),
    ],
)
def test_imagenet_variants_pick_the_published_file(ctor, weights, fname, monkeypatch, tmp_path):
    asked = []

    def offline(name, origin, **kwargs):
        asked.append((name, origin, kwargs.get("file_hash")))
        raise OSError("offline")

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setattr(imagenet_utils, "get_file", offline)
    monkeypatch.setattr(resnet_rs, "BLOCK_ARGS", _one_block_each())  # small and quick to build
    tf.keras.backend.clear_session()
    with pytest.raises(FileNotFoundError, match=fname):
        getattr(tf.keras.applications, ctor)(
            weights=weights, include_top=False, input_shape=(32, 32, 3)
        )
    assert asked == [(fname, resnet_rs.BASE_WEIGHTS_URL + fname, resnet_rs.WEIGHT_HASHES[fname])]


def _one_block_each():
    return {d: [{"input_filters": 4, "num_repeats": 1}] * 4 for d in resnet_rs.BLOCK_ARGS}


def test_unknown_depth():
    with pytest.raises(ValueError, match="depth must be one of"):
        resnet_rs.ResNetRS(depth=34, weights=None)


def test_submodule_names():
    A = tf.keras.applications
    assert A.resnet_rs.ResNetRS420 is A.ResNetRS420
    x = np.ones((1, 2, 2, 3))
    assert A.resnet_rs.preprocess_input(x) is x
