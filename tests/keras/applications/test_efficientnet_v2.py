"""EfficientNetV2 B0-B3/S/M/L against tf_keras 2.21 (fixtures/modern_efficientnet_v2*, written by
fixtures/make_modern_oracles.py): structure of every constructor, errors, and forward passes of
two tiny configurations (B-style and S-style preprocessing) with tf_keras's weights."""

import pathlib
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import efficientnet_v2

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import modern_oracles as mo  # noqa: E402
from modern_oracles import zero_weights  # noqa: E402, F401

FAMILY = "efficientnet_v2"
SLOW = {"EfficientNetV2L"}


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
    model = mo.check_tiny_forward(efficientnet_v2.EfficientNetV2, FAMILY, k)
    names = [layer.name for layer in model.layers]
    if k == 0:  # a B variant: [0, 1] then the ImageNet mean and std
        assert names[1:3] == ["rescaling", "normalization"]
    else:  # S: [-1, 1]
        assert names[1:3] == ["rescaling", "stem_conv"]
        assert model.get_layer("rescaling").offset == -1


def test_drop_connect_rate_is_the_dropout_rate_and_the_first_block_has_none():
    # tf_keras passes its "survival probability" drop_connect_rate * b / blocks as the rate
    tf.keras.backend.clear_session()
    model = efficientnet_v2.EfficientNetV2B0(weights=None, include_top=False,
                                             input_shape=(32, 32, 3))  # fmt: skip
    drops = {layer.name: layer for layer in model.layers if layer.name.endswith("_drop")}
    assert "block1a_drop" not in drops and "block1a_project_activation" in {
        layer.name for layer in model.layers
    }
    blocks = 1 + 2 + 2 + 3 + 5 + 8
    assert drops["block2b_drop"].rate == pytest.approx(0.2 * 2 / blocks)
    assert drops["block6h_drop"].rate == pytest.approx(0.2 * (blocks - 1) / blocks)
    assert drops["block6h_drop"].noise_shape == (None, 1, 1, 1)


def test_default_blocks_need_a_known_model_name():
    with pytest.raises(ValueError, match="model_name='efficientnetv2-x'"):
        efficientnet_v2.EfficientNetV2(1.0, 1.0, 224, model_name="efficientnetv2-x", weights=None)


def test_submodule_names():
    A = tf.keras.applications
    assert A.efficientnet_v2.EfficientNetV2S is A.EfficientNetV2S
    x = np.ones((1, 2, 2, 3))
    assert A.efficientnet_v2.preprocess_input(x) is x
