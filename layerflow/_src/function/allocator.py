"""The C allocator's thresholds for the arrays a compiled plan allocates at every call.

A training step allocates a few arrays of ~1 MiB at every call (the batch, a weight's
gradient) and frees them at its end. glibc serves such sizes with `mmap` (or grows the heap
and trims it back as soon as the top is free), so each call pays the page faults of touching
fresh pages again: measured on the seed MLP's compiled `fit` (batch 256), ~0.35 ms of a ~1.7
ms step, and more for whichever step's allocation order hits the trim. With the mmap threshold
and the trim threshold fixed above those sizes, freed blocks stay in the heap and the next
call reuses them (the same pages, already mapped): the epoch took 0.52 -> 0.40 CPU s.

`tune()` sets them once, when the first plan is built (eager-only programs are left alone),
and only on glibc. Peak memory is unchanged (a freed block is reused, not added to); memory
freed by the program is kept by the process (up to `_TRIM`) instead of returned at once.
"""

from __future__ import annotations

import ctypes
import platform

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP = 32 << 20  # glibc's own upper bound for its dynamic mmap threshold (64-bit)
_TRIM = 64 << 20
_done = [False]


def tune() -> bool:
    """Set the thresholds (once per process); whether they are set (False off glibc)."""
    if _done[0]:
        return True
    _done[0] = True
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM))
