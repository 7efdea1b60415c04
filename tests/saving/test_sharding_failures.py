"""A sharded checkpoint save that fails midway leaves the folder as it was: no new files, and a
previous checkpoint at the same path stays whole and loadable."""

import contextlib
import errno
import os

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.saving import sharded_file, weights_file

ST = tf.train.experimental


def _options(limit=40):
    return tf.train.CheckpointOptions(experimental_sharding_callback=ST.MaxShardSizePolicy(limit))


def _failing_data_writes(monkeypatch, fail_at, error):
    """`sharded_file`'s atomic writes: the `fail_at`-th one raises `error` after writing."""
    real = sharded_file.atomic_write
    calls = []

    @contextlib.contextmanager
    def flaky(path, *args, **kwargs):
        calls.append(path)
        with real(path, *args, **kwargs) as tmp:
            yield tmp
            if len(calls) == fail_at:
                raise error

    monkeypatch.setattr(sharded_file, "atomic_write", flaky)
    return calls


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
@pytest.mark.parametrize("fail_at", [1, 3])
def test_failed_data_file_leaves_the_folder_and_previous_checkpoint(
    tmp_path, monkeypatch, error, fail_at
):
    v = tf.Variable(tf.ones((4, 6)))
    ckpt = tf.train.Checkpoint(v=v)
    path = str(tmp_path / "c")
    ckpt.write(path, options=_options())
    before = sorted(os.listdir(tmp_path))
    v.assign(tf.fill((4, 6), 2.0))
    calls = _failing_data_writes(monkeypatch, fail_at, error)
    with pytest.raises(type(error)):
        ckpt.write(path, options=_options())
    assert len(calls) == fail_at  # the save stopped where the failure happened
    assert sorted(os.listdir(tmp_path)) == before
    np.testing.assert_array_equal(tf.train.load_variable(path, "v"), np.ones((4, 6)))
    monkeypatch.undo()
    v.assign(tf.zeros((4, 6)))
    ckpt.read(path).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), np.ones((4, 6)))


def test_failed_index_write_removes_the_new_data_files(tmp_path, monkeypatch):
    ckpt = tf.train.Checkpoint(v=tf.Variable(tf.ones((4, 6))))
    path = str(tmp_path / "c")

    def broken_index(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(weights_file, "write", broken_index)
    with pytest.raises(OSError, match="Input/output"):
        ckpt.write(path, options=_options())
    assert os.listdir(tmp_path) == []


def test_failed_save_through_checkpoint_save_keeps_the_earlier_one(tmp_path, monkeypatch):
    v = tf.Variable(tf.ones((4, 6)))
    ckpt = tf.train.Checkpoint(v=v)
    first = ckpt.save(str(tmp_path / "ck"), options=_options())
    before = sorted(os.listdir(tmp_path))
    _failing_data_writes(monkeypatch, 2, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError):
        ckpt.save(str(tmp_path / "ck"), options=_options())
    assert sorted(os.listdir(tmp_path)) == before
    assert tf.train.latest_checkpoint(str(tmp_path)) == first
    np.testing.assert_array_equal(tf.train.load_variable(first, "v"), np.ones((4, 6)))
