"""The seed chapter's parameter-initialization code blocks, run as written."""

import numpy as np

import layerflow as tf


def test_builtin_initialization_blocks():
    X = tf.random.uniform((2, 4))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4, activation=tf.nn.relu,
            kernel_initializer=tf.random_normal_initializer(mean=0, stddev=0.01),
            bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(1)])  # fmt: skip
    net(X)
    w = net.weights[0].numpy()
    assert w.shape == (4, 4) and np.abs(w).max() < 0.06 and net.weights[1].numpy().sum() == 0

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4, activation=tf.nn.relu,
            kernel_initializer=tf.keras.initializers.Constant(1),
            bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(1)])  # fmt: skip
    net(X)
    assert np.all(net.weights[0].numpy() == 1)

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu,
                              kernel_initializer=tf.keras.initializers.GlorotUniform()),
        tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(1)),
    ])  # fmt: skip
    net(X)
    assert np.abs(net.layers[1].weights[0].numpy()).max() <= np.sqrt(6 / 8)
    assert np.all(net.layers[2].weights[0].numpy() == 1)


def test_custom_initializer_block():
    class MyInit(tf.keras.initializers.Initializer):
        def __call__(self, shape, dtype=None):
            data = tf.random.uniform(shape, -10, 10, dtype=dtype)
            factor = tf.abs(data) >= 5
            factor = tf.cast(factor, tf.float32)
            return data * factor

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu, kernel_initializer=MyInit()),
        tf.keras.layers.Dense(1)])  # fmt: skip
    net(tf.random.uniform((2, 4)))
    w = net.layers[1].weights[0].numpy()
    assert w.shape == (4, 4)
    assert np.all((w == 0) | ((np.abs(w) >= 5) & (np.abs(w) <= 10)))


def test_seed_mydense_add_weight_with_initializers():
    class MyDense(tf.keras.Model):
        def __init__(self, units):
            super().__init__()
            self.units = units

        def build(self, X_shape):
            self.weight = self.add_weight(name="weight", shape=[X_shape[-1], self.units],
                                          initializer=tf.random_normal_initializer())  # fmt: skip
            self.bias = self.add_weight(name="bias", shape=[self.units],
                                        initializer=tf.zeros_initializer())  # fmt: skip

        def call(self, X):
            return tf.nn.relu(tf.matmul(X, self.weight) + self.bias)

    dense = MyDense(3)
    dense(tf.random.uniform((2, 5)))
    w, b = dense.get_weights()
    assert w.shape == (5, 3) and np.abs(w).max() < 0.3 and np.all(b == 0)
