"""Loading while another writer atomically replaces the file reads one whole file, old or new:
the header and the data come from one open handle, so there is never a false "damaged" error."""

import shutil
import subprocess
import sys
import textwrap

import numpy as np

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.saving import io as lf_io
from layerflow._src.saving import restore

SWAPPER = textwrap.dedent(
    """
    import os, shutil, sys
    target, sources = sys.argv[1], sys.argv[2:]
    tmp = target + ".swap"
    print("ready", flush=True)
    i = 0
    while True:
        shutil.copyfile(sources[i % 2], tmp)
        os.replace(tmp, target)
        i += 1
    """
)


class Holder(Trackable):
    def __init__(self, fill, name="v"):
        self.vs = [Variable(np.full((32, 16), fill + i, np.float32), name=name) for i in range(3)]

    def _trackable_children(self):
        return {"layers": self.vs}


def _swapping(tmp_path, a, b):
    target = tmp_path / "w.params"
    shutil.copyfile(a, target)
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(target), str(a), str(b)], stdout=subprocess.PIPE
    )
    assert proc.stdout.readline().strip() == b"ready"
    return target, proc


def _stop(proc):
    proc.kill()
    proc.wait()
    proc.stdout.close()


def test_load_weights_during_atomic_replacement_reads_one_whole_file(tmp_path):
    # Display names of different lengths: the two headers differ in size, so a header from one
    # file and data from the other can never line up by chance.
    a, b = tmp_path / "a.params", tmp_path / "b.params"
    restore.save(Holder(1.0, name="a"), a)
    restore.save(Holder(100.0, name="b" * 40), b)
    target, proc = _swapping(tmp_path, a, b)
    seen = set()
    try:
        for _ in range(400):
            into = Holder(0.0)
            restore.load(into, target)  # never a WeightsFileError
            first = float(into.vs[0].numpy()[0, 0])
            assert first in (1.0, 100.0)
            for i, v in enumerate(into.vs):
                np.testing.assert_array_equal(v.numpy(), np.float32(first + i))
            seen.add(first)
    finally:
        _stop(proc)
    assert seen == {1.0, 100.0}  # the race really ran both ways


def test_io_load_during_atomic_replacement(tmp_path):
    a, b = tmp_path / "a.st", tmp_path / "b.st"
    lf_io.save(a, {"x": np.arange(5.0, dtype=np.float32)})
    lf_io.save(b, {"y": np.ones((7, 3), np.float64), "z": [np.zeros(2, np.int32)]})
    target, proc = _swapping(tmp_path, a, b)
    try:
        for _ in range(300):
            out = lf_io.load(target)
            assert set(out) in ({"x"}, {"y", "z"})
    finally:
        _stop(proc)
