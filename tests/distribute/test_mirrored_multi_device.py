"""MirroredStrategy over two logical CPU devices: real multi-device code on a CPU-only machine."""

import logging
import threading

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.distribute.train_step import distributed_train_step
from layerflow._src.distribute.values import MirroredVariable, PerReplica

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


@pytest.fixture
def strategy(two_cpus):
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def test_warns_about_non_gpu_devices_and_logs_both(two_cpus, caplog):
    with caplog.at_level(logging.INFO, logger="layerflow"):
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert "non-GPU devices" in caplog.text
    assert f"Using MirroredStrategy with devices ('{CPU0}', '{CPU1}')" in caplog.text
    assert s.num_replicas_in_sync == 2
    assert isinstance(s.extended._cross_device_ops, tf.distribute.ReductionToOneDevice)


def test_mirrored_variable_has_a_private_copy_per_device(strategy):
    with strategy.scope():
        v = tf.Variable([1.0, 2.0, 3.0])
    assert v.device == CPU0
    assert v.devices == (CPU0, CPU1)
    a, b = v._copies
    assert a is not b and not np.shares_memory(a, b)
    v.assign([4.0, 5.0, 6.0])
    v[0].assign(7.0)
    v.assign_sub([1.0, 1.0, 1.0])
    for part in v.values:
        np.testing.assert_array_equal(part.numpy(), [6.0, 4.0, 5.0])
    assert [p.device for p in strategy.experimental_local_results(v)] == [CPU0, CPU1]


def test_bad_assign_changes_no_copy(strategy):
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        v.assign([1.0, 2.0, 3.0])
    for part in v.values:
        np.testing.assert_array_equal(part.numpy(), [1.0, 2.0])


def test_run_places_each_replica_on_its_device_and_reads_its_copy(strategy):
    with strategy.scope():
        v = tf.Variable(10.0)
    v._copies[1][...] = 20.0  # make the copies distinguishable to see which one is read

    def fn():
        ctx = tf.distribute.get_replica_context()
        return tf.ones(()) * v + tf.cast(ctx.replica_id_in_sync_group, tf.float32), v.device

    out, where = strategy.run(fn)
    assert isinstance(out, PerReplica)
    assert [float(t) for t in out.values] == [10.0, 21.0]
    assert [t.device for t in out.values] == [CPU0, CPU1]
    assert where.values == (CPU0, CPU1)
    assert v.device == CPU0 and float(v) == 10.0  # outside run: the primary


def test_replicas_run_in_parallel_threads(strategy):
    barrier = threading.Barrier(2, timeout=10)
    names = strategy.run(lambda: (barrier.wait(), threading.current_thread().name)[1])
    assert sorted(names.values) == ["replica_0", "replica_1"]


def test_all_reduce_sum_and_mean(strategy):
    def fn():
        i = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        x = tf.stack([i + 1.0, 10.0 * (i + 1.0)])
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("SUM", x), ctx.all_reduce(tf.distribute.ReduceOp.MEAN, {"x": x})

    total, mean = strategy.run(fn)
    for t, d in zip(total.values, (CPU0, CPU1)):
        np.testing.assert_array_equal(t.numpy(), [3.0, 30.0])
        assert t.device == d
    for t in mean["x"].values:
        np.testing.assert_array_equal(t.numpy(), [1.5, 15.0])


def test_all_gather_and_gather(strategy):
    per = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.fill((1, 2), float(ctx.replica_id_in_sync_group))
    )
    assert [p.device for p in per.values] == [CPU0, CPU1]
    np.testing.assert_array_equal(strategy.gather(per, axis=0).numpy(), [[0, 0], [1, 1]])
    out = strategy.run(lambda x: tf.distribute.get_replica_context().all_gather(x, 0), args=(per,))
    for t in out.values:
        np.testing.assert_array_equal(t.numpy(), [[0, 0], [1, 1]])


