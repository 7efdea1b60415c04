"""TF 1 Strategy methods, copying, experimental_set_strategy, partitioners, communication
options. Expected values as TF 2.21 gives them."""

import copy

import pytest

import layerflow as tf
from layerflow._src.distribute.values import MirroredVariable

P = tf.distribute.experimental.partitioners
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


@pytest.fixture
def strategy(two_cpus):
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def test_unwrap_group_experimental_run_make_dataset_iterator(strategy):
    with strategy.scope():
        v = tf.Variable(1.0)
    assert [x.numpy() for x in strategy.unwrap(v)] == [1.0, 1.0]
    ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    assert [int(x) for x in strategy.unwrap(ids)] == [0, 1]
    assert strategy.group(ids) is None
    t = tf.constant(1.0)
    assert strategy.group(t) is t
    it = strategy.make_dataset_iterator(tf.data.Dataset.range(8).batch(4))
    out = strategy.experimental_run(lambda x: x * 2, it)
    assert [p.numpy().tolist() for p in out.values] == [[0, 2], [4, 6]]
    ones = strategy.experimental_run(lambda: tf.constant(1.0))
    assert [float(p) for p in ones.values] == [1.0, 1.0]


def test_colocate_vars_with(two_cpus):
    s = tf.distribute.OneDeviceStrategy("/cpu:1")
    with s.scope():
        v = tf.Variable(1.0)
    with tf.device("/cpu:0"), s.scope(), s.colocate_vars_with(v):
        w = tf.Variable(2.0)
    assert v.device == CPU1 and w.device == CPU1
    m = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with m.scope():
        a = tf.Variable(1.0)
        with m.extended.colocate_vars_with(a):
            b = tf.Variable(2.0)
    assert isinstance(b, MirroredVariable) and b.devices == (CPU0, CPU1)
    with pytest.raises(ValueError, match="inside `with strategy.scope\\(\\)`"):
        s.colocate_vars_with(v)
    with s.scope(), pytest.raises(ValueError, match="not created in this strategy"):
        s.colocate_vars_with(a)


def test_configure(strategy):
    assert strategy.configure() is None
    assert strategy.configure(cluster_spec={"worker": ["a:1"]}) is None
    with pytest.raises(ValueError, match="MultiWorkerMirroredStrategy"):
        strategy.configure(cluster_spec={"worker": ["a:1", "b:1"]})


def test_copy_raises_and_deepcopy_shares_devices(strategy):
    with pytest.raises(RuntimeError, match="Must only deepcopy"):
        copy.copy(strategy)
    with strategy.scope():
        v = tf.Variable(3.0)
    twin = copy.deepcopy(strategy)
    assert twin is not strategy and type(twin) is type(strategy)
    assert twin.extended is not strategy.extended and twin.extended._container is twin
    assert twin.extended.worker_devices == strategy.extended.worker_devices
    assert twin.extended._devices[0] is strategy.extended._devices[0]
    assert not twin.extended.variable_created_in_scope(v)
    out = twin.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    assert [int(x) for x in out.values] == [0, 1]
    with pytest.raises(RuntimeError, match="single instance"):
        copy.deepcopy(tf.distribute.get_strategy())


def test_experimental_set_strategy():
    s = tf.distribute.OneDeviceStrategy("/cpu:0")
    tf.distribute.experimental_set_strategy(s)
    try:
        assert tf.distribute.get_strategy() is s and tf.distribute.has_strategy()
        other = tf.distribute.OneDeviceStrategy("/cpu:0")
        tf.distribute.experimental_set_strategy(other)
        assert tf.distribute.get_strategy() is other
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert not tf.distribute.has_strategy()
    with s.scope(), pytest.raises(RuntimeError, match="Must not be called inside"):
        tf.distribute.experimental_set_strategy(s)


@pytest.mark.parametrize(
    "partitioner, shape, dtype, axis, expected",
    [
        (P.FixedShardsPartitioner(2), [10, 3], tf.float32, 0, [2, 1]),
        (P.FixedShardsPartitioner(5), [3, 3], tf.float32, 0, [3, 1]),
        (P.FixedShardsPartitioner(4), [10, 8], tf.float32, 1, [1, 4]),
        (P.MinSizePartitioner(min_shard_bytes=4, max_shards=2), [6, 1], tf.float32, 0, [2, 1]),
        (P.MinSizePartitioner(min_shard_bytes=100, max_shards=10), [40, 3], tf.float64, 0, [10, 1]),
        (P.MinSizePartitioner(min_shard_bytes=100, max_shards=10), [40, 3], tf.string, 1, [1, 3]),
        (P.MinSizePartitioner(), [1000, 1000], tf.float32, 0, [1, 1]),
        (P.MaxSizePartitioner(max_shard_bytes=8), [6, 1], tf.float32, 0, [3, 1]),
        (P.MaxSizePartitioner(max_shard_bytes=100, max_shards=3), [40, 3], tf.float64, 0, [3, 1]),
        (P.MaxSizePartitioner(max_shard_bytes=1000), [40, 3], tf.string, 1, [1, 3]),
        (P.MaxSizePartitioner(max_shard_bytes=7), [10, 4], tf.int16, 0, [10, 1]),
    ],
)
def test_partitioners_match_tf(partitioner, shape, dtype, axis, expected):
    assert partitioner(tf.TensorShape(shape), dtype, axis=axis) == expected
    assert isinstance(partitioner, P.Partitioner)


def test_partitioner_errors():
    with pytest.raises(ValueError, match="min_shard_bytes"):
        P.MinSizePartitioner(min_shard_bytes=0)
    with pytest.raises(ValueError, match="max_shards"):
        P.MaxSizePartitioner(max_shard_bytes=8, max_shards=0)
    with pytest.raises(ValueError, match="fully defined"):
        P.FixedShardsPartitioner(2)(tf.TensorShape([None, 3]), tf.float32)
    with pytest.raises(ValueError, match="along axis 2"):
        P.MinSizePartitioner()(tf.TensorShape([4, 3]), tf.float32, axis=2)
    with pytest.raises(NotImplementedError):
        P.Partitioner()(tf.TensorShape([4]), tf.float32)


def test_communication_options():
    E = tf.distribute.experimental
    assert E.CollectiveCommunication is E.CommunicationImplementation
    assert [m.value for m in E.CommunicationImplementation] == ["AUTO", "RING", "NCCL"]
    o = E.CommunicationOptions(bytes_per_pack=1024, implementation="nccl")
    assert o.implementation is E.CommunicationImplementation.NCCL
    assert str(o) == (
        "Options(bytes_per_pack=1024,timeout_seconds=None, "
        "implementation=CommunicationImplementation.NCCL)"
    )
    merged = E.CommunicationOptions(timeout_seconds=5.0).merge(o)
    assert (merged.bytes_per_pack, merged.timeout_seconds, merged.implementation) == (
        1024,
        5.0,
        E.CommunicationImplementation.NCCL,
    )
    hints = E.CollectiveHints(bytes_per_pack=3)
    assert isinstance(hints, E.CommunicationOptions) and hints.bytes_per_pack == 3
    with pytest.raises(ValueError, match="bytes_per_pack"):
        E.CommunicationOptions(bytes_per_pack=-1)
    with pytest.raises(ValueError, match="implementation"):
        E.CommunicationOptions(implementation=3)
    with pytest.raises(ValueError, match="Unknown communication implementation"):
        E.CommunicationOptions(implementation="tcp")
