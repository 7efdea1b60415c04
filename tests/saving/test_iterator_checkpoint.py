"""Checkpointing a `tf.data` iterator: `tf.train.Checkpoint(iterator=iter(ds))` saves its
position and a restore makes `next(it)` continue exactly where it was at save time."""

import json

import numpy as np
import pytest

import layerflow as tf


def _pipelines():
    return {
        "range": lambda: tf.data.Dataset.range(13),
        "map": lambda: tf.data.Dataset.range(13).map(lambda x: x * 3 + 1),
        "batch": lambda: tf.data.Dataset.range(31).map(lambda x: x * 2).batch(3),
        "shuffle_seed": lambda: tf.data.Dataset.range(40).shuffle(7, seed=5).batch(2),
        "shuffle_repeat": lambda: tf.data.Dataset.range(6).shuffle(6, seed=1).repeat(3),
        "generic": lambda: tf.data.Dataset.range(30).filter(lambda x: x % 3 > 0).shuffle(5, seed=2),
    }


def _take(it, n):
    return [tf.nest.map_structure(lambda t: t.numpy().tolist(), next(it)) for _ in range(n)]


@pytest.mark.parametrize("name", sorted(_pipelines()))
@pytest.mark.parametrize("k", [0, 4])
def test_restore_continues_where_saved(tmp_path, name, k):
    ds = _pipelines()[name]()
    it = iter(ds)
    ckpt = tf.train.Checkpoint(iterator=it)
    _take(it, k)
    path = ckpt.save(str(tmp_path / "ck"))
    after = _take(it, 3)
    ckpt.restore(path).assert_consumed()
    assert _take(it, 3) == after


@pytest.mark.parametrize("name", sorted(_pipelines()))
def test_restore_into_fresh_iterator_and_rebuilt_pipeline(tmp_path, name):
    ds = _pipelines()[name]()
    it = iter(ds)
    _take(it, 5)
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ck"))
    rest = [e.numpy().tolist() for e in it]
    fresh = iter(ds)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    assert [e.numpy().tolist() for e in fresh] == rest
    rebuilt = iter(_pipelines()[name]())  # the same pipeline built again (another process)
    tf.train.Checkpoint(iterator=rebuilt).restore(path)
    assert [e.numpy().tolist() for e in rebuilt] == rest


def test_reshuffle_each_pass_restored_into_fresh_iterator(tmp_path):
    # The second iterator of a reshuffling dataset sees another order than the first; restoring
    # the second's position into a third must reproduce the second's order.
    ds = tf.data.Dataset.range(12).shuffle(12, seed=4)
    first = [int(x) for x in iter(ds)]
    second_it = iter(ds)
    _take(second_it, 2)
    path = tf.train.Checkpoint(iterator=second_it).save(str(tmp_path / "ck"))
    second_rest = [int(x) for x in second_it]
    third = iter(ds)
    tf.train.Checkpoint(iterator=third).restore(path)
    got = [int(x) for x in third]
    assert got == second_rest
    assert first[2:] != second_rest  # the orders differ, so the test can tell them apart


def test_get_next_counts_too(tmp_path):
    ds = tf.data.Dataset.range(10)
    it = iter(ds)
    ckpt = tf.train.Checkpoint(iterator=it)
    it.get_next()
    it.get_next()
    path = ckpt.save(str(tmp_path / "ck"))
    fresh = iter(ds)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    assert int(fresh.get_next()) == 2


def test_checkpoint_manager(tmp_path):
    ds = tf.data.Dataset.range(20).map(lambda x: x + 100)
    it = iter(ds)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(iterator=it), str(tmp_path), max_to_keep=2
    )
    _take(it, 3)
    manager.save()
    _take(it, 4)
    manager.save()
    expected = _take(it, 2)
    fresh = iter(ds)
    manager2 = tf.train.CheckpointManager(
        tf.train.Checkpoint(iterator=fresh), str(tmp_path), max_to_keep=2
    )
    assert manager2.restore_or_initialize() == manager.latest_checkpoint
    assert _take(fresh, 2) == expected == [107, 108]


def test_mismatched_pipeline_is_refused_and_unchanged(tmp_path):
    it = iter(tf.data.Dataset.range(10))
    _take(it, 3)
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ck"))
    other = iter(tf.data.Dataset.range(10).map(lambda x: x + 1))
    _take(other, 1)
    with pytest.raises(ValueError, match="different input pipeline"):
        tf.train.Checkpoint(iterator=other).restore(path)
    assert _take(other, 1) == [2]  # the refused restore left it where it was


