import math

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras import activations as A
from layerflow._src.keras.utils.testing import check_gradients

X = np.array([-3.1, -1.2, -0.3, 0.4, 1.1, 2.6, 7.5])  # away from kinks
ERF = np.vectorize(math.erf)

REFERENCE = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softplus": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
    "gelu": lambda x: 0.5 * x * (1 + ERF(x / np.sqrt(2))),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.2 * x),
    "relu6": lambda x: np.clip(x, 0, 6),
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
    "exponential": np.exp,
    "linear": lambda x: x,
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_forward_matches_numpy(name):
    fn = tf.keras.activations.get(name)
    out = fn(tf.constant(X, dtype=tf.float64))
    np.testing.assert_allclose(np.asarray(out), REFERENCE[name](X), rtol=1e-6, atol=1e-7)
    out32 = fn(tf.constant(X.astype(np.float32)))
    assert out32.dtype == tf.float32


@pytest.mark.parametrize("name", sorted(set(REFERENCE) - {"linear"}))
def test_gradient_matches_finite_differences(name):
    check_gradients(tf.keras.activations.get(name), [X])


def test_relu_options():
    x = tf.constant([-4.0, -1.0, 0.5, 2.0, 9.0])
    np.testing.assert_allclose(A.relu(x, alpha=0.5).numpy(), [-2, -0.5, 0.5, 2, 9])
    np.testing.assert_allclose(A.relu(x, max_value=1.0).numpy(), [0, 0, 0.5, 1, 1])
    np.testing.assert_allclose(A.relu(x, threshold=1.0).numpy(), [0, 0, 0, 2, 9])
    np.testing.assert_allclose(A.relu(x, alpha=0.5, threshold=1.0).numpy(),
                               [-2.5, -1, -0.25, 2, 9])  # fmt: skip
    check_gradients(lambda t: A.relu(t, alpha=0.3, max_value=5.0, threshold=0.2), [X])


def test_softmax_axis_and_large_inputs():
    x = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]])
    out = A.softmax(tf.constant(x)).numpy()
    np.testing.assert_allclose(out.sum(axis=-1), [1, 1])
    np.testing.assert_allclose(out[1], [1 / 3] * 3)
    out0 = A.softmax(tf.constant(x[:1]), axis=0).numpy()
    np.testing.assert_allclose(out0, np.ones((1, 3)))
    check_gradients(lambda t: A.softmax(t), [np.array([[0.1, -0.5, 2.0], [0.3, 0.3, -1.0]])])
    with pytest.raises(ValueError, match="rank 1"):
        A.softmax(tf.constant([1.0, 2.0]))


def test_elu_alpha_and_gelu_approximate():
    np.testing.assert_allclose(A.elu(tf.constant([-1.0]), alpha=2.0).numpy(),
                               [2 * (math.exp(-1) - 1)], rtol=1e-6)  # fmt: skip
    approx = A.gelu(tf.constant(X), approximate=True).numpy()
    ref = 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X**3)))
    np.testing.assert_allclose(approx, ref, rtol=1e-6)
    big = A.elu(tf.constant([200.0], dtype=tf.float64))
    assert np.isfinite(big.numpy()).all()


def test_get_and_serialize():
    assert A.get(None) is A.linear
    assert A.get("relu") is A.relu
    assert A.get(tf.nn.relu) is tf.nn.relu
    assert A.serialize(tf.nn.relu) == "relu"
    assert A.serialize(A.softmax) == "softmax"
    assert A.deserialize("swish") is A.swish
    with pytest.raises(ValueError, match="Unknown activation"):
        A.get("relu7")
    with pytest.raises(TypeError, match="Could not interpret"):
        A.get(5)


def test_custom_activation_through_scope():
    def my_act(x):
        return x * 2

    with tf.keras.utils.custom_object_scope({"my_act": my_act}):
        assert A.get("my_act") is my_act
    with pytest.raises(ValueError):
        A.get("my_act")
