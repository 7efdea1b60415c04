"""tf.data.experimental's transformations (dataset.apply(tf.data.experimental.X(...))) and its
helpers on datasets and iterators; expected values are real TF 2.21's."""

import numpy as np
import pytest

import layerflow as tf

E = tf.data.experimental
D = tf.data.Dataset


def _np(ds):
    return [tf.nest.map_structure(lambda a: np.asarray(a).tolist(), e) for e in
            ds.as_numpy_iterator()]  # fmt: skip


# --- assert_cardinality / pad_to_cardinality ---------------------------------------------------


def test_assert_cardinality_declares_and_checks_the_count():
    ds = D.range(6).filter(lambda x: x % 2 == 0)
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    checked = ds.apply(E.assert_cardinality(3))
    assert int(checked.cardinality()) == 3 and _np(checked) == [0, 2, 4]
    with pytest.raises(tf.errors.FailedPreconditionError, match="expected to contain 5 elements "
                       "but contained only 3"):  # fmt: skip
        list(ds.apply(E.assert_cardinality(5)))
    with pytest.raises(tf.errors.FailedPreconditionError, match="contained at least 3"):
        list(ds.apply(E.assert_cardinality(2)))
    inf = D.range(2).repeat().apply(E.assert_cardinality(tf.data.INFINITE_CARDINALITY))
    assert int(inf.cardinality()) == -1 and _np(inf.take(3)) == [0, 1, 0]
    with pytest.raises(TypeError, match="expected_cardinality must be an integer"):
        E.assert_cardinality("3")


def test_pad_to_cardinality_pads_dicts_with_zeros_and_a_mask():
    ds = D.from_tensor_slices({"a": [1, 2, 3], "b": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]})
    out = ds.apply(E.pad_to_cardinality(5))
    assert int(out.cardinality()) == 5
    got = _np(out)
    assert [e["a"] for e in got] == [1, 2, 3, 0, 0]
    assert [e["valid"] for e in got] == [True, True, True, False, False]
    assert got[4]["b"] == [0.0, 0.0]
    assert out.element_spec["valid"] == tf.TensorSpec([], tf.bool)
    masked = D.from_tensor_slices({"a": [1]}).apply(E.pad_to_cardinality(2, mask_key="m"))
    assert [e["m"] for e in _np(masked)] == [True, False]


def test_pad_to_cardinality_errors():
    with pytest.raises(ValueError, match="requires its input dataset to be a dictionary"):
        D.range(3).apply(E.pad_to_cardinality(5))
    ds = D.from_tensor_slices({"a": [1, 2, 3]})
    with pytest.raises(ValueError, match="less than the target cardinality \\(2\\), but has "
                       "cardinality 3"):  # fmt: skip
        ds.apply(E.pad_to_cardinality(2))
    with pytest.raises(ValueError, match="known cardinality"):
        ds.filter(lambda e: True).apply(E.pad_to_cardinality(5))
    with pytest.raises(ValueError, match="already have the key 'a'"):
        ds.apply(E.pad_to_cardinality(5, mask_key="a"))


# --- group_by_reducer ------------------------------------------------------------------------


def test_group_by_reducer_folds_each_key():
    r = E.Reducer(lambda k: tf.constant(0, tf.int64), lambda s, x: s + x, lambda s: s * 10)
    ds = D.range(10).apply(E.group_by_reducer(lambda x: x % 3, r))
    assert _np(ds) == [180, 120, 150]  # TF's values and order
    assert r.init_func is not None and callable(r.finalize_func)


def test_group_by_reducer_tuple_elements_and_state():
    r = E.Reducer(lambda k: (k, tf.constant(0, tf.int64)),
                  lambda s, e: (s[0], s[1] + e[0] * e[1]), lambda k, v: v)  # fmt: skip
    ds = D.from_tensor_slices(([1, 2, 3, 4], [10, 10, 10, 10])).map(
        lambda a, b: (tf.cast(a, tf.int64), tf.cast(b, tf.int64))
    )
    out = ds.apply(E.group_by_reducer(lambda a, b: a % 2, r))
    assert _np(out) == [60, 40]  # TF's values and order: by key, not by first appearance


def test_group_by_reducer_errors():
    with pytest.raises(TypeError, match="must be a tf.data.experimental.Reducer"):
        E.group_by_reducer(lambda x: x, lambda s, x: s)
    with pytest.raises(TypeError, match="finalize_func must be callable"):
        E.Reducer(lambda k: k, lambda s, x: s, None)
    r = E.Reducer(lambda k: tf.constant(0, tf.int64), lambda s, x: tf.cast(s, tf.float32),
                  lambda s: s)  # fmt: skip
    with pytest.raises(TypeError, match="changed the state's structure or dtypes"):
        list(D.range(3).apply(E.group_by_reducer(lambda x: x % 2, r)))
    r2 = E.Reducer(lambda k: k, lambda s, x: s, lambda s: s)
    with pytest.raises(TypeError, match="tf.int64 scalar"):
        list(D.range(3).apply(E.group_by_reducer(lambda x: tf.cast(x, tf.int32), r2)))


