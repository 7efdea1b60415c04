"""The convolution, 3-D pooling and locally-connected layers reproduce tf_keras: the same weight
shapes and order, and the same outputs with the same weights. The oracle values come from real
tf_keras (`make_conv_fixtures.py`), stored in `fixtures/keras2_conv_layers.npz`, and the layers'
configs as tf_keras serializes them in `fixtures/keras2_conv_configs.json`."""

import json
import pathlib

import conv_cases
import numpy as np
import pytest

import layerflow as tf

REF_DIR = pathlib.Path(__file__).resolve().parent / "fixtures"
REF = np.load(REF_DIR / "keras2_conv_layers.npz")
CASES = conv_cases.cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_same_weights_and_outputs_as_tf_keras(case):
    cid, name, kwargs, x = case
    layer = getattr(tf.keras.layers, name)(**kwargs)
    layer(x)
    n = len([k for k in REF.files if k.startswith(f"{cid}/w")])
    want = [REF[f"{cid}/w{i}"] for i in range(n)]
    assert [tuple(w.shape) for w in layer.get_weights()] == [w.shape for w in want]
    layer.set_weights(want)
    np.testing.assert_allclose(layer(x).numpy(), REF[f"{cid}/y"], rtol=1e-5, atol=1e-5)


CONFIGS = json.loads((REF_DIR / "keras2_conv_configs.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_tf_keras_configs_deserialize_to_the_same_layer(case):
    """`tf.keras.layers.serialize` output written by tf_keras rebuilds the same layer here."""
    cid, name, _, x = case
    layer = tf.keras.layers.deserialize(CONFIGS[cid])
    assert type(layer).__name__ == name
    layer(x)
    n = len([k for k in REF.files if k.startswith(f"{cid}/w")])
    layer.set_weights([REF[f"{cid}/w{i}"] for i in range(n)])
    np.testing.assert_allclose(layer(x).numpy(), REF[f"{cid}/y"], rtol=1e-5, atol=1e-5)
