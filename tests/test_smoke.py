"""The public API in a few lines: runs first, fails loudly if the basics break."""

import numpy as np

import layerflow as tf


def test_tensor_basics():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2) and x.dtype == tf.float32
    assert x.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    np.testing.assert_array_equal((x + 1).numpy(), [[2, 3], [4, 5]])


def test_gradient_tape_basics():
    w = tf.Variable([[1.0], [2.0]])
    x = tf.constant([[3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.matmul(x, w) ** 2)
    g = tape.gradient(y, w)
    np.testing.assert_allclose(g.numpy(), [[2 * 11 * 3], [2 * 11 * 4]])


def test_lazy_facade_names_resolve():
    for name in ("keras", "data", "distribute", "io", "train", "image", "initializers", "losses",
                 "optimizers", "metrics", "dtypes", "Module", "TensorSpec",
                 "random_normal_initializer", "zeros_initializer"):  # fmt: skip
        assert getattr(tf, name) is not None, name
    assert tf.fill([2], tf.constant(3, tf.int64)).dtype == tf.int64
