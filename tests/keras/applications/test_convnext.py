"""ConvNeXt Tiny..XLarge against tf_keras 2.21 (fixtures/modern_convnext*, written by
fixtures/make_modern_oracles.py): structure of every constructor, errors, a tiny configuration's
forward pass with tf_keras's weights, and the LayerScale / StochasticDepth layers."""

import pathlib
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.applications import convnext

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import modern_oracles as mo  # noqa: E402
from modern_oracles import zero_weights  # noqa: E402, F401

FAMILY = "convnext"
SLOW = {"ConvNeXtBase", "ConvNeXtLarge"}  # ConvNeXtXLarge stays: the largest, structure only


@pytest.mark.usefixtures("zero_weights")
@pytest.mark.parametrize("entry", mo.structure_cases(FAMILY, slow=SLOW))
def test_structure_matches_tf_keras(entry):
    model = mo.build_case(tf.keras.applications, entry)
    mo.assert_same_structure(mo.structure(model), entry["structure"])


@pytest.mark.parametrize("key", sorted(mo.oracle(FAMILY)["errors"]))
def test_errors_match_tf_keras(key):
    mo.check_error(tf.keras.applications, FAMILY, key)


def test_tiny_forward_matches_tf_keras_with_its_weights_file():
    model = mo.check_tiny_forward(convnext.ConvNeXt, FAMILY, 0)
    kinds = {type(layer).__name__ for layer in model.layers}
    assert {"Sequential", "LayerScale", "StochasticDepth", "TFOpLambda"} <= kinds
    conv = model.get_layer("convnext_tiny_test_stage_1_block_0_depthwise_conv")
    assert conv.groups == 16 and tuple(conv.kernel.shape) == (7, 7, 1, 16)


def test_layer_scale_multiplies_by_a_trainable_gamma():
    layer = convnext.LayerScale(0.25, 3, name="ls")
    x = tf.constant(np.arange(6.0, dtype="float32").reshape(2, 3))
    np.testing.assert_allclose(layer(x).numpy(), 0.25 * x.numpy())
    assert [w.name for w in layer.trainable_weights] == ["ls/gamma:0"]
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(layer(x))
    np.testing.assert_allclose(tape.gradient(y, layer.gamma).numpy(), x.numpy().sum(0))
    assert layer.get_config()["init_values"] == 0.25
    assert layer.get_config()["projection_dim"] == 3


def test_stochastic_depth_drops_whole_samples_while_training():
    layer = convnext.StochasticDepth(0.5)
    x = tf.ones((400, 3, 2))
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())  # inference: identity
    y = layer(x, training=True).numpy()
    per_sample = y.reshape(400, -1)
    # each sample is all zeros or all 1 / keep_prob
    assert set(np.unique(per_sample)) <= {0.0, 2.0}
    assert (per_sample.min(1) == per_sample.max(1)).all()
    assert 120 < (per_sample[:, 0] == 0).sum() < 280
    assert layer.get_config()["drop_path_rate"] == 0.5


def test_imagenet_needs_a_published_model_name():
    with pytest.raises(ValueError, match="model_name='mine'"):
        tf.keras.applications.ConvNeXtTiny(model_name="mine", include_top=False)


def test_submodule_names():
    A = tf.keras.applications
    assert A.convnext.ConvNeXtXLarge is A.ConvNeXtXLarge
    x = np.ones((1, 2, 2, 3))
    assert A.convnext.preprocess_input(x) is x