def test_strategy_reduce(strategy):
    per = PerReplica([tf.constant([1.0, 2.0, 3.0]), tf.constant([4.0])])
    # Different shapes never broadcast against each other: both sides are named.
    for op in ("SUM", "MEAN"):
        with pytest.raises(ValueError, match=r"replica 0 has float32 \(3,\) and replica 1 has "):
            strategy.reduce(op, per, axis=None)
    with pytest.raises(ValueError, match=r"float32 \(2,\) and replica 1 has float64 \(2,\)"):
        strategy.reduce(
            "SUM",
            PerReplica([tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0], tf.float64)]),
            axis=None,
        )
    assert float(strategy.reduce("SUM", per, axis=0)) == 10.0
    # MEAN along an axis is the mean over all elements of all replicas, not a mean of means.
    assert float(strategy.reduce("MEAN", per, axis=0)) == 2.5
    with pytest.raises(ValueError, match="non-DistributedValues"):
        strategy.reduce("SUM", tf.constant(1.0), axis=None)
    assert float(strategy.reduce("MEAN", tf.constant(1.0), axis=None)) == 1.0


@pytest.mark.parametrize(
    "ops",
    [
        tf.distribute.ReductionToOneDevice(),
        tf.distribute.HierarchicalCopyAllReduce(),
        tf.distribute.NcclAllReduce(),
    ],
)
def test_cross_device_ops_agree(two_cpus, ops, caplog):
    s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"], cross_device_ops=ops)
    per = PerReplica([tf.constant([1.0, 2.0]), tf.constant([3.0, 5.0])])
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        np.testing.assert_array_equal(s.reduce("SUM", per, axis=None).numpy(), [4.0, 7.0])
        np.testing.assert_array_equal(s.reduce("MEAN", per, axis=None).numpy(), [2.0, 3.5])
    if isinstance(ops, tf.distribute.NcclAllReduce):
        assert "not using nccl" in caplog.text  # CPUs: falls back to one device, and says so


def test_distribute_dataset_splits_global_batches(strategy):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(5, dtype=np.int32)
    batches = list(strategy.experimental_distribute_dataset([(x, y), (x[:1], y[:1])]))
    assert len(batches) == 2
    bx, by = batches[0]
    assert [t.shape for t in bx.values] == [(3, 2), (2, 2)]
    assert [t.device for t in bx.values] == [CPU0, CPU1]
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in by.values]), y)
    lx, _ = batches[1]  # a last batch smaller than the replicas: one empty slice, nothing lost
    assert [t.shape[0] for t in lx.values] == [1, 0]
    with pytest.raises(ValueError, match="scalar"):
        list(strategy.experimental_distribute_dataset([tf.constant(1.0)]))


def test_distribute_datasets_from_function(strategy):
    seen = []

    def dataset_fn(ctx):
        seen.append(ctx.num_replicas_in_sync)
        return [np.full((2,), k, np.float32) for k in range(3)]

    steps = list(strategy.distribute_datasets_from_function(dataset_fn))
    assert seen == [2]
    assert [[float(t.numpy()[0]) if t.shape[0] else None for t in s.values] for s in steps] == [
        [0.0, 1.0],
        [2.0, None],
    ]


def _data():
    # Dyadic values: every sum below is exact in float64, so "equal" means bit-equal.
    x = (np.arange(24, dtype=np.float64).reshape(8, 3) - 11) / 4
    y = (np.arange(16, dtype=np.float64).reshape(8, 2) % 5) / 8
    return x, y


def _make_vars():
    return (
        tf.Variable(((np.arange(6, dtype=np.float64).reshape(3, 2)) - 2) / 2, name="w"),
        tf.Variable(np.array([0.5, -0.25]), name="b"),
    )


def _loss(x, y, w, b):
    h = tf.nn.relu(tf.matmul(x, w) + b)
    return tf.reduce_mean(tf.reduce_sum((h - y) ** 2, axis=1))


