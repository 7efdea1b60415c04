"""The functional forms of Dataset methods in tf.data.experimental (each equals the method;
results checked against real TF 2.21), the options classes, and the names layerflow leaves out."""

import numpy as np
import pytest

import layerflow as tf

E = tf.data.experimental
D = tf.data.Dataset


def _np(ds):
    return [tf.nest.map_structure(lambda a: np.asarray(a).tolist(), e) for e in
            ds.as_numpy_iterator()]  # fmt: skip


def _positive(x):
    tf.debugging.assert_greater(x, 0.0)
    return x


def test_transformation_forms_match_tf():
    r = D.range
    cases = [
        (r(5).apply(E.map_and_batch(lambda x: x * 2, 2)), [[0, 2], [4, 6], [8]]),
        (r(5).apply(E.map_and_batch(lambda x: x, 2, drop_remainder=True)), [[0, 1], [2, 3]]),
        (r(3).apply(E.parallel_interleave(lambda x: r(x), 2)), [0, 0, 1]),
        (r(5, 7).apply(E.enumerate_dataset(3)), [(3, 5), (4, 6)]),
        (r(5).apply(E.scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s))), [0, 0, 1, 3, 6]),
        (r(10).apply(E.take_while(lambda x: x < 3)), [0, 1, 2]),
        (r(6).batch(4).apply(E.unbatch()), [0, 1, 2, 3, 4, 5]),
        (D.from_tensor_slices([1, 3, 1, 2]).apply(E.unique()), [1, 3, 2]),
        (
            r(6).apply(E.group_by_window(lambda x: x % 2, lambda k, d: d.batch(3), 3)),
            [[0, 2, 4], [1, 3, 5]],
        ),  # fmt: skip
        (
            D.from_tensor_slices([1.0, -1.0, 2.0]).map(_positive).apply(E.ignore_errors()),
            [1.0, 2.0],
        ),  # fmt: skip
    ]
    for ds, want in cases:
        assert _np(ds) == want


def test_dense_to_ragged_batch_and_bucket_by_sequence_length():
    ds = D.range(1, 4).map(lambda n: tf.range(n)).apply(E.dense_to_ragged_batch(2))
    assert [b.to_list() for b in ds] == [[[0], [0, 1]], [[0, 1, 2]]]
    gen = D.from_generator(lambda: ([1] * n for n in [1, 3, 2, 5]),
                           output_signature=tf.TensorSpec([None], tf.int32))  # fmt: skip
    out = gen.apply(E.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3], [2, 2]))
    assert _np(out) == [[[1, 0], [1, 1]], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]]


def test_shuffle_and_repeat_reshuffles_each_epoch():
    ds = D.range(20).apply(E.shuffle_and_repeat(20, 2, seed=3))
    got = _np(ds)
    assert int(ds.cardinality()) == 40
    assert sorted(got[:20]) == list(range(20)) == sorted(got[20:])
    assert got[:20] != got[20:]  # a new order per pass
    assert _np(D.range(20).apply(E.shuffle_and_repeat(20, 2, seed=3))) == got


def test_choose_and_sample_from_datasets():
    choice = D.from_tensor_slices(tf.constant([0, 0, 1, 0], tf.int64))
    # TF's experimental default goes on past an exhausted input (the method's default stops)
    got = _np(E.choose_from_datasets([D.range(1), D.range(5, 7)], choice))
    assert got == [0, 5]
    assert _np(D.choose_from_datasets([D.range(1), D.range(5, 7)], choice)) == [0]
    s = E.sample_from_datasets([D.range(3), D.range(10, 13)], [0.5, 0.5], seed=1)
    assert sorted(_np(s)) == [0, 1, 2, 10, 11, 12]
    only = E.sample_from_datasets([D.range(3), D.range(10, 13)], [1.0, 0.0], seed=1)
    assert _np(only) == [0, 1, 2]


def test_rejection_resample_form_yields_class_and_element():
    ds = D.from_tensor_slices(tf.constant([0, 0, 0, 1] * 50, tf.int64))
    out = ds.apply(E.rejection_resample(lambda x: tf.cast(x, tf.int32), [0.5, 0.5], seed=1))
    pairs = _np(out)
    assert pairs and all(c == x for c, x in pairs)
    ones = sum(c for c, _ in pairs) / len(pairs)
    assert 0.3 < ones < 0.7  # from 1/4 toward 1/2


