"""Checkpoint sharding: tf.train.experimental.{ShardingCallback, ShardableTensor,
ShardByTaskPolicy, MaxShardSizePolicy} and CheckpointOptions(experimental_sharding_callback)."""

import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layerflow as tf
from layerflow._src.saving import sharded_file, sharding, weights_file

ST = tf.train.experimental


def _options(callback, **kwargs):
    return tf.train.CheckpointOptions(experimental_sharding_callback=callback, **kwargs)


def _model():
    rng = np.random.default_rng(0)
    return {
        "v": tf.Variable(rng.standard_normal((4, 6)).astype(np.float32)),
        "u": tf.Variable(rng.standard_normal((3, 4, 5))),  # float64
        "w": tf.Variable(3.0),
        "i": tf.Variable(np.arange(7, dtype=np.int32)),
        "e": tf.Variable(np.zeros((0, 3), np.float32)),
    }


def _data_files(folder):
    return sorted(f for f in os.listdir(folder) if ".data-" in f)


def _zero(variables):
    saved = {k: v.numpy().copy() for k, v in variables.items()}
    for v in variables.values():
        v.assign(np.zeros(v.shape, v.dtype.as_numpy_dtype))
    return saved


@pytest.mark.parametrize("limit", [8, 20, 40, 100, 10_000])
def test_max_shard_size_round_trip_and_file_sizes(tmp_path, limit):
    variables = _model()
    ckpt = tf.train.Checkpoint(**variables)
    path = ckpt.save(str(tmp_path / "ck"), options=_options(ST.MaxShardSizePolicy(limit)))
    files = _data_files(tmp_path)
    total = sum(os.path.getsize(tmp_path / f) for f in files)
    assert total == 96 + 480 + 4 + 28 + 0 + 8  # the tensor bytes, nothing more
    assert max(os.path.getsize(tmp_path / f) for f in files) <= limit
    assert len(files) >= -(-total // limit)
    saved = _zero(variables)
    ckpt.restore(path).assert_consumed()
    for k, v in variables.items():
        np.testing.assert_array_equal(v.numpy(), saved[k])
        np.testing.assert_array_equal(tf.train.load_variable(path, k), saved[k])
    assert dict(tf.train.list_variables(str(tmp_path))) == {
        "e": [0, 3], "i": [7], "save_counter": [], "u": [3, 4, 5], "v": [4, 6], "w": [],
    }  # fmt: skip
    assert tf.train.load_checkpoint(path).get_variable_to_dtype_map()["u"] == tf.float64


def test_tensors_larger_than_a_shard_are_sliced(tmp_path):
    v = tf.Variable(np.arange(24, dtype=np.float32).reshape(4, 6))
    path = tf.train.Checkpoint(v=v).write(
        str(tmp_path / "c"), options=_options(ST.MaxShardSizePolicy(40))
    )
    header, info = weights_file.read_header(path)
    assert header == {}  # the index holds no tensors
    slices = info["sharded"]["tensors"]["v"]["slices"]
    assert len(slices) >= 3 and all(spec.startswith("4 6 ") for _, _, spec, _ in slices)
    v.assign(tf.zeros((4, 6)))
    tf.train.Checkpoint(v=v).read(path).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), np.arange(24).reshape(4, 6))
    view = tf.train.CheckpointView(path)
    assert view.children(0) == {"save_counter": 1, "v": 2}


def test_element_larger_than_the_limit_is_its_own_shard_with_a_warning(tmp_path):
    u = tf.Variable(np.arange(6, dtype=np.float64))
    with pytest.warns(UserWarning, match="exceeds the size"):
        path = tf.train.Checkpoint(u=u).write(
            str(tmp_path / "c"), options=_options(ST.MaxShardSizePolicy(4))
        )
    assert len(_data_files(tmp_path)) == 7  # six elements, and save_counter
    np.testing.assert_array_equal(tf.train.load_variable(path, "u"), np.arange(6))


