"""tf.io.serialize_sparse / serialize_many_sparse / deserialize_many_sparse (TF 2.21's bytes,
from tests/ops/fixtures/example_parsing.json), decode_compressed and matching_files."""

import gzip
import os
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layerflow as tf
from layerflow._src.saving import io_extra
from tests.ops.example_helpers import assert_same, load

SPARSE = load()["sparse"]


def _sparse(case):
    values = case["values"]
    if case["dtype"] == "string":
        values = [bytes.fromhex(v) for v in values]
    return tf.SparseTensor(case["indices"], tf.constant(values, dtype=case["dtype"]),
                           case["dense_shape"])  # fmt: skip


@pytest.mark.parametrize("case", SPARSE, ids=lambda c: f"{c['dtype']}-rank{len(c['dense_shape'])}")
def test_serialize_sparse_bytes_equal_tensorflows(case):
    out = tf.io.serialize_sparse(_sparse(case))
    assert out.dtype == tf.string and out.shape == (3,)
    assert [b.hex() for b in out.numpy()] == case["serialized"]


@pytest.mark.parametrize("case", [c for c in SPARSE if "many" in c], ids=lambda c: c["dtype"])
def test_serialize_many_sparse_bytes_and_round_trip_equal_tensorflows(case):
    many = tf.io.serialize_many_sparse(_sparse(case))
    assert [[b.hex() for b in row] for row in many.numpy()] == case["many"]
    back = tf.io.deserialize_many_sparse(many, case["dtype"])
    assert_same(back, case["back"])
    # TF's own bytes read back the same way.
    theirs = np.array([[bytes.fromhex(b) for b in row] for row in case["many"]], dtype=object)
    assert_same(tf.io.deserialize_many_sparse(tf.constant(theirs), case["dtype"]), case["back"])


def test_deserialize_many_sparse_takes_the_largest_shape():
    a = tf.io.serialize_sparse(tf.SparseTensor([[0, 1]], [1.0], [2, 3]))
    b = tf.io.serialize_sparse(tf.SparseTensor([[4, 0]], [2.0], [5, 1]))
    sp = tf.io.deserialize_many_sparse(tf.stack([a, b]), tf.float32)
    assert sp.indices.numpy().tolist() == [[0, 0, 1], [1, 4, 0]]
    assert sp.dense_shape.numpy().tolist() == [2, 5, 3]


def test_deserialize_errors():
    good = tf.io.serialize_many_sparse(tf.SparseTensor([[0, 1]], [1.0], [1, 3]))
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="Requested SparseTensor of type int32"
    ):
        tf.io.deserialize_many_sparse(good, tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 columns"):
        tf.io.deserialize_many_sparse(tf.constant(["a", "b", "c"]), tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse"):
        tf.io.deserialize_many_sparse(tf.constant([["a", "b", "c"]]), tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Rank of input SparseTensor"):
        tf.io.serialize_many_sparse(tf.SparseTensor([[1]], [1.0], [3]))
    # an index outside the stated dense shape is refused
    bad = tf.io.serialize_sparse(tf.SparseTensor([[0, 1]], [1.0], [2, 3])).numpy()
    bad[2] = io_extra.tensor_proto(np.array([1, 1], np.int64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="outside its dense_shape"):
        tf.io.deserialize_many_sparse(tf.constant(bad[None]), tf.float32)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=3, max_size=3))
def test_random_bytes_deserialize_or_raise_invalid_argument(parts):
    try:
        tf.io.deserialize_many_sparse(tf.constant(np.array([parts], dtype=object)), tf.int64)
    except tf.errors.InvalidArgumentError:
        pass


def test_decode_compressed():
    text = b"hello world" * 3
    assert tf.io.decode_compressed(zlib.compress(text), "ZLIB").numpy() == text
    out = tf.io.decode_compressed([gzip.compress(b"abc"), gzip.compress(b"")], "GZIP")
    assert out.numpy().tolist() == [b"abc", b""]
    assert tf.io.decode_compressed(b"raw").numpy() == b"raw"
    both = gzip.compress(b"a") + gzip.compress(b"b")  # concatenated members, as TF reads them
    assert tf.io.decode_compressed(both, "GZIP").numpy() == b"ab"
    with pytest.raises(tf.errors.DataLossError, match="inflate"):
        tf.io.decode_compressed(b"raw", "ZLIB")
    with pytest.raises(tf.errors.DataLossError, match="truncated"):
        tf.io.decode_compressed(zlib.compress(text)[:-6], "ZLIB")
    with pytest.raises(tf.errors.InvalidArgumentError, match="ZLIB, GZIP"):
        tf.io.decode_compressed(b"raw", "BZ2")


def test_decode_compressed_stops_a_zip_bomb(monkeypatch):
    monkeypatch.setattr(io_extra, "MAX_DECOMPRESSED_BYTES", 10_000)
    bomb = zlib.compress(b"\0" * 100_000)
    with pytest.raises(tf.errors.ResourceExhaustedError, match="larger than 10000"):
        tf.io.decode_compressed(bomb, "ZLIB")
    assert tf.io.decode_compressed(zlib.compress(b"\0" * 9_000), "ZLIB").numpy() == b"\0" * 9_000


def test_matching_files_sorted_per_pattern(tmp_path):
    for name in ["b.txt", "a.txt", "c.csv", "A.txt", ".h.txt", "sub/x.txt"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("")
    d = str(tmp_path)

    def rel(t):
        assert t.dtype == tf.string and t.shape.rank == 1
        return [os.path.relpath(p.decode(), d) for p in t.numpy()]

    assert rel(tf.io.matching_files(d + "/*.txt")) == [".h.txt", "A.txt", "a.txt", "b.txt"]
    assert rel(tf.io.matching_files([d + "/[ab].txt", d + "/*.csv"])) == ["a.txt", "b.txt",
                                                                          "c.csv"]  # fmt: skip
    assert rel(tf.io.matching_files(d + "/*/*.txt")) == ["sub/x.txt"]
    assert rel(tf.io.matching_files(d + "/?.txt")) == ["A.txt", "a.txt", "b.txt"]
    assert rel(tf.io.matching_files(d + "/nothing*")) == []
    assert rel(tf.io.matching_files("/nonexistent-layerflow-dir/*")) == []
