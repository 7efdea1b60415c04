"""A save killed mid-way leaves a recognisable temporary file; the next save to the same folder
removes it once it is over a minute old and its writer is gone, and never touches a live
writer's file, a fresh one, or anything it did not name."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from layerflow._src.saving import weights_file
from layerflow._src.utils import files

# Starts a save, writes part of the file, then dies without cleaning up (as under SIGKILL) or,
# with "live", says so and keeps writing slowly until it is killed.
WRITER = textwrap.dedent(
    """
    import os, sys, time
    from layerflow._src.utils.files import atomic_write
    target, mode = sys.argv[1], sys.argv[2]
    with atomic_write(target) as tmp:
        with open(tmp, "wb") as f:
            f.write(b"half a file")
        print(tmp, flush=True)
        if mode == "die":
            os._exit(0)
        time.sleep(600)
    """
)


def _writer(folder, name, mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder / name), mode],
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    tmp = proc.stdout.readline().strip()
    if mode == "die":
        proc.wait()
        proc.stdout.close()
    return tmp, proc


def _age(path, seconds):
    old = time.time() - seconds
    os.utime(path, (old, old))


@pytest.fixture
def folder(tmp_path):
    weights_file.write(tmp_path / "w.params", {"a": np.zeros(2, np.float32)})
    return tmp_path


def test_killed_saves_are_cleaned_live_and_fresh_ones_are_kept(folder):
    dead_old, _ = _writer(folder, "w.params", "die")
    dead_fresh, _ = _writer(folder, "other.params", "die")
    live_old, live = _writer(folder, "w.params", "live")
    try:
        for tmp in (dead_old, dead_fresh, live_old):
            assert os.path.isfile(tmp)
            assert ".layerflow-tmp-" in os.path.basename(tmp)
        _age(dead_old, 120)
        _age(live_old, 120)  # old, but its writer is still running
        weights_file.write(folder / "w.params", {"a": np.ones(2, np.float32)})
        assert not os.path.exists(dead_old)
        assert os.path.exists(dead_fresh)  # under a minute: may still be a slow writer's
        assert os.path.exists(live_old)
        _age(dead_fresh, 61)
        weights_file.write(folder / "unrelated.params", {"b": np.ones(1, np.float32)})
        assert not os.path.exists(dead_fresh)  # any save to the folder sweeps it
        assert os.path.exists(live_old)
    finally:
        live.kill()
        live.wait()
        live.stdout.close()
    np.testing.assert_array_equal(weights_file.read(folder / "w.params")[0]["a"], 1.0)


def test_only_files_it_named_are_removed(folder, tmp_path):
    dead, _ = _writer(folder, "w.params", "die")
    name = os.path.basename(dead)
    other_host = name.replace(
        files._host_tag(), "0" * 8 if files._host_tag() != "0" * 8 else "1" * 8
    )
    keep = {
        ".w.params.abc123.tmp": "file",  # the old naming scheme: cannot be attributed
        "w.params.layerflow-tmp-1-00000000-x": "file",  # not hidden: not ours
        other_host: "file",  # written on another host sharing the folder
        name + "dir": "dir",
        name + "link": "link",
    }
    for n, kind in keep.items():
        p = folder / n
        if kind == "file":
            p.write_bytes(b"x")
        elif kind == "dir":
            p.mkdir()
        else:
            os.symlink(dead, p)
        if kind != "link":
            _age(p, 3600)
    _age(dead, 3600)
    weights_file.write(folder / "w.params", {"a": np.ones(2, np.float32)})
    assert not os.path.exists(dead)
    for n in keep:
        assert os.path.lexists(folder / n), n


def test_temporary_names_fit_long_target_names(tmp_path):
    target = tmp_path / ("é" * 120 + ".params")  # 245 bytes: the limit is 255
    weights_file.write(target, {"a": np.zeros(1, np.float32)})
    assert os.listdir(tmp_path) == [target.name]