def test_shard_by_task_policy_one_file_per_task(tmp_path):
    variables = _model()
    ckpt = tf.train.Checkpoint(**variables)
    path = ckpt.save(str(tmp_path / "ck"), options=_options(ST.ShardByTaskPolicy()))
    assert len(_data_files(tmp_path)) == 1  # one process: every variable is on task 0
    saved = _zero(variables)
    ckpt.restore(path).assert_consumed()
    for k, v in variables.items():
        np.testing.assert_array_equal(v.numpy(), saved[k])
    assert ST.ShardByTaskPolicy().description == (
        "Split tensors into shards based on their device spec task."
    )


def _shardable(key, value, device="/job:localhost/replica:0/task:0/device:CPU:0"):
    t = tf.constant(value)
    return sharding.ShardableTensor(None, t, t.dtype, tf.DeviceSpec.from_string(device), key,
                                    t.shape, "", key, None)  # fmt: skip


def test_shards_mixing_tasks_are_refused():
    class Task1Tensor:  # a value on task 1
        shape, dtype, device = (1,), tf.float32, "/job:worker/replica:0/task:1/device:CPU:0"

    a = _shardable("a", [1.0])
    b = _shardable("b", [2.0], "/job:worker/replica:0/task:1/device:CPU:0")
    b = sharding.ShardableTensor(None, Task1Tensor(), tf.float32, b.device, "b", b.shape, "",
                                 "b", None)  # fmt: skip

    with pytest.raises(RuntimeError, match="different tasks were found in the same shard"):
        sharding.validate_shards([{"a": {"": a.tensor}, "b": {"": Task1Tensor()}}],
                                 [a, b], "mixed")  # fmt: skip
    with pytest.raises(RuntimeError, match="altered task"):
        sharding.validate_shards([{"a": {"": Task1Tensor()}}], [a], "moved")
    assert sharding.task_of(b.device) == ("worker", 0, 1)


class OnePerTensor(ST.ShardingCallback):
    def __init__(self):
        self.seen = []

    @property
    def description(self):
        return "one shard per tensor"

    def __call__(self, shardable_tensors):
        self.seen.extend(shardable_tensors)
        return [{t.checkpoint_key: {t.slice_spec: t.tensor}} for t in shardable_tensors]


def test_custom_callback(tmp_path):
    variables = _model()
    ckpt = tf.train.Checkpoint(**variables)
    callback = OnePerTensor()
    path = ckpt.save(str(tmp_path / "ck"), options=_options(callback))
    assert len(_data_files(tmp_path)) == 6
    by_key = {t.checkpoint_key: t for t in callback.seen}
    assert set(by_key) == {"v", "u", "w", "i", "e", "save_counter"}
    v = by_key["v"]
    assert v.trackable is variables["v"] and v.slice_spec == "" and v.dtype == tf.float32
    assert v.shape == tf.TensorShape([4, 6]) and v.device.device_type == "CPU"
    assert "checkpoint_key='v'" in repr(v)
    saved = _zero(variables)
    ckpt.restore(path).assert_consumed()
    np.testing.assert_array_equal(variables["u"].numpy(), saved["u"])


def test_sharding_callback_is_abstract_and_options_check_the_type():
    with pytest.raises(TypeError):
        ST.ShardingCallback()
    with pytest.raises(ValueError, match="must be of type ShardingCallback"):
        tf.train.CheckpointOptions(experimental_sharding_callback=lambda tensors: tensors)
    with pytest.raises(ValueError, match="positive"):
        ST.MaxShardSizePolicy(0)
    policy = ST.MaxShardSizePolicy(64)
    assert policy.description == "Split tensors into shards with a max shard size."
    assert _options(policy).experimental_sharding_callback is policy
    assert hash(policy) == hash(ST.MaxShardSizePolicy(64)) != hash(ST.MaxShardSizePolicy(65))


