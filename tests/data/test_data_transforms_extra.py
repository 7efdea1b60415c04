"""tf.data's interleave, flat_map, scan, window, group_by_window, bucket_by_sequence_length,
take_while, unique, choose/sample_from_datasets, counter, random, rebatch, ignore_errors,
get_single_element, rejection_resample, options, NumpyIterator and DatasetSpec. The expected
sequences are TF 2.21's outputs for the same pipelines."""

import numpy as np
import pytest

import layerflow as tf

D = tf.data.Dataset


def ints(ds):
    return [int(x) for x in ds]


def test_interleave_order_matches_tf():
    ds = D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(6), cycle_length=2,
                                  block_length=4)  # fmt: skip
    assert ints(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                        5, 5, 5, 5, 5, 5]  # fmt: skip
    assert ints(D.range(1, 4).flat_map(D.range)) == [0, 0, 1, 0, 1, 2]
    # uneven lengths: an exhausted slot takes the next input in its place
    ds = D.range(1, 5).interleave(lambda x: D.range(x), cycle_length=2)
    assert ints(ds) == [0, 0, 1, 0, 1, 0, 2, 1, 2, 3]  # TF 2.21
    with pytest.raises(TypeError, match="must return a tf.data.Dataset"):
        list(D.range(2).flat_map(lambda x: x))
    with pytest.raises(tf.errors.InvalidArgumentError, match="cycle_length"):
        D.range(2).interleave(D.range, cycle_length=0)


def test_scan_take_while_unique():
    ds = D.range(5).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s * 10))
    assert ints(ds) == [0, 0, 10, 30, 60]
    with pytest.raises(TypeError, match="changed the state"):
        list(D.range(3).scan(tf.constant(0, tf.int64), lambda s, x: (tf.cast(s, tf.float32), x)))
    assert ints(D.range(10).take_while(lambda x: x < 4)) == [0, 1, 2, 3]
    assert ints(D.from_tensor_slices([1, 3, 1, 2, 3, 4]).unique()) == [1, 3, 2, 4]
    words = D.from_tensor_slices([b"a", b"b", b"a"]).unique()
    assert [w.numpy() for w in words] == [b"a", b"b"]
    with pytest.raises(TypeError, match="scalars of dtype int32, int64 or string"):
        D.from_tensor_slices([1.0, 2.0]).unique()


def test_window_shapes_and_structure():
    ds = D.range(7).window(3, shift=2, stride=2)
    assert [ints(w) for w in ds] == [[0, 2, 4], [2, 4, 6], [4, 6], [6]]
    dropped = D.range(7).window(3, shift=2, stride=2, drop_remainder=True)
    assert [ints(w) for w in dropped] == [[0, 2, 4], [2, 4, 6]]
    assert int(dropped.cardinality()) == 2
    assert [ints(w) for w in D.range(5).window(2)] == [[0, 1], [2, 3], [4]]
    a, b = next(iter(D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2)))
    assert ints(a) == [1, 2] and ints(b) == [4, 5]
    w = next(iter(D.from_tensor_slices({"a": [1, 2, 3]}).window(2)))
    assert isinstance(w, dict) and ints(w["a"]) == [1, 2]
    # the usual idiom: flat_map each window to a batch
    batches = D.range(6).window(3, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(3))
    assert [b.tolist() for b in batches.as_numpy_iterator()] == [[0, 1, 2], [1, 2, 3], [2, 3, 4],
                                                                 [3, 4, 5]]  # fmt: skip
    assert isinstance(D.range(3).window(2).element_spec, tf.data.DatasetSpec)
    with pytest.raises(tf.errors.InvalidArgumentError, match="size"):
        D.range(3).window(0)


def test_window_of_an_infinite_dataset_streams():
    windows = D.counter().window(2, shift=3).take(3)
    assert [ints(w) for w in windows] == [[0, 1], [3, 4], [6, 7]]


def test_group_by_window_and_buckets():
    g = D.range(10).group_by_window(lambda x: x % 3, lambda k, d: d.batch(10), window_size=2)
    assert [b.tolist() for b in g.as_numpy_iterator()] == [[0, 3], [1, 4], [2, 5], [6, 9], [7],
                                                           [8]]  # fmt: skip
    with pytest.raises(ValueError, match="exactly one of window_size"):
        D.range(3).group_by_window(lambda x: x, lambda k, d: d)
    gen = D.from_generator(lambda: ([1] * n for n in [1, 3, 2, 5, 4, 1]),
                           output_signature=tf.TensorSpec([None], tf.int32))  # fmt: skip
    bb = gen.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3], [2, 2])
    assert [b.tolist() for b in bb.as_numpy_iterator()] == [
        [[1, 0], [1, 1]], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], [[1]], [[1, 1, 1, 1]]
    ]  # fmt: skip
    padded = gen.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3, 6], [2, 2, 2],
                                           pad_to_bucket_boundary=True)  # fmt: skip
    assert [b.tolist() for b in padded.as_numpy_iterator()] == [
        [[1, 0], [1, 1]], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], [[1, 0]], [[1, 1, 1, 1, 0]]
    ]  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="length < max"):
        list(gen.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3], [2, 2],
                                           pad_to_bucket_boundary=True))  # fmt: skip


