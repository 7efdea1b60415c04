"""Strategies on one device: the default strategy, contexts, OneDeviceStrategy, errors."""

import logging

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.distribute.values import MirroredVariable, PerReplica

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_default_strategy_and_contexts():
    s = tf.distribute.get_strategy()
    assert s.num_replicas_in_sync == 1
    assert not tf.distribute.has_strategy()
    assert not tf.distribute.in_cross_replica_context()
    ctx = tf.distribute.get_replica_context()
    assert ctx is not None and ctx.num_replicas_in_sync == 1
    assert int(ctx.replica_id_in_sync_group) == 0
    assert s.run(lambda x, y: x * y, args=(tf.constant(3.0),), kwargs={"y": 2.0}).numpy() == 6.0
    assert float(s.reduce(tf.distribute.ReduceOp.SUM, tf.constant(5.0), axis=None)) == 5.0


def test_scope_switches_context_and_strategy():
    s = tf.distribute.MirroredStrategy(["/cpu:0"])
    with s.scope():
        assert tf.distribute.get_strategy() is s
        assert tf.distribute.has_strategy()
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None

        def fn():
            assert not tf.distribute.in_cross_replica_context()
            return tf.distribute.get_replica_context().strategy

        assert s.run(fn) is s
    assert tf.distribute.get_strategy() is not s


def test_mirrored_strategy_logs_devices_like_tf(caplog):
    with caplog.at_level(logging.INFO, logger="layerflow"):
        s = tf.distribute.MirroredStrategy()
    assert f"Using MirroredStrategy with devices ('{CPU0}',)" in caplog.text
    assert s.extended.worker_devices == (CPU0,)


def test_variables_in_scope_are_mirrored_and_report_primary_device():
    s = tf.distribute.MirroredStrategy()
    with s.scope():
        v = tf.Variable([1.0, 2.0], name="w")
    outside = tf.Variable(1.0)
    assert isinstance(v, MirroredVariable) and isinstance(v, tf.Variable)
    assert not isinstance(outside, MirroredVariable)
    assert v.device == CPU0 and v.name == "w:0"
    assert s.extended.variable_created_in_scope(v)
    assert not s.extended.variable_created_in_scope(outside)
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])


def test_one_device_strategy_places_variables_and_runs():
    s = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert s.extended.worker_devices == (CPU0,)
    with s.scope():
        v = tf.Variable(2.0)
    assert v.device == CPU0
    out = s.run(lambda x: v * x, args=(tf.constant(4.0),))
    assert float(out) == 8.0
    batches = list(s.experimental_distribute_dataset([np.ones((4, 2), np.float32)]))
    assert batches[0].device == CPU0 and batches[0].shape == (4, 2)


def test_reduce_with_axis_on_one_replica():
    s = tf.distribute.OneDeviceStrategy("/cpu:0")
    x = tf.constant([[1.0, 2.0], [3.0, 6.0]])
    np.testing.assert_allclose(s.reduce("SUM", x, axis=0).numpy(), [4.0, 8.0])
    np.testing.assert_allclose(s.reduce("mean", x, axis=0).numpy(), [2.0, 4.0])


def test_reduce_op_is_checked():
    with pytest.raises(ValueError, match="ReduceOp.SUM or"):
        tf.distribute.get_strategy().reduce("MAX", tf.constant(1.0), axis=None)
    assert tf.distribute.ReduceOp("SUM") is tf.distribute.ReduceOp.SUM
    agg = tf.VariableAggregation.MEAN
    assert tf.distribute.ReduceOp.from_variable_aggregation(agg) is tf.distribute.ReduceOp.MEAN


def test_bad_devices_are_reported():
    with pytest.raises(ValueError, match="No duplicates"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/device:CPU:0"])
    with pytest.raises(ValueError, match="cannot be empty"):
        tf.distribute.MirroredStrategy([])
    with pytest.raises(ValueError, match="'/gpu:3' does not exist"):
        tf.distribute.MirroredStrategy(["/gpu:3"])
    with pytest.raises(TypeError, match="list of device names"):
        tf.distribute.MirroredStrategy("/cpu:0")
    with pytest.raises(TypeError, match="CrossDeviceOps"):
        tf.distribute.MirroredStrategy(["/cpu:0"], cross_device_ops="nccl")


def test_mixing_strategies_is_an_error():
    a = tf.distribute.MirroredStrategy(["/cpu:0"])
    b = tf.distribute.OneDeviceStrategy("/cpu:0")
    with a.scope():
        with pytest.raises(ValueError, match="Mixing different"):
            with b.scope():
                pass
        with a.scope():  # re-entering the same strategy is fine
            assert tf.distribute.get_strategy() is a


def test_reduce_and_run_need_cross_replica_context():
    s = tf.distribute.MirroredStrategy(["/cpu:0"])

    def fn():
        s.reduce("SUM", tf.constant(1.0), axis=None)

    with pytest.raises(RuntimeError, match="cross-replica context"):
        s.run(fn)


def test_per_replica_has_no_truth_value_and_prints_parts():
    p = PerReplica([tf.constant(1.0), tf.constant(2.0)])
    with pytest.raises(TypeError, match="ambiguous"):
        bool(p)
    assert "PerReplica:{" in repr(p) and "1:" in repr(p)


def test_merge_call_on_one_replica_runs_in_cross_replica_context():
    s = tf.distribute.MirroredStrategy(["/cpu:0"])
    seen = []

    def merge(strategy, x):
        seen.append((strategy, tf.distribute.in_cross_replica_context()))
        return x + 1.0

    out = s.run(lambda: tf.distribute.get_replica_context().merge_call(merge, args=(1.0,)))
    assert out == 2.0 and seen == [(s, True)]


def test_input_context_batch_size():
    ctx = tf.distribute.InputContext(num_replicas_in_sync=4)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="not divisible"):
        ctx.get_per_replica_batch_size(10)


def test_cluster_resolver_is_none_for_single_process_strategies(two_cpus):
    assert tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"]).cluster_resolver is None
    assert tf.distribute.get_strategy().cluster_resolver is None
    assert tf.distribute.OneDeviceStrategy("/cpu:0").cluster_resolver is None


def test_mpi_cluster_resolver_has_tf_accessors():
    from layerflow._src.distribute.multi_worker import MPIClusterResolver

    r = MPIClusterResolver(task_id=1, num_workers=3)
    assert (r.task_type, r.task_id, r.num_accelerators(), r.master()) == ("worker", 1, {}, "")