def test_get_single_element_save_and_snapshot(tmp_path):
    assert int(E.get_single_element(D.range(4, 5))) == 4
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than one element"):
        E.get_single_element(D.range(2))
    E.save(D.range(3).map(lambda x: (x, tf.strings.as_string(x))), str(tmp_path / "s"))
    assert _np(D.load(str(tmp_path / "s"))) == [(0, b"0"), (1, b"1"), (2, b"2")]
    calls = []
    src = D.range(3).map(lambda x: calls.append(1) or x)
    snap = src.apply(E.snapshot(str(tmp_path / "snap")))
    assert _np(snap) == [0, 1, 2] and _np(snap) == [0, 1, 2]
    assert len(calls) == 3  # the second pass read the snapshot
    with pytest.raises(TypeError, match="save takes a tf.data.Dataset"):
        E.save([1], str(tmp_path / "x"))


def test_forms_reject_non_datasets_and_bad_arguments():
    with pytest.raises(TypeError, match=r"is applied to a tf.data.Dataset .*got list"):
        E.unbatch()([1, 2])
    with pytest.raises(ValueError, match="exactly one of window_size and window_size_func"):
        E.group_by_window(lambda x: x, lambda k, d: d)
    with pytest.raises(ValueError, match="at most one of num_parallel_batches"):
        E.map_and_batch(lambda x: x, 2, num_parallel_batches=1, num_parallel_calls=1)
    with pytest.raises(TypeError, match="map_func must be callable"):
        E.map_and_batch(3, 2)


# --- options ---------------------------------------------------------------------------------


def test_options_hold_the_experimental_option_objects():
    o = tf.data.Options()
    assert isinstance(o.experimental_distribute, E.DistributeOptions)
    assert isinstance(o.experimental_optimization, E.OptimizationOptions)
    assert isinstance(o.autotune, E.AutotuneOptions)
    assert isinstance(o.experimental_service, E.ServiceOptions)
    assert E.ThreadingOptions is tf.data.ThreadingOptions
    assert o.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.AUTO
    assert o.experimental_optimization.map_fusion is None and o.autotune.enabled is None
    o.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.OFF
    o.autotune.enabled = False
    o.experimental_external_state_policy = E.ExternalStatePolicy.IGNORE
    got = D.range(3).with_options(o).options()
    assert got.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.OFF
    assert got.autotune.enabled is False
    assert got.experimental_external_state_policy == E.ExternalStatePolicy.IGNORE


def test_options_merge_set_values_over_defaults():
    a, b = tf.data.Options(), tf.data.Options()
    a.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.DATA
    b.autotune.cpu_budget = 2
    # b leaves the policy at its default: a's setting stays, with no warning
    m = a.merge(b)
    assert m.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.DATA
    assert m.autotune.cpu_budget == 2
    b.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.FILE
    with pytest.warns(UserWarning, match="auto_shard_policy"):
        m = a.merge(b)
    assert m.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.FILE


def test_options_type_checks():
    o = tf.data.Options()
    with pytest.raises(TypeError, match='"map_fusion" of OptimizationOptions must be of type '
                       "bool"):  # fmt: skip
        o.experimental_optimization.map_fusion = "x"
    with pytest.raises(TypeError, match="AutoShardPolicy"):
        o.experimental_distribute.auto_shard_policy = 5
    with pytest.raises(TypeError, match="ExternalStatePolicy"):
        o.experimental_external_state_policy = 1
    with pytest.raises(TypeError, match="private_threadpool_size"):
        o.threading.private_threadpool_size = "a"
    with pytest.raises(TypeError, match="must be of type DistributeOptions"):
        o.experimental_distribute = 3
    with pytest.raises(AttributeError, match="Cannot set the property bogus"):
        E.ServiceOptions().bogus = 1
    o.threading = E.ThreadingOptions()  # a whole options object may be replaced


# --- absent names ----------------------------------------------------------------------------


@pytest.mark.parametrize("name,why", [
    ("table_from_dataset", "tf.lookup"), ("index_table_from_dataset", "tf.lookup"),
    ("DatasetInitializer", "tf.lookup"), ("from_variant", "variant"), ("to_variant", "variant"),
    ("distributed_save", "tf.data service"), ("make_saveable_from_iterator", "Saver"),
])  # fmt: skip
def test_absent_names_say_why(name, why):
    with pytest.raises(AttributeError, match=f"no tf.data.experimental.{name}: .*{why}"):
        getattr(E, name)
    assert not hasattr(E, name)
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'"):
        E.nonsense  # noqa: B018