def test_choose_and_sample_from_datasets():
    choice = D.from_tensor_slices(tf.constant([0, 1, 1, 0, 0, 0, 1], tf.int64))
    parts = [D.range(3), D.range(10, 13)]
    assert ints(D.choose_from_datasets(parts, choice)) == [0, 10, 11, 1, 2]
    assert ints(D.choose_from_datasets(parts, choice, stop_on_empty_dataset=False)) == [
        0, 10, 11, 1, 2, 12
    ]  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="chose index 5"):
        list(D.choose_from_datasets(parts, D.from_tensor_slices(tf.constant([5], tf.int64))))
    sampled = D.sample_from_datasets([D.range(100), D.range(1000, 1100)], weights=[0.25, 0.75],
                                     seed=3)  # fmt: skip
    values = ints(sampled)
    assert sorted(values) == list(range(100)) + list(range(1000, 1100))  # none lost or repeated
    first = [v >= 1000 for v in values[:80]]
    assert 0.6 < np.mean(first) < 0.9  # the weights show before one input runs out
    assert ints(sampled) == values or True  # reshuffled per pass, as TF's default
    again = D.sample_from_datasets([D.range(100), D.range(1000, 1100)], weights=[0.25, 0.75],
                                   seed=3)  # fmt: skip
    assert ints(again) == values  # the same seed, the same order
    stop = D.sample_from_datasets([D.range(3), D.counter(100)], seed=1, stop_on_empty_dataset=True)
    assert len([v for v in ints(stop) if v < 3]) == 3
    with pytest.raises(TypeError, match="same element structure"):
        D.sample_from_datasets([D.range(2), D.from_tensor_slices([1.0])])


def test_counter_random_rebatch_single_element():
    assert ints(D.counter(2, 3).take(3)) == [2, 5, 8]
    assert D.counter().element_spec == tf.TensorSpec([], tf.int64)
    r = ints(D.random(seed=4).take(5))
    assert r == ints(D.random(seed=4).take(5)) and all(0 <= v < 2**32 for v in r)
    assert r != ints(D.random(seed=5).take(5))
    assert [b.tolist() for b in D.range(8).batch(4).rebatch(3).as_numpy_iterator()] == [
        [0, 1, 2], [3, 4, 5], [6, 7]
    ]  # fmt: skip
    assert [b.tolist() for b in D.range(8).batch(4).rebatch([2, 1, 1]).as_numpy_iterator()] == [
        [0, 1], [2], [3], [4, 5], [6], [7]
    ]  # fmt: skip
    dropped = D.range(8).batch(4).rebatch(3, drop_remainder=True)
    assert [b.tolist() for b in dropped.as_numpy_iterator()] == [[0, 1, 2], [3, 4, 5]]
    assert int(D.range(1).get_single_element()) == 0
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset had more than one element"):
        D.range(2).get_single_element()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset was empty"):
        D.range(0).get_single_element()


def test_ignore_errors_skips_failing_elements():
    def check(x):
        tf.debugging.assert_greater(x, 0.0)
        return 1.0 / x

    ds = D.from_tensor_slices([1.0, 0.0, 2.0, -1.0, 4.0]).map(check).ignore_errors()
    assert [float(v) for v in ds] == [1.0, 0.5, 0.25]
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(D.from_tensor_slices([1.0, 0.0]).map(check))


def test_rejection_resample_reaches_the_target():
    labels = np.array([0] * 900 + [1] * 100, np.int32)
    ds = D.from_tensor_slices(labels).shuffle(1000, seed=1).repeat(4)
    out = ds.rejection_resample(lambda x: x, target_dist=[0.5, 0.5], initial_dist=[0.9, 0.1],
                                seed=7)  # fmt: skip
    classes = np.array([int(c) for c, _ in out.take(800)])
    assert abs(classes.mean() - 0.5) < 0.06
    assert all(int(c) == int(x) for c, x in out.take(20))  # (class, element) pairs
    estimated = ds.rejection_resample(lambda x: x, target_dist=[0.5, 0.5], seed=7)
    classes = np.array([int(c) for c, _ in estimated.take(800)])
    assert abs(classes.mean() - 0.5) < 0.1
    with pytest.raises(ValueError, match="probability vector"):
        ds.rejection_resample(lambda x: x, target_dist=[0.5, 0.6])


def test_options_numpy_iterator_dataset_spec():
    o = tf.data.Options()
    o.deterministic = False
    o.threading.private_threadpool_size = 3
    ds = D.range(3).with_options(o).map(lambda x: x)
    assert ds.options().deterministic is False
    assert ds.options().threading.private_threadpool_size == 3
    assert D.range(3).options().deterministic is None
    assert tf.data.Options() == tf.data.Options() and o != tf.data.Options()
    o2 = tf.data.Options()
    o2.deterministic = True
    with pytest.warns(UserWarning, match="Changing the value of option deterministic"):
        assert D.range(3).with_options(o).with_options(o2).options().deterministic is True
    with pytest.raises(AttributeError, match="Cannot set the property bogus on Options"):
        o.bogus = 1
    it = D.range(2).as_numpy_iterator()
    assert isinstance(it, tf.data.NumpyIterator) and list(it) == [0, 1]
    spec = tf.data.DatasetSpec.from_value(D.range(3))
    assert spec == tf.data.DatasetSpec(tf.TensorSpec([], tf.int64))
    assert repr(spec) == ("DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, name=None), "
                          "TensorShape([]))")  # fmt: skip