class Bad(ST.ShardingCallback):
    def __init__(self, kind):
        self.kind = kind

    @property
    def description(self):
        return f"bad {self.kind}"

    def __call__(self, shardable_tensors):
        d = {t.checkpoint_key: {t.slice_spec: t.tensor} for t in shardable_tensors}
        if self.kind == "drop":
            del d["w"]
        elif self.kind == "add":
            d["zzz"] = {"": tf.constant(1.0)}
        elif self.kind == "shape":
            d["v"] = {"": tf.zeros((2, 2))}
        elif self.kind == "dtype":
            d["w"] = {"": tf.constant(3, tf.int32)}
        elif self.kind == "duplicate":
            return [d, {"w": {"": d["w"][""]}}]
        elif self.kind == "overlap":
            full = d["v"][""]
            d["v"] = {"4 6 0,3:0,6": full[0:3], "4 6 2,2:0,6": full[2:4]}
        elif self.kind == "partial":
            d["v"] = {"4 6 0,3:0,6": d["v"][""][0:3]}
        elif self.kind == "spec":
            d["v"] = {"4 6 0,9:0,6": d["v"][""]}
        elif self.kind == "not a list":
            return d
        return [d]


@pytest.mark.parametrize(
    "kind, error, match",
    [
        ("drop", RuntimeError, "were not found in the checkpoint shards"),
        ("add", RuntimeError, "not originally in the object graph"),
        ("shape", RuntimeError, "altered shape"),
        ("dtype", RuntimeError, "altered dtype"),
        ("duplicate", RuntimeError, "same checkpoint key and slice spec"),
        ("overlap", RuntimeError, "overlap"),
        ("partial", RuntimeError, "cover 18 of the 24 elements"),
        ("spec", RuntimeError, "invalid slice spec"),
        ("not a list", TypeError, "must return a list of shards"),
    ],
)
def test_bad_callback_output_is_refused_before_anything_is_written(tmp_path, kind, error, match):
    ckpt = tf.train.Checkpoint(v=tf.Variable(tf.zeros((4, 6))), w=tf.Variable(1.0))
    with pytest.raises(error, match=match) as info:
        ckpt.save(str(tmp_path / "ck"), options=_options(Bad(kind)))
    if error is RuntimeError:
        assert f"callback_description: bad {kind}" in str(info.value)
    assert os.listdir(tmp_path) == []
    assert int(ckpt.save_counter) == 0


def _tamper(path, edit):
    _, info = weights_file.read_header(path)
    edit(info["sharded"])
    weights_file.write(path, {}, info, format_version=sharded_file.INDEX_VERSION)


@pytest.mark.parametrize("name", ["../outside", "/etc/passwd", "sub/x", "..", ""])
def test_index_naming_a_file_outside_the_folder_is_refused(tmp_path, name):
    folder = tmp_path / "ck"
    (tmp_path / "outside").write_bytes(b"\0" * 24)
    v = tf.Variable(tf.ones((2, 3)))
    path = tf.train.Checkpoint(v=v).write(str(folder / "c"), options=_options(OnePerTensor()))
    _tamper(path, lambda s: s["files"][0].update(name=name))
    with pytest.raises(ValueError, match="not a file name inside the checkpoint's folder"):
        tf.train.Checkpoint(v=v).restore(path)
    with pytest.raises(ValueError, match="inside the checkpoint's folder"):
        tf.train.load_checkpoint(path)
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda s: s["files"][0].update(bytes=10**12), "should hold 1000000000000 bytes"),
        (lambda s: s["tensors"]["v"]["slices"][0].__setitem__(2, "2 3 0,1:0,3"), "tile"),
        (lambda s: s["tensors"]["v"].update(shape=[10**6, 10**6]), "its slices use 4000000000000"),
        (lambda s: s["tensors"]["v"]["slices"][0].__setitem__(1, 4), "start at 4"),
        (lambda s: s["tensors"]["v"]["slices"][0].__setitem__(0, 7), "names data file 7"),
        (lambda s: s["tensors"]["v"].update(dtype="X"), "unknown dtype"),
        (lambda s: s.update(files="x"), "lists no data files"),
    ],
)
def test_damaged_index_is_refused(tmp_path, edit, match):
    v = tf.Variable(tf.ones((2, 3)))
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "c"), options=_options(OnePerTensor()))
    _tamper(path, edit)
    v.assign(tf.zeros((2, 3)))
    with pytest.raises(weights_file.WeightsFileError, match=match):
        tf.train.Checkpoint(v=v).restore(path)
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 3)))