def test_unseeded_shuffle_rebuilt_is_refused_with_seed_hint(tmp_path):
    ds = tf.data.Dataset.range(50).shuffle(50)
    it = iter(ds)
    _take(it, 3)
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ck"))
    rest = [int(x) for x in it]
    same = iter(ds)  # the same dataset object: its drawn seed is known, the restore is exact
    tf.train.Checkpoint(iterator=same).restore(path)
    assert [int(x) for x in same] == rest
    rebuilt = iter(tf.data.Dataset.range(50).shuffle(50))
    with pytest.raises(ValueError, match="seed="):
        tf.train.Checkpoint(iterator=rebuilt).restore(path)


def test_exhausted_iterator(tmp_path):
    ds = tf.data.Dataset.range(4).batch(3)
    it = iter(ds)
    assert len(list(it)) == 2
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ck"))
    fresh = iter(ds)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    with pytest.raises(StopIteration):
        next(fresh)
    with pytest.raises(tf.errors.OutOfRangeError):
        fresh.get_next()


def test_iterator_with_model_in_one_checkpoint(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    model(np.ones((1, 3), np.float32))
    ds = tf.data.Dataset.range(10).batch(2)
    it = iter(ds)
    ckpt = tf.train.Checkpoint(model=model, iterator=it)
    _take(it, 2)
    saved = [w.copy() for w in model.get_weights()]
    path = ckpt.save(str(tmp_path / "ck"))
    model.set_weights([w + 1 for w in saved])
    expected = _take(it, 1)
    ckpt.restore(path).assert_consumed()
    for got, want in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(got, want)
    assert _take(it, 1) == expected == [[4, 5]]
    names = [n for n, _ in tf.train.list_variables(path)]
    assert "iterator/py_state" in names


def test_mismatch_in_shared_checkpoint_changes_no_variable(tmp_path):
    v = tf.Variable(1.0)
    it = iter(tf.data.Dataset.range(5))
    path = tf.train.Checkpoint(v=v, iterator=it).save(str(tmp_path / "ck"))
    v.assign(7.0)
    with pytest.raises(ValueError, match="different input pipeline"):
        tf.train.Checkpoint(v=v, iterator=iter(tf.data.Dataset.range(6))).restore(path)
    assert float(v.numpy()) == 7.0


def _restore_bytes(payload):
    from layerflow._src.data import iterator_state

    ds = tf.data.Dataset.range(10)
    it = iter(ds)
    state = json.loads(iterator_state.encode(it._fingerprint(), 0, []))
    state.update(payload)
    it.deserialize(json.dumps(state).encode())
    return it


@pytest.mark.parametrize(
    "payload, match",
    [
        ({"produced": -1}, "number of elements produced"),
        ({"produced": 11}, r"in \[0, 10\]"),  # more than the finite dataset holds
        ({"produced": 2.5}, "number of elements produced"),
        ({"produced": True}, "number of elements produced"),
        ({"produced": "3"}, "number of elements produced"),
        ({"passes": [1]}, "pass counters"),
        ({"version": 99}, "not a layerflow iterator state"),
        ({"fingerprint": 5}, "different input pipeline"),
    ],
)
def test_untrusted_state_is_checked(payload, match):
    with pytest.raises(ValueError, match=match):
        _restore_bytes(payload)


def test_garbage_state_is_refused():
    it = iter(tf.data.Dataset.range(3))
    with pytest.raises(ValueError, match="not a layerflow iterator state"):
        it.deserialize(b"\xff\x00garbage")
    with pytest.raises(ValueError, match="not a layerflow iterator state"):
        it.deserialize(b"[1, 2]")
    assert int(next(it)) == 0


def test_valid_state_bytes_restore():
    it = _restore_bytes({"produced": 10})
    with pytest.raises(StopIteration):
        next(it)
    assert int(next(_restore_bytes({"produced": 6}))) == 6


def test_zip_of_reshuffling_inputs(tmp_path):
    a = tf.data.Dataset.range(10).shuffle(10, seed=1)
    b = tf.data.Dataset.range(10).shuffle(10, seed=2)
    ds = tf.data.Dataset.zip((a, b))
    [x for x in ds]  # a first pass, so the pass counters are not at zero
    it = iter(ds)
    _take(it, 3)
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ck"))
    rest = [[int(x), int(y)] for x, y in it]
    fresh = iter(ds)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    assert [[int(x), int(y)] for x, y in fresh] == rest
