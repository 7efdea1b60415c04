"""tf.sparse.cross / cross_hashed and tf.edit_distance against TF 2.21's values
(fixtures/sparse_cross.json, made by make_sparse_cross_fixtures.py) and a NumPy reference."""

import json
import os

import numpy as np
import pytest

import layerflow as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "sparse_cross.json")) as f:
    FX = json.load(f)


def _build(spec):
    if "indices" in spec:
        vals = [v.encode() if isinstance(v, str) else v for v in spec["values"]]
        values = np.array(vals, dtype=object) if spec["dtype"] == "string" else np.array(vals)
        return tf.SparseTensor(spec["indices"], tf.constant(values, spec["dtype"]), spec["shape"])
    rows = [[v.encode() if isinstance(v, str) else v for v in r] for r in spec["dense"]]
    arr = np.array(rows, dtype=object) if spec["dtype"] == "string" else np.array(rows)
    return tf.constant(arr, spec["dtype"])


@pytest.mark.parametrize("case", sorted(FX["cases"]))
def test_cross_matches_tf(case):
    fx = FX["cases"][case]
    inputs = [_build(s) for s in fx["inputs"]]
    got = tf.sparse.cross(inputs)
    assert got.dtype == tf.string
    assert got.indices.numpy().tolist() == fx["cross"][0]
    assert [v.decode() for v in got.values.numpy()] == fx["cross"][1]
    assert got.dense_shape.numpy().tolist() == fx["cross"][2]
    sep = tf.sparse.cross(inputs, separator="--")
    assert [v.decode() for v in sep.values.numpy()] == fx["cross_sep"]


@pytest.mark.parametrize("case", sorted(FX["cases"]))
def test_cross_hashed_is_bit_identical_to_tf(case):
    fx = FX["cases"][case]
    inputs = [_build(s) for s in fx["inputs"]]
    h0 = tf.sparse.cross_hashed(inputs)
    assert h0.dtype == tf.int64
    assert h0.values.numpy().tolist() == fx["hashed0"]
    assert h0.indices.numpy().tolist() == fx["hashed_indices"]
    assert tf.sparse.cross_hashed(inputs, 1000).values.numpy().tolist() == fx["hashed1000"]
    keyed = tf.sparse.cross_hashed(inputs, num_buckets=97, hash_key=123456789)
    assert keyed.values.numpy().tolist() == fx["hashed97_key"]


def test_cross_rejects_bad_inputs():
    a = tf.SparseTensor([[0, 0]], [b"a"], [1, 1])
    with pytest.raises(TypeError, match="list"):
        tf.sparse.cross(a)
    with pytest.raises(TypeError, match="float32"):
        tf.sparse.cross([a, tf.constant([[1.0]])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch size"):
        tf.sparse.cross([a, tf.constant([["x"], ["y"]])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank-2"):
        tf.sparse.cross([a, tf.constant(["x"])])
    with pytest.raises(ValueError, match="num_buckets"):
        tf.sparse.cross_hashed([a], num_buckets=-1)


def _ref_levenshtein(a, b):
    d = np.zeros((len(a) + 1, len(b) + 1), int)
    d[:, 0], d[0, :] = np.arange(len(a) + 1), np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            sub = d[i - 1, j - 1] + (a[i - 1] != b[j - 1])
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, sub)
    return d[-1, -1]


def _st(spec):
    vals = [v.encode() if isinstance(v, str) else v for v in spec[1]]
    values = np.array(vals, dtype=object) if isinstance(vals[0], bytes) else np.array(vals)
    return tf.SparseTensor(spec[0], values, spec[2])


@pytest.mark.parametrize("case", sorted(FX["edit_distance"]))
def test_edit_distance_matches_tf(case):
    fx = FX["edit_distance"][case]
    h, t = _st(fx["hypothesis"]), _st(fx["truth"])
    for key, normalize in (("normalized", True), ("raw", False)):
        got = tf.edit_distance(h, t, normalize=normalize)
        values, shape, dtype = fx[key]
        assert got.dtype.name == dtype and list(got.shape) == shape
        np.testing.assert_array_equal(got.numpy(), np.array(values, np.float32))


def test_edit_distance_against_a_numpy_reference():
    rng = np.random.default_rng(3)
    rows_h = [list(rng.integers(0, 4, rng.integers(0, 6))) for _ in range(6)]
    rows_t = [list(rng.integers(0, 4, rng.integers(1, 6))) for _ in range(6)]

    def to_st(rows):
        idx = [[i, j] for i, r in enumerate(rows) for j in range(len(r))]
        vals = [v for r in rows for v in r]
        return tf.SparseTensor(np.array(idx, np.int64).reshape(-1, 2), np.array(vals, np.int64),
                               [len(rows), 6])  # fmt: skip

    got = tf.edit_distance(to_st(rows_h), to_st(rows_t)).numpy()
    want = [_ref_levenshtein(h, t) / len(t) for h, t in zip(rows_h, rows_t)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_edit_distance_rejects_mismatches():
    a = tf.SparseTensor([[0, 0]], [1], [1, 1])
    with pytest.raises(TypeError, match="SparseTensor"):
        tf.edit_distance(tf.constant([1]), a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same rank"):
        tf.edit_distance(a, tf.SparseTensor([[0, 0, 0]], [1], [1, 1, 1]))
    with pytest.raises(TypeError, match="same dtype"):
        tf.edit_distance(a, tf.SparseTensor([[0, 0]], [1.0], [1, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of order"):
        tf.edit_distance(tf.SparseTensor([[0, 1], [0, 0]], [1, 2], [1, 2]), a)
