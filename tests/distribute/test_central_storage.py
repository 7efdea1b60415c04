"""CentralStorageStrategy: one copy of each variable on the parameter device, compute mirrored;
SGD gives the same numbers as MirroredStrategy (and as one device on the whole batch)."""

import numpy as np
import pytest

import layerflow as tf

CPU = "/job:localhost/replica:0/task:0/device:CPU:{}"
CSS = tf.distribute.experimental.CentralStorageStrategy


def test_devices_and_variable_placement(two_cpus):
    s = CSS(["/cpu:0", "/cpu:1"])
    assert s.extended.parameter_devices == (CPU.format(0),)
    assert s.extended.worker_devices == (CPU.format(0), CPU.format(1))
    assert s.num_replicas_in_sync == 2
    with s.scope():
        v = tf.Variable([1.0, 2.0])
    assert v.device == CPU.format(0) and isinstance(v, tf.Variable)
    assert len(s.experimental_local_results(v)) == 1
    assert s.extended.variable_created_in_scope(v)
    # Each replica computes on its own device, reading the one copy.
    out = s.run(lambda: tf.reduce_sum(v * 2.0))
    assert [t.device for t in out.values] == [CPU.format(0), CPU.format(1)]
    assert [float(t) for t in out.values] == [6.0, 6.0]
    one = CSS(["/cpu:1"])
    assert one.extended.parameter_devices == (CPU.format(1),)
    assert CSS(["/cpu:1"], parameter_device="/cpu:0").extended.parameter_devices == (CPU.format(0),)


def test_replica_writes_are_aggregated(two_cpus):
    s = CSS(["/cpu:0", "/cpu:1"])
    with s.scope():
        total = tf.Variable(1.0, aggregation=tf.VariableAggregation.SUM)
        mean = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
        first = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        plain = tf.Variable(0.0)

    def rid():
        return tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)

    s.run(lambda: total.assign_add(1.0))
    assert float(total) == 3.0
    s.run(lambda: mean.assign(rid() + 1.0))
    assert float(mean) == 1.5
    s.run(lambda: first.assign(rid() + 5.0))
    assert float(first) == 5.0
    with pytest.raises(ValueError, match="AggregatingVariable .* inside strategy.run"):
        s.run(lambda: plain.assign_add(1.0))
    assert float(plain) == 0.0


def test_only_first_replica_in_mirrored_strategy(two_cpus):
    # The same aggregation path under MirroredStrategy (it used to miss _first_replica_value).
    s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with s.scope():
        first = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    s.run(
        lambda: first.assign(
            tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32) + 5
        )
    )
    assert [float(x) for x in first.values] == [5.0, 5.0]


def _train(strategy, steps=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8, 2)).astype(np.float32)
    with strategy.scope():
        model = tf.keras.Sequential(
            [tf.keras.layers.Dense(4, activation="tanh"), tf.keras.layers.Dense(2)]
        )
        model.build((None, 3))
        model.set_weights(
            [np.full(w.shape, 0.1 * (i + 1), np.float32) for i, w in enumerate(model.weights)]
        )
        opt = tf.keras.optimizers.SGD(0.1)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum((model(xb) - yb) ** 2, axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=8)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    data = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat(steps)
    )
    for xb, yb in data:
        strategy.run(step, args=(xb, yb))
    return [np.array(w.numpy()) for w in model.weights]


def test_sgd_matches_mirrored_strategy_and_one_device(two_cpus):
    central = _train(CSS(["/cpu:0", "/cpu:1"]))
    mirrored = _train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    single = _train(tf.distribute.OneDeviceStrategy("/cpu:0"))
    for c, m, o in zip(central, mirrored, single):
        np.testing.assert_allclose(c, m, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(c, o, rtol=1e-5, atol=1e-6)
    # Training changed the weights (the comparison is not between untouched values).
    assert not np.allclose(central[0], 0.1)


def test_constructor_errors(two_cpus):
    with pytest.raises(TypeError, match="list of device names"):
        CSS("/cpu:0")
    with pytest.raises(ValueError, match="cannot be empty"):
        CSS([])
    with pytest.raises(ValueError, match="No duplicates"):
        CSS(["/cpu:0", "/cpu:0"])
