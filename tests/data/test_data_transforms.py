"""tf.data transformations: batch, unbatch, map, filter, take, skip, repeat, cache, enumerate, ...

Most behaviours are checked on both paths: the in-memory fast path (slices of arrays) and the
generic element path (forced by an identity `map`, which hides the source's arrays).
"""

import numpy as np
import pytest

import layerflow as tf


def _generic(ds):
    return ds.map(lambda *a: a if len(a) > 1 else a[0])


def _values(ds):
    return [np.asarray(e).tolist() for e in ds.as_numpy_iterator()]


@pytest.fixture(params=["plan", "generic"])
def path(request):
    return (lambda ds: ds) if request.param == "plan" else _generic


@pytest.mark.parametrize("n,b,drop", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 5, False),
                                      (2, 5, True), (0, 4, False)])  # fmt: skip
def test_batch_matches_numpy_chunks(path, n, b, drop):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    ds = path(tf.data.Dataset.from_tensor_slices(x)).batch(b, drop_remainder=drop)
    expected = [x[i : i + b] for i in range(0, n, b) if not drop or i + b <= n]
    got = list(ds)
    assert len(got) == len(expected) == int(ds.cardinality())
    for g, e in zip(got, expected):
        assert isinstance(g, tf.Tensor) and g.dtype == tf.float32
        np.testing.assert_array_equal(g.numpy(), e)


def test_batch_of_tuples_and_dicts(path):
    ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(5), "y": np.arange(5) * 10})
    batches = list(path(ds).batch(2))
    assert [b["y"].numpy().tolist() for b in batches] == [[0, 10], [20, 30], [40]]
    pairs = list(path(tf.data.Dataset.from_tensor_slices((np.arange(4), np.arange(4.0)))).batch(4))
    assert pairs[0][1].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_contiguous_batches_are_views_of_the_source_not_copies():
    source = tf.constant(np.arange(20, dtype=np.float32).reshape(10, 2))
    first = next(iter(tf.data.Dataset.from_tensor_slices(source).batch(4)))
    assert np.shares_memory(first._data, source._data)


def test_batch_refuses_elements_of_different_shapes():
    ds = tf.data.Dataset.range(1, 4).map(lambda n: tf.zeros([n])).batch(3)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"component 0.*\[1\].*element 1.*\[2\]"
    ):
        list(ds)


def test_batch_size_must_be_positive():
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch_size"):
        tf.data.Dataset.range(3).batch(0)
    with pytest.raises(TypeError, match="batch_size"):
        tf.data.Dataset.range(3).batch(2.5)


def test_unbatch_undoes_batch(path):
    x = np.arange(14).reshape(7, 2)
    ds = path(tf.data.Dataset.from_tensor_slices((x, x[:, 0]))).batch(3).unbatch()
    assert [(a.tolist(), int(b)) for a, b in ds.as_numpy_iterator()] == [
        (row.tolist(), int(row[0])) for row in x]  # fmt: skip
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY


def test_map_unpacks_tuples_passes_dicts_and_converts_outputs():
    pairs = tf.data.Dataset.from_tensor_slices(([1, 2], [10, 20]))
    assert _values(pairs.map(lambda x, y: x + y)) == [11, 22]
    as_list = pairs.map(lambda x, y: [y, x])
    first = next(iter(as_list))
    assert type(first) is tuple and int(first[0]) == 10
    dicts = tf.data.Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]})
    assert _values(dicts.map(lambda d: d["a"] * d["b"])) == [3, 8]
    from_numpy = tf.data.Dataset.range(2).map(lambda x: np.float32(2.5))
    assert all(isinstance(v, tf.Tensor) and v.dtype == tf.float32 for v in from_numpy)


def test_map_on_a_batched_dataset_runs_once_per_batch():
    calls = []

    def fn(x):
        calls.append(x.shape)
        return x * 2

    ds = tf.data.Dataset.from_tensor_slices(np.arange(10)).batch(4).map(fn)
    assert _values(ds) == [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]]
    assert calls == [(4,), (4,), (2,)]


def test_filter_keeps_matching_elements_and_checks_the_predicate(path):
    ds = path(tf.data.Dataset.range(10)).filter(lambda x: x % 3 == 0)
    assert _values(ds) == [0, 3, 6, 9]
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="tf.bool"):
        list(tf.data.Dataset.range(3).filter(lambda x: x * 2))


@pytest.mark.parametrize("count", [0, 2, 5, 9, -1])
def test_take_and_skip(path, count):
    ds = path(tf.data.Dataset.range(5))
    taken, skipped = ds.take(count), ds.skip(count)
    expected_take = list(range(5))[: count if count >= 0 else None]
    expected_skip = [] if count < 0 else list(range(5))[count:]
    assert _values(taken) == expected_take and _values(skipped) == expected_skip
    assert int(taken.cardinality()) == len(expected_take)
    assert int(skipped.cardinality()) == len(expected_skip)


