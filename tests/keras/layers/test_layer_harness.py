"""Every built-in layer of this package through run_layer_test (STYLE.md)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
RNG = np.random.default_rng(0)

CASES = [
    (L.Dense, {"units": 3}, (2, 4), None),
    (L.Activation, {"activation": "tanh"}, (2, 3), None),
    (L.Activation, {"activation": "softmax"}, (2, 3), None),
    (L.ReLU, {"max_value": 1.5, "negative_slope": 0.1, "threshold": 0.2}, (3, 4), None),
    (L.LeakyReLU, {"alpha": 0.2}, (2, 5), None),
    (L.PReLU, {"alpha_initializer": "glorot_uniform"}, (2, 3, 4), None),
    (L.PReLU, {"shared_axes": [1]}, (2, 3, 4), None),
    (L.ELU, {"alpha": 0.7}, (2, 5), None),
    (L.Softmax, {"axis": 1}, (2, 3, 4), None),
    (L.Dropout, {"rate": 0.5}, (2, 6), [2, 6]),
    (L.Reshape, {"target_shape": (2, -1)}, (2, 6), [2, 2, 3]),
    (L.Permute, {"dims": (2, 1)}, (2, 3, 4), [2, 4, 3]),
    (L.RepeatVector, {"n": 3}, (2, 4), [2, 3, 4]),
    (L.LayerNormalization, {}, (3, 5), None),
    (L.LayerNormalization, {"axis": [1, 2], "epsilon": 1e-5}, (2, 3, 4), None),
    (L.Lambda, {"function": tf.nn.relu}, (2, 3), None),
]


@pytest.mark.parametrize("cls,kwargs,shape,expected", CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, *_) in enumerate(CASES)])  # fmt: skip
def test_single_input_layers(cls, kwargs, shape, expected):
    out = run_layer_test(cls, kwargs, input_shape=shape, expected_output_shape=expected)
    assert out.dtype == tf.float32


MERGES = [L.Add, L.Subtract, L.Multiply, L.Average, L.Maximum, L.Minimum]


@pytest.mark.parametrize("cls", MERGES, ids=[c.__name__ for c in MERGES])
def test_merging_layers(cls):
    data = [RNG.standard_normal((2, 3)).astype("float32") for _ in range(2)]
    run_layer_test(cls, {}, input_data=data, expected_output_shape=[2, 3])


def test_concatenate_layer():
    data = [RNG.standard_normal((2, 3, s)).astype("float32") for s in (2, 4)]
    run_layer_test(L.Concatenate, {}, input_data=data, expected_output_shape=[2, 3, 6])
    run_layer_test(L.Concatenate, {"axis": 1}, input_data=[data[0], data[0]],
                   expected_output_shape=[2, 6, 2])  # fmt: skip


def test_embedding_layer():
    ids = RNG.integers(0, 7, size=(3, 4)).astype("int32")
    run_layer_test(L.Embedding, {"input_dim": 7, "output_dim": 5}, input_data=ids,
                   expected_output_shape=[3, 4, 5], expected_num_weights=1)  # fmt: skip


def test_harness_catches_a_wrong_gradient():
    @tf.custom_gradient
    def bad_square(x):
        return x * x, lambda dy: dy * x  # should be 2 * x

    class Bad(tf.keras.layers.Layer):
        def call(self, x):
            return bad_square(x)

        def compute_output_shape(self, s):
            return s

    with pytest.raises(AssertionError, match="finite differences"):
        run_layer_test(Bad, {}, input_shape=(2, 3))
