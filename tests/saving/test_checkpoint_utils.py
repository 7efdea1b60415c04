"""tf.train's checkpoint readers (list_variables, load_checkpoint, load_variable,
get_checkpoint_state, checkpoints_iterator), CheckpointOptions with async saves and sync(),
CheckpointManager.checkpoint_interval; untrusted state files and damaged checkpoint files."""

import os
import threading
import time

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.saving import checkpoint_utils


def _saved(tmp_path, **values):
    ckpt = tf.train.Checkpoint(**{k: tf.Variable(v) for k, v in values.items()})
    return ckpt, ckpt.save(str(tmp_path / "ckpt"))


def test_list_and_load_variables(tmp_path):
    _, path = _saved(tmp_path, w=np.arange(6.0, dtype=np.float32).reshape(2, 3), b=np.int64(7))
    assert tf.train.list_variables(str(tmp_path)) == [("b", []), ("save_counter", []),
                                                      ("w", [2, 3])]  # fmt: skip
    assert tf.train.list_variables(path) == tf.train.list_variables(str(tmp_path))
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_variable_to_dtype_map() == {"b": tf.int64, "save_counter": tf.int64,
                                                  "w": tf.float32}  # fmt: skip
    np.testing.assert_array_equal(reader.get_tensor("w"), np.arange(6.0).reshape(2, 3))
    # TF's spelling of the same variable, and a trailing ':0', find it too
    assert reader.has_tensor("w/.ATTRIBUTES/VARIABLE_VALUE") and reader.has_tensor("w:0")
    assert not reader.has_tensor("nope")
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found"):
        reader.get_tensor("nope")
    assert int(tf.train.load_variable(str(tmp_path), "b")) == 7
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_checkpoint(_empty(tmp_path))
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.load_checkpoint(str(tmp_path / "no-such-ckpt"))


def _empty(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    return str(folder)


def test_shared_variable_is_listed_under_both_paths(tmp_path):
    v = tf.Variable([1.0, 2.0])
    path = tf.train.Checkpoint(a=v, b=v).save(str(tmp_path / "ckpt"))
    names = dict(tf.train.list_variables(path))
    assert names["a"] == names["b"] == [2]
    assert tf.train.load_variable(path, "b").tolist() == [1.0, 2.0]


def test_damaged_checkpoint_file_is_refused(tmp_path):
    _, path = _saved(tmp_path, w=np.ones(4, np.float32))
    with open(path, "r+b") as f:  # a lying header length
        f.write((10**12).to_bytes(8, "little"))
    with pytest.raises(ValueError, match="header length"):
        tf.train.list_variables(path)


def test_get_checkpoint_state_and_hostile_entries(tmp_path):
    ckpt, first = _saved(tmp_path, w=np.ones(2, np.float32))
    second = ckpt.save(str(tmp_path / "ckpt"))
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == second
    assert state.all_model_checkpoint_paths == [first, second]
    assert tf.train.get_checkpoint_state(_empty(tmp_path)) is None
    (tmp_path / "secret").write_text("outside")
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint").write_text(
        'model_checkpoint_path: "../secret"\nall_model_checkpoint_paths: "/etc/passwd"\n'
    )
    with pytest.warns(UserWarning, match="Ignoring 2 entries"):
        assert tf.train.get_checkpoint_state(str(run)) is None
    with pytest.raises(ValueError, match="file name inside the folder"):
        tf.train.get_checkpoint_state(str(tmp_path), latest_filename="../checkpoint")


def test_checkpoints_iterator_follows_a_writer_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint_utils, "POLL_SECONDS", 0.02)
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    folder = str(tmp_path)

    def writer():
        for _ in range(3):
            time.sleep(0.15)
            ckpt.save(os.path.join(folder, "ckpt"))

    thread = threading.Thread(target=writer)
    thread.start()
    seen = list(tf.train.checkpoints_iterator(folder, timeout=1.0))
    thread.join()
    assert [os.path.basename(p) for p in seen] == ["ckpt-1", "ckpt-2", "ckpt-3"]
    # timeout_fn: called on each timeout; True ends the iteration, False waits again
    calls = []

    def timeout_fn():
        calls.append(1)
        return len(calls) >= 2

    start = time.monotonic()
    assert list(tf.train.checkpoints_iterator(folder, timeout=0.1, timeout_fn=timeout_fn)) == [
        os.path.join(folder, "ckpt-3")
    ]
    assert len(calls) == 2 and time.monotonic() - start < 2.0


def test_async_save_copies_values_and_sync_waits(tmp_path):
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v)
    options = tf.train.CheckpointOptions(enable_async=True)
    assert options.enable_async and tf.train.CheckpointOptions().enable_async is False
    path = ckpt.save(str(tmp_path / "ckpt"), options=options)
    v.assign([9.0, 9.0])  # after save returned: the file keeps the values of the save
    ckpt.sync()
    assert tf.train.load_variable(path, "v").tolist() == [1.0, 2.0]
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "m"), max_to_keep=1)
    saved = manager.save(options=options)
    manager.sync()
    assert os.path.exists(saved) and manager.latest_checkpoint == saved


def test_async_write_error_is_raised_by_sync(tmp_path, monkeypatch):
    from layerflow._src.saving import weights_file

    def broken(*args, **kwargs):
        raise OSError("disk full")

    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    monkeypatch.setattr(weights_file, "write", broken)
    ckpt.write(str(tmp_path / "x"), options=tf.train.CheckpointOptions(enable_async=True))
    with pytest.raises(OSError, match="disk full"):
        ckpt.sync()  # the background error is re-raised, never lost
    ckpt.sync()  # and only once
    assert not (tmp_path / "x").exists()


def test_manager_checkpoint_interval(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path),
                                         max_to_keep=None, step_counter=step,
                                         checkpoint_interval=5)  # fmt: skip
    assert manager.checkpoint_interval == 5
    saved = []
    for s in range(12):
        step.assign(s)
        saved.append(manager.save() is not None)
    assert [s for s, ok in enumerate(saved) if ok] == [0, 5, 10]
    assert manager.save(check_interval=False) is not None
