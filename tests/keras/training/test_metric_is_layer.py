"""`tf.keras.metrics.Metric` is a Layer (Keras 2 / tf_keras semantics, checked against tf_keras)."""

import copy

import numpy as np
import pytest

import layerflow as tf

keras = tf.keras


class BinaryTruePositives(keras.metrics.Metric):
    """tf_keras's documented subclass example."""

    def __init__(self, name="binary_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_weight(name="tp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = tf.cast(y_true, tf.bool)
        y_pred = tf.cast(y_pred, tf.bool)
        values = tf.cast(tf.logical_and(tf.equal(y_true, True), tf.equal(y_pred, True)), self.dtype)
        if sample_weight is not None:
            values = values * tf.cast(sample_weight, self.dtype)
        self.true_positives.assign_add(tf.reduce_sum(values))

    def result(self):
        return self.true_positives


def test_a_metric_is_a_stateful_layer_with_non_trainable_weights():
    m = keras.metrics.Mean()
    assert isinstance(m, keras.layers.Layer)
    assert m.stateful and m.built and m.trainable
    assert m.dtype == "float32" and m.variable_dtype == "float32" and m.compute_dtype == "float32"
    assert m.trainable_weights == [] and m.trainable_variables == []
    assert len(m.non_trainable_weights) == 2 and len(m.weights) == 2
    assert all(not v.trainable for v in m.variables)
    assert m.get_config() == {"name": "mean", "dtype": "float32"}
    with m.name_scope:
        pass
    assert list(m.submodules) == []


def test_call_updates_and_returns_the_result_and_weights_round_trip():
    m = keras.metrics.Mean()
    assert float(m([1.0, 2.0])) == 1.5
    assert [float(w) for w in m.get_weights()] == [3.0, 2.0]
    m.set_weights([np.float32(10.0), np.float32(4.0)])
    assert float(m.result()) == 2.5
    m.reset_state()
    assert [float(w) for w in m.get_weights()] == [0.0, 0.0]


def test_merge_state_adds_the_other_metrics_state():
    # tf_keras's merge_state docstring example.
    m1 = keras.metrics.Accuracy()
    m1.update_state([[1], [2]], [[0], [2]])
    m2 = keras.metrics.Accuracy()
    m2.update_state([[3], [4]], [[3], [4]])
    m2.merge_state([m1])
    assert float(m2.result()) == 0.75
    with pytest.raises(ValueError, match="not compatible"):
        m2.merge_state([keras.metrics.Precision(thresholds=[0.2, 0.5])])
    assert float(m2.result()) == 0.75  # a failed merge changes nothing


def test_a_subclass_with_add_weight_in_init_works_as_in_tf_keras():
    m = BinaryTruePositives()
    m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert float(m.result()) == 2.0
    assert [v.name for v in m.variables] == ["binary_true_positives/tp:0"]
    assert m.non_trainable_weights[0] is m.true_positives


def test_deepcopy_copies_config_and_state_independently():
    m = keras.metrics.Mean(name="loss")
    m.update_state([1.0, 2.0])
    c = copy.deepcopy(m)
    c.update_state([9.0])
    assert c.name == "loss" and float(m.result()) == 1.5 and float(c.result()) == 4.0


def test_a_model_lists_held_metrics_in_metrics_not_in_layers():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)
            self.loss_tracker = keras.metrics.Mean(name="loss")

        def call(self, x):
            return self.dense(x)

    net = Net()
    net(tf.ones((1, 3)))
    assert [layer.name for layer in net.layers] == [net.dense.name]
    assert net.metrics == [net.loss_tracker]
    # As tf_keras: the metric's state is among the model's (non-trainable) weights.
    assert len(net.trainable_weights) == 2 and len(net.weights) == 4
