"""The new layers reproduce tf_keras: same weight shapes and order, same outputs with the same
weights. The oracle values come from real tf_keras (`make_fixtures.py`), stored in `fixtures/`."""

import pathlib

import keras_cases
import numpy as np
import pytest

import layerflow as tf

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
REF = np.load(FIXTURES / "keras2_layers.npz")
CASES = keras_cases.cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_same_weights_and_outputs_as_tf_keras(case):
    cid, name, kwargs, inputs, call_kwargs = case
    layer = getattr(tf.keras.layers, name)(**kwargs)
    args, positional = keras_cases.call_args(name, inputs)

    def run():
        return layer(*args, **call_kwargs) if positional else layer(args[0], **call_kwargs)

    run()
    n = len([k for k in REF.files if k.startswith(f"{cid}/w")])
    want = [REF[f"{cid}/w{i}"] for i in range(n)]
    assert [tuple(w.shape) for w in layer.get_weights()] == [w.shape for w in want]
    layer.set_weights(want)
    y = run().numpy()
    np.testing.assert_allclose(y, REF[f"{cid}/y"], rtol=1e-5, atol=1e-5)
