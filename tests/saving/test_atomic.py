"""A save killed with SIGKILL at any moment leaves the previous file loadable."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

from layerflow._src.saving import weights_file

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from layerflow._src.saving import weights_file
    path = sys.argv[1]
    i = 0
    while True:
        i += 1
        value = np.full((256, 1024), i, np.float32)  # 1 MB per save: kills land mid-write
        weights_file.write(path, {"w": value, "step": np.array(i, np.int64)})
        print(i, flush=True)
    """
)


def test_sigkill_during_saves_never_leaves_an_unloadable_file(tmp_path):
    path = tmp_path / "w.params"
    weights_file.write(path, {"w": np.zeros((256, 1024), np.float32), "step": np.array(0)})
    rng = np.random.default_rng(0)
    last_seen = 0
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
        proc.stdout.readline()  # it is saving in a loop now
        time.sleep(float(rng.uniform(0.0, 0.05)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        arrays, _ = weights_file.read(path)  # never a WeightsFileError
        step = int(arrays["step"])
        assert step >= 1
        np.testing.assert_array_equal(arrays["w"], np.float32(step))
        last_seen = step
    assert last_seen >= 1
    leftovers = [n for n in os.listdir(tmp_path) if n != "w.params"]
    # A killed writer can leave hidden temporary files (ours, or safetensors' own `.tmp*`),
    # never a visible partial file.
    assert all(n.startswith(".") for n in leftovers), leftovers
