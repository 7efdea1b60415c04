"""Keras 2 call conventions real models rely on (each checked against tf_keras 2.21)."""

import numpy as np
import pytest

import layerflow as tf


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


class KwargsLayer(tf.keras.layers.Layer):
    """`call(x, **kwargs)`: records what it was given."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def call(self, x, **kwargs):
        self.seen.append(dict(kwargs))
        return x


class NoDefault(tf.keras.layers.Layer):
    """`call(x, training)` with no default for `training`."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def call(self, x, training):
        self.seen.append(training)
        return x * 2.0 if training else x


def test_training_is_forwarded_into_call_kwargs():
    layer = KwargsLayer()
    layer(tf.ones((1, 2)), training=True)
    layer(tf.ones((1, 2)), training=False)
    # tf_keras passes training=None when nothing sets it.
    layer(tf.ones((1, 2)))
    assert layer.seen == [{"training": True}, {"training": False}, {"training": None}]


def test_training_reaches_a_nested_kwargs_layer_through_the_call_context():
    class Outer(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = KwargsLayer()

        def call(self, x, training=None):
            return self.inner(x)

    outer = Outer()
    outer(tf.ones((1, 2)), training=True)
    assert outer.inner.seen == [{"training": True}]


def test_kwargs_call_forwarding_to_a_sublayer_passes_training_through():
    class Block(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.drop = tf.keras.layers.Dropout(0.99, seed=1)

        def call(self, x, **kwargs):
            return self.drop(x, **kwargs)

    block = Block()
    x = tf.ones((4, 50))
    np.testing.assert_array_equal(block(x).numpy(), x.numpy())
    assert (block(x, training=True).numpy() == 0).mean() > 0.5


def test_training_without_default_gets_none_when_the_caller_passes_nothing():
    layer = NoDefault()
    out = layer(tf.ones((1, 2)))
    assert layer.seen == [None]
    np.testing.assert_array_equal(out.numpy(), np.ones((1, 2), np.float32))
    layer(tf.ones((1, 2)), training=True)
    layer(tf.ones((1, 2)), False)  # positionally, as tf_keras allows
    assert layer.seen == [None, True, False]


def test_training_without_default_during_sequential_symbolic_build():
    layer = NoDefault()
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,)), layer])
    assert model.built and layer.seen == [None]
    assert model.output_shape == (None, 2)

    layer2 = NoDefault()
    tf.keras.Sequential([tf.keras.Input((3,)), layer2])
    assert layer2.seen == [None]


def test_training_without_default_in_fit_and_predict():
    layer = NoDefault()
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,)), layer])
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32), epochs=1, verbose=0)
    assert layer.seen[0] is None and layer.seen[1:] and all(t is True for t in layer.seen[1:])
    layer.seen.clear()
    model.predict(np.ones((4, 3), np.float32), verbose=0)
    assert layer.seen and all(t is False for t in layer.seen)


def test_positional_training_is_seen_by_nested_layers():
    class Outer(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = KwargsLayer()

        def call(self, x, training=None):
            return self.inner(x)

    outer = Outer()
    outer(tf.ones((1, 2)), True)
    assert outer.inner.seen == [{"training": True}]


def test_functional_nodes_record_only_the_training_the_caller_passed():
    inputs = tf.keras.Input((3,))
    dropped = tf.keras.layers.Dropout(0.99, seed=1)(inputs)
    frozen = tf.keras.layers.BatchNormalization()(dropped, training=False)
    model = tf.keras.Model(inputs, frozen)
    drop_layer, bn_layer = model.layers[1], model.layers[2]
    assert drop_layer._inbound_nodes[0].kwargs == {}
    assert bn_layer._inbound_nodes[0].kwargs == {"training": False}
    # At run time the Dropout takes the model's training flag; the BatchNorm stays frozen.
    x = np.ones((64, 3), np.float32)
    np.testing.assert_allclose(model(x).numpy(), model(x, training=False).numpy())
    assert (model(x, training=True).numpy() == model(x).numpy()).mean() < 0.5
    np.testing.assert_array_equal(bn_layer.moving_mean.numpy(), np.zeros(3, np.float32))
