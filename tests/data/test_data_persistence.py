"""Dataset.save / Dataset.load / Dataset.snapshot: round trips of every element structure,
shard_func, string components, and a saved dataset treated as untrusted input."""

import json
import os

import numpy as np
import pytest

import layerflow as tf

D = tf.data.Dataset


def test_round_trip_structures_and_dtypes(tmp_path):
    ds = D.from_tensor_slices(
        {"x": np.arange(12, dtype=np.float32).reshape(6, 2), "y": np.arange(6, dtype=np.int64),
         "w": np.array([b"a", b"bc", b"", b"def", b"g", b"hi"])}
    ).map(lambda e: (e["x"], (e["y"], e["w"])))  # fmt: skip
    ds.save(str(tmp_path / "saved"))
    back = D.load(str(tmp_path / "saved"))
    assert back.element_spec == ds.element_spec and int(back.cardinality()) == 6
    for (x1, (y1, w1)), (x2, (y2, w2)) in zip(ds, back):
        np.testing.assert_array_equal(x1.numpy(), x2.numpy())
        assert int(y1) == int(y2) and w1.numpy() == w2.numpy()
    # variable shapes per element survive too
    ragged = D.range(1, 4).map(lambda n: tf.fill([n], n))
    ragged.save(str(tmp_path / "ragged"))
    assert [list(v) for v in D.load(str(tmp_path / "ragged")).as_numpy_iterator()] == [
        [1], [2, 2], [3, 3, 3]
    ]  # fmt: skip


def test_shard_func_and_reader_func(tmp_path):
    D.range(10).save(str(tmp_path / "s"), shard_func=lambda x: x % 3)
    files = sorted(f for f in os.listdir(tmp_path / "s") if f.startswith("shard-"))
    assert len(files) == 3
    loaded = D.load(str(tmp_path / "s"))
    assert sorted(int(v) for v in loaded) == list(range(10))
    shuffled = D.load(str(tmp_path / "s"), reader_func=lambda d: d.shuffle(10, seed=1))
    assert sorted(int(v) for v in shuffled) == list(range(10))
    with pytest.raises(ValueError, match="does not match"):
        D.load(str(tmp_path / "s"), element_spec=tf.TensorSpec([], tf.float32))
    with pytest.raises(tf.errors.NotFoundError, match="no saved dataset"):
        D.load(str(tmp_path / "nothing"))


def test_snapshot_writes_once_then_reads(tmp_path):
    calls = []

    def count(x):
        calls.append(1)
        return x * 2

    ds = D.range(5).map(count).snapshot(str(tmp_path / "snap"))
    assert [int(v) for v in ds] == [0, 2, 4, 6, 8] and len(calls) == 5
    assert [int(v) for v in ds] == [0, 2, 4, 6, 8] and len(calls) == 5  # read back, not rerun
    fresh = D.range(5).map(count).snapshot(str(tmp_path / "snap"))  # another program
    assert [int(v) for v in fresh] == [0, 2, 4, 6, 8] and len(calls) == 5


def _saved(tmp_path):
    folder = tmp_path / "saved"
    D.from_tensor_slices(np.arange(4, dtype=np.int64)).save(str(folder))
    return folder


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["shards"].__setitem__(0, {"file": "../outside.safetensors", "count": 4}),
         "shard list is malformed"),
        (lambda d: d["shards"].__setitem__(0, {"file": "/etc/passwd", "count": 4}),
         "shard list is malformed"),
        (lambda d: d.__setitem__("element_spec", {"dtype": "float32", "shape": [3]}),
         "dtype"),
        (lambda d: d.__setitem__("element_spec", {"dtype": "nope", "shape": []}), "unknown dtype"),
        (lambda d: d["shards"].__setitem__(0, {"file": "shard-00000.safetensors", "count": 9}),
         "lacks component"),
        (lambda d: d.__setitem__("version", 99), "version 1"),
    ],
)  # fmt: skip
def test_hostile_spec_files_are_refused(tmp_path, edit, match):
    folder = _saved(tmp_path)
    doc = json.loads((folder / "dataset_spec.json").read_text())
    edit(doc)
    (folder / "dataset_spec.json").write_text(json.dumps(doc))
    with pytest.raises(tf.errors.DataLossError, match=match):
        list(D.load(str(folder)))


def test_deep_or_damaged_files_are_refused(tmp_path):
    folder = _saved(tmp_path)
    deep = {"tuple": []}
    for _ in range(200):
        deep = {"tuple": [deep]}
    doc = json.loads((folder / "dataset_spec.json").read_text())
    doc["element_spec"] = deep
    (folder / "dataset_spec.json").write_text(json.dumps(doc))
    with pytest.raises(tf.errors.DataLossError, match="malformed"):
        D.load(str(folder))
    folder = _saved(tmp_path / "again")
    shard = folder / "shard-00000.safetensors"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF  # one flipped bit in the tensor data
    shard.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        list(D.load(str(folder)))
