"""The convolution, 3-D pooling and locally-connected layers reproduce tf_keras: the same weight
shapes and order, and the same outputs with the same weights. The oracle values come from real
tf_keras (`make_conv_fixtures.py`), stored in `fixtures/keras2_conv_layers.npz`."""

import pathlib

import conv_cases
import numpy as np
import pytest

import layerflow as tf

REF = np.load(pathlib.Path(__file__).resolve().parent / "fixtures" / "keras2_conv_layers.npz")
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