def test_replica_gradients_all_reduce_to_the_full_batch_gradient(strategy):
    x, y = _data()
    ref_w, ref_b = _make_vars()
    with tf.GradientTape() as tape:
        ref_loss = _loss(tf.constant(x), tf.constant(y), ref_w, ref_b)
    ref = tape.gradient(ref_loss, [ref_w, ref_b])
    with strategy.scope():
        w, b = _make_vars()

    def step(xs, ys):
        with tf.GradientTape() as tape:
            loss = _loss(xs, ys, w, b) / strategy.num_replicas_in_sync
        grads = tape.gradient(loss, [w, b])
        assert grads[0].device == xs.device  # computed where the replica runs
        return tf.distribute.get_replica_context().all_reduce("SUM", grads), loss

    (batch,) = list(strategy.experimental_distribute_dataset([(x, y)]))
    grads, loss = strategy.run(step, args=batch)
    for got, want in zip(grads, ref):
        assert [t.device for t in got.values] == [CPU0, CPU1]
        for t in got.values:
            np.testing.assert_array_equal(t.numpy(), want.numpy())
    assert float(strategy.reduce("SUM", loss, axis=None)) == float(ref_loss)


def test_distributed_train_step_matches_single_device_sgd(strategy):
    x, y = _data()
    ref_w, ref_b = _make_vars()
    with strategy.scope():
        w, b = _make_vars()

    def sgd(variables):
        return lambda pairs: [v.assign_sub(0.125 * g) for g, v in pairs]

    dataset = strategy.experimental_distribute_dataset([(x, y)] * 3)
    for batch in dataset:
        loss = distributed_train_step(
            strategy, lambda xs, ys: _loss(xs, ys, w, b), [w, b], sgd([w, b]), batch
        )
        with tf.GradientTape() as tape:
            ref_loss = _loss(tf.constant(x), tf.constant(y), ref_w, ref_b)
        for g, v in zip(tape.gradient(ref_loss, [ref_w, ref_b]), [ref_w, ref_b]):
            v.assign_sub(0.125 * g)
        assert float(loss) == float(ref_loss)
    for got, want in ((w, ref_w), (b, ref_b)):
        for part in got.values:  # every copy took the same update
            np.testing.assert_array_equal(part.numpy(), want.numpy())


def test_variable_created_inside_run_is_one_mirrored_variable(strategy):
    made = strategy.run(lambda: tf.Variable(3.0))
    assert isinstance(made, MirroredVariable) and made.devices == (CPU0, CPU1)


def test_assign_inside_run_needs_an_aggregation(strategy):
    with strategy.scope():
        plain = tf.Variable(0.0)
        mean = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
        total = tf.Variable(0.0, aggregation=tf.VariableAggregation.SUM)
    with pytest.raises(ValueError, match="aggregation"):
        strategy.run(lambda: plain.assign(1.0))

    def fn():
        i = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        mean.assign(i + 1.0)
        total.assign_add(i + 1.0)

    strategy.run(fn)
    assert [float(p) for p in mean.values] == [1.5, 1.5]
    assert [float(p) for p in total.values] == [3.0, 3.0]
    assert [float(p) for p in plain.values] == [0.0, 0.0]


def test_error_in_one_replica_reaches_the_caller_without_deadlock(strategy):
    def fn():
        ctx = tf.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 1:
            raise KeyError("boom in replica 1")
        return ctx.all_reduce("SUM", tf.constant(1.0))

    with pytest.raises(KeyError, match="boom"):
        strategy.run(fn)


def test_mismatched_collectives_are_reported(strategy):
    def fn():
        ctx = tf.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 0:
            return ctx.all_reduce("SUM", tf.constant(1.0))
        return None

    with pytest.raises(RuntimeError, match="same collective calls"):
        strategy.run(fn)


def test_ops_across_logical_devices(two_cpus):
    with tf.device("/CPU:1"):
        a = tf.ones((2, 2))
    with tf.device("/CPU:0"):
        b = tf.ones((2, 2)) * 2.0
    assert a.device == CPU1 and b.device == CPU0
    c = a + b
    np.testing.assert_array_equal(c.numpy(), np.full((2, 2), 3.0))
    with tf.device("/CPU:1"):
        d = b * 2.0
    assert d.device == CPU1
