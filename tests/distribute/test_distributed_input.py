"""DistributedDataset / DistributedIterator (TF's classes and methods), InputOptions,
InputReplicationMode, RunOptions. Expected values as TF 2.21 gives them."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.distribute.input_lib import PerReplicaSpec

CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


@pytest.fixture
def strategy(two_cpus):
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def _ds():
    return tf.data.Dataset.range(8).batch(4)


def test_distribute_dataset_returns_the_public_classes(strategy):
    dd = strategy.experimental_distribute_dataset(_ds())
    assert isinstance(dd, tf.distribute.DistributedDataset)
    it = iter(dd)
    assert isinstance(it, tf.distribute.DistributedIterator)
    spec = tf.TensorSpec([None], tf.int64)
    assert dd.element_spec == PerReplicaSpec(spec, spec)
    assert it.element_spec == dd.element_spec
    ff = strategy.distribute_datasets_from_function(lambda ctx: _ds())
    assert isinstance(ff, tf.distribute.DistributedDataset)
    one = tf.distribute.OneDeviceStrategy("/cpu:0").experimental_distribute_dataset(_ds())
    assert one.element_spec == tf.TensorSpec([None], tf.int64)


def test_get_next_optional_and_end(strategy):
    it = iter(strategy.experimental_distribute_dataset(_ds()))
    first = it.get_next_as_optional()
    assert bool(first.has_value())
    parts = strategy.experimental_local_results(first.get_value())
    assert [p.numpy().tolist() for p in parts] == [[0, 1], [2, 3]]
    second = it.get_next()
    assert [p.numpy().tolist() for p in second.values] == [[4, 5], [6, 7]]
    assert second.values[1].device == CPU1
    empty = it.get_next_as_optional()
    assert not bool(empty.has_value())
    with pytest.raises(tf.errors.OutOfRangeError):
        it.get_next()
    with pytest.raises(tf.errors.InvalidArgumentError):
        empty.get_value()


def test_reduce_folds_every_step(strategy):
    dd = strategy.experimental_distribute_dataset(_ds())
    total = dd.reduce(
        tf.constant(0, tf.int64),
        lambda state, x: state + strategy.reduce("SUM", x, axis=0),
    )
    assert int(total) == 28


def test_fetch_to_device_false_keeps_input_on_host(strategy):
    options = tf.distribute.InputOptions(experimental_fetch_to_device=False)
    x = next(iter(strategy.experimental_distribute_dataset(_ds(), options=options)))
    assert [v.device for v in x.values] == [CPU1.replace("CPU:1", "CPU:0")] * 2
    assert x.values[1].numpy().tolist() == [2, 3]


def test_input_options_defaults_and_checks(strategy):
    o = tf.distribute.InputOptions()
    assert o == (True, tf.distribute.InputReplicationMode.PER_WORKER, False, 1)
    assert [m.value for m in tf.distribute.InputReplicationMode] == ["PER_WORKER", "PER_REPLICA"]
    per_replica = tf.distribute.InputOptions(
        experimental_replication_mode=tf.distribute.InputReplicationMode.PER_REPLICA
    )
    with pytest.raises(NotImplementedError, match="distribute_datasets_from_function"):
        strategy.experimental_distribute_dataset(_ds(), options=per_replica)
    with pytest.raises(ValueError, match="PER_REPLICA"):
        strategy.experimental_distribute_dataset(
            _ds(), options=tf.distribute.InputOptions(experimental_place_dataset_on_device=True)
        )
    with pytest.raises(TypeError, match="InputOptions"):
        strategy.experimental_distribute_dataset(_ds(), options={"fetch": False})


def test_per_replica_mode_calls_dataset_fn_per_replica(strategy):
    contexts = []

    def dataset_fn(ctx):
        contexts.append((ctx.num_input_pipelines, ctx.input_pipeline_id))
        return tf.data.Dataset.range(4).shard(ctx.num_input_pipelines, ctx.input_pipeline_id)

    mode = tf.distribute.InputReplicationMode.PER_REPLICA
    dd = strategy.distribute_datasets_from_function(
        dataset_fn, options=tf.distribute.InputOptions(experimental_replication_mode=mode)
    )
    assert contexts == [(2, 0), (2, 1)]
    steps = [[int(v) for v in x.values] for x in dd]
    assert steps == [[0, 1], [2, 3]]
    spec = tf.TensorSpec([], tf.int64)
    assert dd.element_spec == PerReplicaSpec(spec, spec)


def test_run_options(strategy):
    r = tf.distribute.RunOptions()
    assert r == (True, False, None)
    out = strategy.run(lambda: tf.constant(1.0), options=r)
    assert [float(v) for v in out.values] == [1.0, 1.0]
    with pytest.raises(TypeError, match="RunOptions"):
        strategy.run(lambda: 1.0, options="fast")


def test_distributed_dataset_over_a_list_has_a_spec():
    s = tf.distribute.OneDeviceStrategy("/cpu:0")
    dd = s.experimental_distribute_dataset([np.zeros((2, 3), np.float32)])
    assert dd.element_spec == tf.TensorSpec([2, 3], tf.float32)
