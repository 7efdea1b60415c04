"""BLAS threads per GEMM: one thread for small products, the cores other processes leave free
for large ones.

Why. OpenBLAS runs every GEMM above a tiny size on all its threads and ends it at a barrier.
When another process keeps a core busy, one of those threads waits for the scheduler's next
slice while the others spin: an MLP epoch ran 3.6x slower on a 2-core machine with one busy
process, a char-RNN far more. So before a large GEMM the kernels call `gemm(m, n, k)`, which

- asks for 1 thread when `m * n * k` is below `SMALL_MNK` (measured on a 2-core AVX-512 machine
  with `bench/blas_threads.py`: below about 1e6 multiply-adds a second thread gains nothing
  and only adds a barrier);
- else asks for the cores not used by other processes: every `REFRESH_S` seconds it reads the
  machine's busy time (`/proc/stat`, elsewhere `os.getloadavg()`) and subtracts this process's
  own CPU time, so our own threads never count as load;
- never asks for more than the cap: the thread count BLAS had when first seen, which is where
  `OPENBLAS_NUM_THREADS` / `OMP_NUM_THREADS` (set by the user, never by layerflow) end up, or a
  count someone else set since (`threadpoolctl.threadpool_limits`, `numpy` users' own calls);
- calls the library only when the wanted count differs from the one it set last (the
  `threadpoolctl` controller is built once: building one re-scans the loaded libraries, about
  a millisecond), and only from the main thread: replicas of a `MirroredStrategy` run GEMMs
  in threads of their own, and a count changed under a running GEMM is not something every
  BLAS tolerates.

Without `threadpoolctl` importable, or with no BLAS it knows, `gemm` does nothing.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

# Below this many multiply-adds a GEMM runs on one thread (see the module docstring).
SMALL_MNK = 1 << 20
# Seconds between two looks at the machine's load.
REFRESH_S = 0.5


def _affinity_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _proc_stat() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot, or None off Linux."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    ticks = [int(v) for v in fields[1:8]]  # user nice system idle iowait irq softirq
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / hz, sum(ticks) / hz


class LoadProbe:
    """How many cores other processes keep busy, averaged since the previous call."""

    def __init__(self) -> None:
        self.cores = _affinity_cores()
        self._last = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, Any]:
        return time.monotonic(), time.process_time(), _proc_stat()

    def others_busy(self) -> float:
        wall0, own0, stat0 = self._last
        wall1, own1, stat1 = self._last = self._sample()
        if stat0 is not None and stat1 is not None and stat1[1] > stat0[1]:
            ncpu = os.cpu_count() or self.cores
            # Busy cores of the machine over the interval, less what this process used.
            busy = (stat1[0] - stat0[0]) / (stat1[1] - stat0[1]) * ncpu
            own = (own1 - own0) / max(wall1 - wall0, 1e-9)
            return max(0.0, busy - own)
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            return 0.0
        return max(0.0, load - 1.0)  # the 1-minute average counts this process's own thread


def free_threads(cores: int, others_busy: float) -> int:
    """Threads worth running beside `others_busy` cores of other work: a core counts as taken
    once it is 60% busy (a thread that loses its core half the time stalls every barrier)."""
    return max(1, int(cores - others_busy + 0.4))


def _threadpoolctl_blas() -> list:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return []
    try:
        return [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    except Exception:  # a library threadpoolctl cannot drive: leave BLAS alone
        return []


class BlasThreads:
    """The per-process policy. `gemm` is the hot path: for a small product it only compares two
    ints; for a large one it also reads the clock, and every `REFRESH_S` the machine's load."""

    def __init__(self, libs: Any = None, probe: Any = None, clock: Any = time.monotonic) -> None:
        self._libs = libs  # None: looked up on first use
        self._probe = probe
        self._clock = clock
        self.cap = 0  # the most threads to ask for; read from BLAS on the first switch
        self.free = 0  # threads for a large GEMM; 0 until the first refresh
        self.current = 0  # the count this policy set last (0: none yet)
        self.switches = 0  # calls into the library (for tests and the bench)
        self._next = 0.0
        self._owner = threading.main_thread().ident  # the one thread that switches

    def gemm(self, m: int, n: int, k: int) -> None:
        """Set the thread count for an (m, k) @ (k, n) product (batched: m counts the batch)."""
        if m * n * k < SMALL_MNK:
            if self.current != 1:
                self._set(1)
            return
        # Reading the clock costs ~0.2 us here, nothing beside a GEMM of 1e6 multiply-adds.
        now = self._clock()
        if now >= self._next:
            self._refresh(now)
        if self.free != self.current:
            self._set(self.free)

    def _set(self, n: int) -> None:
        if threading.get_ident() != self._owner:
            return
        if not self.cap:
            self._find()
        if not self._libs or n < 1:
            self.current = n
            return
        for lib in self._libs:
            lib.set_num_threads(n)
        self.current = n
        self.switches += 1

    def _find(self) -> None:
        """The libraries to drive, and their thread count now: the cap."""
        if self._libs is None:
            self._libs = _threadpoolctl_blas()
        self.cap = 1
        if self._libs:
            self.cap = max(1, min(int(lib.get_num_threads()) for lib in self._libs))
            self.current = self.cap

    def _refresh(self, now: float) -> None:
        self._next = now + REFRESH_S
        if not self.cap:
            self._find()
        if not self._libs:
            self.free = self.current  # nothing to drive: never switch
            self._next = float("inf")
            return
        seen = min(int(lib.get_num_threads()) for lib in self._libs)
        if seen != self.current:
            # Someone else set the count (threadpool_limits, a user's own call): the new cap.
            self.cap = max(1, seen)
            self.current = seen
        if self._probe is None:
            self._probe = LoadProbe()  # measures from now on; until then, all threads
            self.free = self.cap
            return
        self.free = min(self.cap, free_threads(self._probe.cores, self._probe.others_busy()))


_POLICY = BlasThreads()
gemm = _POLICY.gemm


def policy() -> BlasThreads:
    """The process's policy object (its `cap`, `free`, `current` and `switches`)."""
    return _POLICY