def test_repeat_finite_infinite_and_empty(path):
    ds = path(tf.data.Dataset.range(3))
    assert _values(ds.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert int(ds.repeat(2).cardinality()) == 6
    forever = ds.repeat()
    assert int(forever.cardinality()) == tf.data.INFINITE_CARDINALITY
    assert _values(forever.take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert _values(forever.batch(4).take(2)) == [[0, 1, 2, 0], [1, 2, 0, 1]]
    assert _values(path(tf.data.Dataset.range(0)).repeat()) == []
    assert _values(ds.repeat(0)) == []


def test_len_raises_for_infinite_and_unknown():
    assert len(tf.data.Dataset.range(7).batch(2)) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(tf.data.Dataset.range(2).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(tf.data.Dataset.range(2).filter(lambda x: x > 0))


def test_experimental_cardinality_and_autotune():
    ds = tf.data.Dataset.range(10).batch(4).prefetch(tf.data.AUTOTUNE)
    assert tf.data.experimental.cardinality(ds).dtype == tf.int64
    assert int(tf.data.experimental.cardinality(ds)) == 3
    assert tf.data.AUTOTUNE == tf.data.experimental.AUTOTUNE == -1
    assert _values(ds) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_enumerate_pairs_int64_indices():
    ds = tf.data.Dataset.from_tensor_slices(([7, 8], [1.0, 2.0])).enumerate(start=3)
    out = list(ds)
    assert [int(i) for i, _ in out] == [3, 4] and out[0][0].dtype == tf.int64
    assert [int(x) for _, (x, _y) in out] == [7, 8]
    assert _values(ds.map(lambda i, xy: i + tf.cast(xy[0], tf.int64))) == [10, 12]


def test_shard(path):
    ds = path(tf.data.Dataset.range(10)).shard(3, 1)
    assert _values(ds) == [1, 4, 7] and int(ds.cardinality()) == 3
    with pytest.raises(tf.errors.InvalidArgumentError, match="index"):
        tf.data.Dataset.range(3).shard(2, 2)


def test_cache_runs_the_input_once(path):
    calls = []

    def count(x):
        calls.append(int(x))
        return x

    ds = path(tf.data.Dataset.range(4)).map(count).cache()
    assert _values(ds) == _values(ds) == [0, 1, 2, 3]
    assert calls == [0, 1, 2, 3]


def test_cache_after_shuffle_freezes_the_order(path):
    ds = path(tf.data.Dataset.range(50)).shuffle(50, seed=3).cache()
    first = _values(ds)
    assert sorted(first) == list(range(50)) and first != list(range(50))
    assert _values(ds) == first


def test_a_partial_pass_is_not_cached():
    calls = []
    ds = tf.data.Dataset.range(4).map(lambda x: calls.append(1) or x).cache()
    assert _values(ds.take(2)) == [0, 1]
    assert _values(ds) == [0, 1, 2, 3]
    assert _values(ds) == [0, 1, 2, 3]
    assert len(calls) == 2 + 4


def test_file_cache_is_reused_by_a_new_dataset(tmp_path):
    calls = []
    prefix = str(tmp_path / "cache")

    def make():
        return tf.data.Dataset.range(3).map(
            lambda x: calls.append(1) or (x, tf.cast(x, tf.float32))
        )

    assert _values(make().cache(prefix)) == [[0, 0.0], [1, 1.0], [2, 2.0]]
    assert len(calls) == 3
    again = make().cache(prefix)
    assert [(int(a), float(b)) for a, b in again] == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert (
        len(calls) == 3 + 1
    )  # the new dataset's element_spec peeks once, the data comes from disk
    assert [p.name for p in tmp_path.iterdir()] == ["cache.lfcache.npz"]


def test_reduce_and_apply():
    ds = tf.data.Dataset.range(1, 5)
    assert int(ds.reduce(tf.constant(0, tf.int64), lambda s, x: s + x)) == 10
    assert _values(ds.apply(lambda d: d.take(2))) == [1, 2]
    with pytest.raises(TypeError, match="must return a Dataset"):
        ds.apply(lambda d: 3)


def test_padded_batch_pads_to_the_longest_in_each_batch():
    ds = tf.data.Dataset.range(1, 5).map(lambda n: tf.ones([n], tf.int64) * n).padded_batch(3)
    assert _values(ds) == [[[1, 0, 0], [2, 2, 0], [3, 3, 3]], [[4, 4, 4, 4]]]
    assert ds.element_spec.shape == (None, None)


def test_padded_batch_with_shapes_values_and_structures():
    def pair(n):
        return tf.ones([n, 2], tf.float32), n

    ds = (
        tf.data.Dataset.range(1, 3)
        .map(pair)
        .padded_batch(
            2, padded_shapes=([4, None], []), padding_values=(-1.0, tf.constant(0, tf.int64))
        )
    )
    (x, n), *rest = list(ds.as_numpy_iterator())
    assert not rest and x.shape == (2, 4, 2) and n.tolist() == [1, 2]
    np.testing.assert_array_equal(x[0], [[1, 1], [-1, -1], [-1, -1], [-1, -1]])
    np.testing.assert_array_equal(x[1], [[1, 1], [1, 1], [-1, -1], [-1, -1]])
    assert ds.element_spec[0].shape == (None, 4, None)
    too_small = tf.data.Dataset.range(1, 4).map(lambda n: tf.ones([n])).padded_batch(3, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="larger than the padded size 2"):
        list(too_small)
