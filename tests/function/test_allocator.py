"""A compiled plan's large temporaries reuse the pages of the previous call (glibc)."""

import platform
import subprocess
import sys

import pytest

_PROBE = """
import resource, numpy as np
import layerflow as tf
if {traced}:
    tf.function(lambda x: x + 1.0, autograph=False)(tf.constant(1.0))  # builds a plan
def touch():
    a = np.empty(1 << 20, np.float32)  # 4 MiB
    a.fill(1.0)
    del a
touch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
touch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_after_a_plan_is_built_a_freed_large_array_is_reused_without_page_faults():
    def faults(traced):
        out = subprocess.run([sys.executable, "-c", _PROBE.format(traced=traced)],
                             capture_output=True, text=True, check=True)  # fmt: skip
        return int(out.stdout.split()[-1])

    # 4 MiB is 1024 pages: with glibc's defaults most are mapped afresh (mmap, or a heap grown
    # anew after a trim)
    assert faults(False) > 256
    assert faults(True) < 64
