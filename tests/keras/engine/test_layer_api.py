"""Keras 2's Layer API beyond call (issue 11): node accessors with tf_keras's errors, metrics
and updates from call, config hooks, the variable store protocol, and copies."""

import copy
import pickle

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


def test_node_accessors_of_a_layer_called_on_symbolic_tensors():
    a, b = tf.keras.Input((3,)), tf.keras.Input((5,))
    dense = L.Dense(2)
    ya, yb = dense(L.Dense(3)(a)), dense(L.Dense(3)(b))
    assert dense.input is dense.get_input_at(0) and dense.output is ya
    assert dense.get_output_at(1) is yb
    assert dense.input_shape == (None, 3) and dense.output_shape == (None, 2)
    assert dense.get_input_shape_at(1) == (None, 3) and dense.get_output_shape_at(0) == (None, 2)
    assert len(dense.inbound_nodes) == 2
    concat = L.Concatenate()
    out = concat([ya, yb])
    assert concat.input == [ya, yb] and concat.input_shape == [(None, 2), (None, 2)]
    assert [n.layer for n in dense.outbound_nodes] == [concat, concat]
    assert out.node is concat.inbound_nodes[0]
    with pytest.raises(ValueError, match="has only 2 inbound nodes"):
        dense.get_input_at(2)


def test_node_accessors_explain_a_layer_without_nodes():
    layer = L.Dense(2)
    layer(np.ones((1, 3), np.float32))  # eager calls record no nodes (tf_keras)
    with pytest.raises(AttributeError, match="is not connected, no input to return"):
        layer.input  # noqa: B018
    with pytest.raises(AttributeError, match="has no inbound nodes"):
        layer.output  # noqa: B018
    with pytest.raises(AttributeError, match="never been called.*input shape"):
        layer.input_shape  # noqa: B018
    with pytest.raises(RuntimeError, match="never been called and thus has no defined output"):
        layer.get_output_at(0)
    shared = L.Activation("relu")
    shared(tf.keras.Input((3,)))
    shared(tf.keras.Input((4,)))
    with pytest.raises(AttributeError, match="different input shapes"):
        shared.input_shape  # noqa: B018


def test_add_metric_tracks_a_mean_and_fit_reports_it():
    class Probe(L.Layer):
        def call(self, x):
            self.add_metric(tf.reduce_mean(x), name="mean_in")
            return x

    probe = Probe()
    probe(tf.ones((2, 2)))
    probe(tf.zeros((2, 2)))
    assert [m.name for m in probe.metrics] == ["mean_in"]
    assert float(probe.metrics[0].result()) == 0.5
    with pytest.raises(ValueError, match="provide a name"):
        Probe().add_metric(tf.constant(1.0))
    with pytest.raises(TypeError, match="Expected `aggregation`"):
        Probe().add_metric(tf.constant(1.0), name="m", bogus=1)
    model = tf.keras.Sequential([Probe(), L.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(np.full((4, 2), 3.0, np.float32), np.ones((4, 1)), verbose=0)
    assert history.history["mean_in"] == [3.0]


def test_add_update_runs_callables_unless_frozen_and_updates_warns():
    counter = tf.Variable(0.0)
    layer = L.Layer()
    layer.add_update(lambda: counter.assign_add(1.0))
    assert float(counter) == 1.0
    layer.trainable = False
    layer.add_update(lambda: counter.assign_add(1.0))
    assert float(counter) == 1.0
    with pytest.warns(UserWarning, match="layer.updates"):
        assert layer.updates == []


def test_small_properties():
    layer = L.Dense(2, activity_regularizer="l2")
    assert isinstance(layer.activity_regularizer, tf.keras.regularizers.L2)
    layer.activity_regularizer = None
    assert layer.activity_regularizer is None
    assert L.Dense(2, dtype="float64").dtype_policy.compute_dtype == "float64"
    assert L.Dense(2, dynamic=True).dynamic and not L.Dense(2).dynamic
    assert tf.keras.Sequential([L.Dense(1, dynamic=True)]).dynamic
    with pytest.warns(UserWarning, match="add_variable` is deprecated"):
        v = L.Layer(name="holder").add_variable("w", (2,))
    assert v.name == "holder/w:0"


def test_finalize_state_runs_after_set_weights():
    calls = []

    class Cached(L.Dense):
        def finalize_state(self):
            calls.append(self.kernel.numpy().sum())

    layer = Cached(1, kernel_initializer="zeros")
    layer(np.ones((1, 2), np.float32))
    layer.set_weights([np.ones((2, 1)), np.zeros(1)])
    assert calls == [2.0]


def test_build_config_round_trip():
    layer = L.Dense(3)
    assert layer.get_build_config() is None
    layer.build((None, 4))
    config = layer.get_build_config()
    assert config == {"input_shape": (None, 4)}
    fresh = L.Dense(3)
    fresh.build_from_config(config)
    assert fresh.built and fresh.kernel.shape == (4, 3)
    with pytest.raises(ValueError, match="get_build_config"):
        L.Dense(3).build_from_config({"shape": 3})


def test_save_and_load_own_variables():
    bn = L.BatchNormalization()
    bn(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32), training=True)
    store = {}
    bn.save_own_variables(store)
    assert sorted(store) == ["0", "1", "2", "3"]  # gamma, beta, then moving mean/var
    np.testing.assert_array_equal(store["2"], bn.moving_mean.numpy())
    other = L.BatchNormalization()
    other.build((None, 3))
    other.load_own_variables(store)
    np.testing.assert_array_equal(other.moving_variance.numpy(), bn.moving_variance.numpy())
    with pytest.raises(ValueError, match="expected 4 variables, but received 1"):
        other.load_own_variables({"0": store["0"]})
    bad = dict(store, **{"0": np.ones(5, np.float32)})
    before = other.gamma.numpy()
    with pytest.raises(ValueError, match="Nothing was assigned"):
        other.load_own_variables(bad)
    np.testing.assert_array_equal(other.gamma.numpy(), before)


def test_layers_pickle_and_copy():
    layer = L.Dense(2)
    layer(np.ones((1, 3), np.float32))
    clone = pickle.loads(pickle.dumps(layer))
    np.testing.assert_array_equal(clone.kernel.numpy(), layer.kernel.numpy())
    state = layer.__getstate__()
    assert "_structure_cache" not in state
    deep = copy.deepcopy(layer)
    assert deep.kernel is not layer.kernel