# --- helpers ---------------------------------------------------------------------------------


def test_at_returns_the_indexed_element():
    assert int(E.at(D.range(10, 20), 3)) == 13
    assert int(E.at(D.range(10, 20).filter(lambda x: x > 14), 1)) == 16
    with pytest.raises(tf.errors.OutOfRangeError, match="Index out of range"):
        E.at(D.range(10, 20), 30)
    with pytest.raises(tf.errors.OutOfRangeError):
        E.at(D.range(10).filter(lambda x: x < 2), 5)
    with pytest.raises(TypeError, match="takes a tf.data.Dataset"):
        E.at([1, 2], 0)


def test_from_list_stacks_elements():
    ds = E.from_list([(1, "a"), (2, "b")])
    assert ds.element_spec == (tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.string))
    assert _np(ds) == [(1, b"a"), (2, b"b")]
    d = E.from_list([{"x": [1.0, 2.0]}, {"x": [3.0, 4.0]}])
    assert _np(d) == [{"x": [1.0, 2.0]}, {"x": [3.0, 4.0]}]
    with pytest.raises(ValueError, match="should be a non-empty list"):
        E.from_list([])
    with pytest.raises(ValueError, match="does not have the structure of element 0"):
        E.from_list([(1, 2), (1,)])


def test_get_structure_and_get_next_as_optional():
    ds = D.range(1)
    assert E.get_structure(ds) == tf.TensorSpec([], tf.int64)
    it = iter(ds)
    assert E.get_structure(it) == tf.TensorSpec([], tf.int64)
    first, second = E.get_next_as_optional(it), E.get_next_as_optional(it)
    assert isinstance(first, tf.experimental.Optional) and E.Optional is tf.experimental.Optional
    assert bool(first.has_value()) and int(first.get_value()) == 0
    assert not bool(second.has_value())
    assert second.element_spec == tf.TensorSpec([], tf.int64)
    with pytest.raises(TypeError, match="tf.data.Dataset or an iterator"):
        E.get_structure([1])
    with pytest.raises(TypeError, match="takes a tf.data iterator"):
        E.get_next_as_optional(ds)


def test_counter_and_random_dataset():
    assert _np(E.Counter(1, 2).take(3)) == [1, 3, 5]
    assert E.Counter(dtype=tf.int32).element_spec.dtype == tf.int32
    r = E.RandomDataset(seed=7)
    assert isinstance(r, tf.data.Dataset) and int(r.cardinality()) == -1
    a, b = _np(r.take(5)), _np(E.RandomDataset(seed=7).take(5))
    assert a == b and all(0 <= v < 2**32 for v in a)
    assert a != _np(E.RandomDataset(seed=8).take(5))


def test_copy_to_device_and_prefetch_to_device():
    for fn in (E.copy_to_device("/cpu:0"), E.prefetch_to_device("/CPU:0", 2)):
        out = list(D.range(3).map(lambda x: (x, {"y": x * 2})).apply(fn))
        assert [int(x) for x, _ in out] == [0, 1, 2]
        assert all(x.device.endswith("CPU:0") and d["y"].device.endswith("CPU:0")
                   for x, d in out)  # fmt: skip
    with pytest.raises(ValueError, match="device string"):
        E.copy_to_device("")
    with pytest.raises(ValueError, match="expected CPU or GPU"):
        E.prefetch_to_device("nowhere")


def test_copy_to_device_moves_to_a_logical_device(two_cpus):
    with tf.device("/CPU:0"):
        out = list(D.range(2).apply(E.copy_to_device("/CPU:1")))
    assert [t.device for t in out] == ["/job:localhost/replica:0/task:0/device:CPU:1"] * 2
    assert [int(t) + 1 for t in out] == [1, 2]


@pytest.mark.gpu
def test_copy_to_device_moves_to_the_gpu_when_there_is_one():
    if not tf.config.list_logical_devices("GPU"):
        pytest.skip("no GPU")
    with tf.device("/CPU:0"):
        ds = D.from_tensor_slices(np.arange(4.0, dtype=np.float32))
        out = list(ds.apply(E.copy_to_device("/GPU:0")))
    assert all(t.device.endswith("GPU:0") for t in out)
    assert [float(t) for t in out] == [0.0, 1.0, 2.0, 3.0]


def test_enable_debug_mode_keeps_functions_eager():
    seen = []
    E.enable_debug_mode()
    ds = D.range(3).map(lambda x: seen.append(int(x.numpy())) or x)
    assert _np(ds) == [0, 1, 2] and seen == [0, 1, 2]


def test_shard_hint_and_enums():
    assert E.SHARD_HINT == -1
    assert int(E.AutoShardPolicy.OFF) == -1 and E.AutoShardPolicy.DATA == 2
    assert [m.name for m in E.AutotuneAlgorithm][:2] == ["DEFAULT", "HILL_CLIMB"]
    assert [m.name for m in E.ExternalStatePolicy] == ["WARN", "IGNORE", "FAIL"]