def test_damaged_or_missing_data_file_is_refused(tmp_path):
    v = tf.Variable(tf.ones((2, 3)))
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "c"), options=_options(OnePerTensor()))
    data = [tmp_path / f for f in _data_files(tmp_path)]
    biggest = max(data, key=os.path.getsize)
    raw = bytearray(biggest.read_bytes())
    raw[5] ^= 0xFF
    biggest.write_bytes(bytes(raw))
    v.assign(tf.zeros((2, 3)))
    with pytest.raises(weights_file.WeightsFileError, match="fails its checksum"):
        tf.train.Checkpoint(v=v).restore(path)
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 3)))
    biggest.write_bytes(bytes(raw[:-4]))
    with pytest.raises(weights_file.WeightsFileError, match="has 20 bytes, the index says 24"):
        tf.train.load_checkpoint(path)
    biggest.unlink()
    with pytest.raises(weights_file.WeightsFileError, match="is missing"):
        tf.train.load_checkpoint(path)


def test_unsharded_format_is_unchanged(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ck"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ck-1"]
    header, info = weights_file.read_header(path)
    assert set(header) == {"v", "save_counter"} and info["format_version"] == 1
    assert "sharded" not in info


def test_rewriting_a_path_removes_the_old_data_files(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(tf.ones((4, 6))))
    path = str(tmp_path / "c")
    ckpt.write(path, options=_options(ST.MaxShardSizePolicy(40)))
    first = _data_files(tmp_path)
    ckpt.write(path, options=_options(ST.MaxShardSizePolicy(50)))
    second = _data_files(tmp_path)
    assert second and not set(first) & set(second)
    ckpt.write(path)  # unsharded now: the data files go
    assert _data_files(tmp_path) == []
    np.testing.assert_array_equal(tf.train.load_variable(path, "v"), np.ones((4, 6)))


def test_manager_rotation_deletes_data_files_and_async_saves(tmp_path):
    v = tf.Variable(tf.zeros((4, 6)))
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1)
    for step in range(3):
        v.assign(tf.fill((4, 6), float(step)))
        manager.save(options=_options(ST.MaxShardSizePolicy(40), enable_async=True))
    manager.sync()
    assert sorted(f for f in os.listdir(tmp_path) if ".data-" not in f) == ["checkpoint", "ckpt-3"]
    assert all(f.startswith("ckpt-3.data-") for f in _data_files(tmp_path))
    v.assign(tf.zeros((4, 6)))
    ckpt.restore(manager.latest_checkpoint).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), np.full((4, 6), 2.0))


def test_keras_model_round_trip_through_shards(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(5), tf.keras.layers.Dense(2)])
    model(tf.ones((1, 3)))
    path = tf.train.Checkpoint(model=model).write(
        str(tmp_path / "m"), options=_options(ST.MaxShardSizePolicy(16))
    )
    fresh = tf.keras.Sequential([tf.keras.layers.Dense(5), tf.keras.layers.Dense(2)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.train.Checkpoint(model=fresh).restore(path)
    fresh(tf.ones((1, 3)))  # deferred restore runs on build
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@settings(max_examples=60, deadline=None)
@given(
    shapes=st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=3), min_size=1, max_size=4),
    limit=st.integers(8, 200),
)
def test_max_shard_size_policy_tiles_every_tensor_within_the_limit(shapes, limit):
    tensors = [
        _shardable(f"t{i}", np.arange(int(np.prod(s)), dtype=np.float64).reshape(s) + i)
        for i, s in enumerate(shapes)
    ]
    shards = ST.MaxShardSizePolicy(limit)(tensors)
    sharding.validate_shards(shards, tensors, "property")  # every tensor tiled exactly once
    for shard in shards:
        assert sum(np.asarray(t).nbytes for d in shard.values() for t in d.values()) <= limit
    for t in tensors:
        full = np.full(t.shape, -1.0)
        for shard in shards:
            for spec, value in shard.get(t.checkpoint_key, {}).items():
                _, off, shp = sharding.parse_spec(spec, list(t.shape))
                full[tuple(slice(o, o + s) for o, s in zip(off, shp))] = np.asarray(value)
        np.testing.assert_array_equal(full, np.asarray(t.tensor))
