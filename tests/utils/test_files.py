"""Atomic writes: all or nothing, normal permissions, overwrite=False never clobbers."""

import os
import stat

import pytest

from layerflow._src.utils.files import atomic_write


def test_new_file_respects_umask_not_mkstemp(tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "w.bin"
        with atomic_write(target) as tmp, open(tmp, "wb") as f:
            f.write(b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_failure_leaves_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "w.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(target) as tmp:
        with open(tmp, "wb") as f:
            f.write(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.bin"]


def test_overwrite_false_refuses(tmp_path):
    target = tmp_path / "w.bin"
    target.write_bytes(b"old")
    with pytest.raises(FileExistsError, match="overwrite=True"), atomic_write(target, False):
        pass
    assert target.read_bytes() == b"old"


def test_missing_folder_is_named(tmp_path):
    with (
        pytest.raises(FileNotFoundError, match="does not exist"),
        atomic_write(tmp_path / "nope" / "w.bin"),
    ):
        pass
