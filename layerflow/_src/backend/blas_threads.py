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

Measured choice (`timed` / `done`). The load is only a proxy: whether a second thread pays
depends on how the scheduler shares the cores right now, which `/proc/stat` cannot tell (a
machine with load ~1 from short jobs gave the MLP's 256x784x256 product 320 us on 2 threads
against 455 us on 1, where the load rule asked for 1). So the GEMMs whose callers report back
(Dense, matmul, the compiled plan's buffers) are timed now and then: per product shape, a
round times a block of `SAMPLES` calls on each count (1 thread, the load rule's count, all
`cap` threads; a bandit with periodic re-exploration, since the load changes), each call by
the wall clock around it, and the count with the lowest time (`_estimate`) wins until the next
round. More threads must win by `MIN_GAIN` (else they only burn the other core). A count
`REJECT` times slower than another at its second call (`REJECT_FIRST` at its first) is dropped
for the round; a round that confirms the choice doubles the wait to the next one (`EXPLORE_S`
up to `EXPLORE_MAX_S`); a change of the load rule's count (the machine got busier or quieter)
starts a round at once. While more threads than the fewest are chosen, every call is timed
and held to the fewest's time (`_watch`): stalls that cost more than `DEBT` such calls beyond
the gains send it back to one thread at once. On a crowded machine (load average above
`CROWDED` per core) it runs one thread and measures nothing: with 5-9 runnable threads on 2
cores, one 2-thread call in about three stalled for 12-90 ms against 0.5 ms on one thread.
Between rounds a call costs a clock read and a dict look-up (~0.4 us, plus `done` while
watched; beside GEMMs of >= 1e6 multiply-adds).
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
# Measured choice: seconds between two rounds of timing per product size, timed calls per
# thread count in a round, and how much faster more threads must be to be chosen.
EXPLORE_S = 0.25
EXPLORE_MAX_S = 8.0
SAMPLES = 3
MIN_GAIN = 0.05
# A count whose second or later sample takes this many times another's time is dropped (its
# first: REJECT_FIRST times, since it may pay for waking the threads).
REJECT = 2.0
REJECT_FIRST = 8.0
# A chosen count with more threads is watched at every call and dropped once it has lost DEBT
# calls' time of the fewest-thread count (its gains count up to CREDIT calls).
DEBT = 2.0
CREDIT = 10.0
# More runnable threads than this per core (the load average): one thread, nothing measured.
# With 4-9 runnable on 2 cores every 2-thread product risked a 12-90 ms stall (a 2-thread step's
# mean was 4-10x its median), and the rounds that found it out cost 5-20% of the mean step.
CROWDED = 1.5


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

    def runnable(self) -> float:
        """The 1-minute load average (runnable threads of the whole machine), 0 if unknown."""
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):
            return 0.0

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


class _Shape:
    """What the policy knows about one product size: its chosen count, when to re-measure, the
    arms still to time in this round and the timings so far."""

    __slots__ = ("best", "best_t", "fallback", "fallback_t", "debt", "gap", "next", "todo",
                 "times", "fails")  # fmt: skip

    def __init__(self) -> None:
        self.best = 0  # the chosen count (0: none yet)
        self.best_t = 0.0  # its median time in the last round
        self.fallback = 0  # while more threads than the fewest measured are chosen: that count
        self.fallback_t = 0.0  # and its time, what each monitored call is held to
        self.debt = 0.0  # seconds the chosen count lost against the fallback since the round
        self.gap = EXPLORE_S  # seconds to the next round
        self.next = 0.0  # 0: a round is under way (or due)
        self.todo: list[int] = []  # counts still to time this round, popped from the end
        self.times: dict[int, list[float]] = {}
        self.fails = 0  # fallbacks since more threads were last confirmed by a round


def _estimate(xs: list[float]) -> float:
    """A count's time from its block of samples: the median of all but the first (the first
    call after a switch to more threads wakes OpenBLAS's sleeping workers, which on a loaded
    machine took 12-65 ms where the next calls took a few hundred us: not what staying on
    that count costs)."""
    xs = sorted(xs[1:] or xs)
    return xs[len(xs) // 2]


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
        self._shapes: dict[int, _Shape] = {}  # product shape -> measured choice
        self._pending: tuple[_Shape, int] | None = None  # the sample `done` closes
        self.rounds = 0  # measuring rounds finished (for tests and the bench)
        self.fallbacks = 0  # choices abandoned between rounds (`_watch`)
        self.crowded = False  # more than CROWDED runnable threads per core: 1 thread, no rounds

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

    def timed(self, m: int, n: int, k: int) -> float | None:
        """`gemm`, choosing the count by measurement (see the module docstring). Returns None,
        or the start time when this call is a sample: then call `done(start)` right after the
        GEMM (a sample never closed is dropped)."""
        mnk = m * n * k
        if mnk < SMALL_MNK:
            if self.current != 1:
                self._set(1)
            return None
        now = self._clock()
        if now >= self._next:
            self._refresh(now)
        key = mnk ^ (m << 40)  # two products of one size may scale differently
        shape = self._shapes.get(key)
        if shape is None or now >= shape.next:
            return self._explore(key, shape, now)
        if shape.best != self.current:
            self._set(shape.best)
        if shape.fallback and self._pending is None:  # more threads: every call is watched
            self._pending = (shape, 0)
            return now
        return None

    def done(self, start: float) -> None:
        """Close the sample `timed` opened at `start`."""
        elapsed = self._clock() - start
        pending, self._pending = self._pending, None
        if pending is None:
            return
        shape, arm = pending
        if not arm:  # a watched call of the chosen count (see `_watch`)
            self._watch(shape, elapsed)
            return
        times = shape.times.setdefault(arm, [])
        times.append(elapsed)
        others = [_estimate(t) for a, t in shape.times.items() if a != arm]
        if others and elapsed > (REJECT if len(times) >= 2 else REJECT_FIRST) * min(others):
            shape.todo = [a for a in shape.todo if a != arm]  # clearly slower: no more
        if not shape.todo:
            self._decide(shape)

    def _watch(self, shape: _Shape, elapsed: float) -> None:
        """Between rounds, a count with more threads than the fallback stays only while it has
        not lost more than `DEBT` fallback calls' time against it since the round (its gains,
        up to `CREDIT` calls' worth, pay for later stalls): on a loaded machine 2 threads can
        run several calls fast, then stall one for tens of ms."""
        ref = shape.fallback_t
        shape.debt = max(shape.debt + elapsed - ref, -CREDIT * ref)
        if shape.debt > DEBT * ref:
            shape.best, shape.best_t = shape.fallback, ref
            shape.fallback, shape.debt = 0, 0.0
            # Re-measure soon after a first stall (one stall of a daemon's wake-up must not
            # hold a quiet machine on one thread for EXPLORE_MAX_S: the MLP's epochs ran 20%
            # slower), later after each further one in a row (a loaded machine).
            shape.gap = min(EXPLORE_S * 2.0**shape.fails, EXPLORE_MAX_S)
            shape.fails += 1
            shape.next = self._clock() + shape.gap
            self.fallbacks += 1

    def _arms(self) -> list[int]:
        if not self.cap:
            self._find()
        if not self._libs:
            return [max(1, self.current)]
        if self.crowded:
            return [1]
        return sorted({1, max(1, min(self.free or self.cap, self.cap)), self.cap})

    def _explore(self, key: int, shape: _Shape | None, now: float) -> float | None:
        if threading.get_ident() != self._owner:  # only the main thread measures
            if shape is not None and shape.best and shape.best != self.current:
                self._set(shape.best)
            elif (shape is None or not shape.best) and self.free != self.current:
                self._set(self.free)
            return None
        if shape is None:
            shape = self._shapes[key] = _Shape()
        if shape.next:  # a new round
            shape.next = 0.0
            shape.todo, shape.times = [], {}
        if not shape.todo:
            arms = self._arms()
            if len(arms) == 1:
                shape.best, shape.next = arms[0], now + EXPLORE_S
                shape.fallback = 0
                if shape.best != self.current:
                    self._set(shape.best)
                return None
            if all(len(shape.times.get(a, ())) >= 1 for a in arms):
                self._decide(shape)  # the round's last sample was dropped: decide anyway
                if shape.best != self.current:
                    self._set(shape.best)
                return None
            # A block of calls per count, the chosen one first (a new shape: the load rule's);
            # each block's first call finds a count's idle threads asleep (see `_estimate`).
            lead = shape.best or self.free or self.current
            first = arms.index(lead) if lead in arms else 0
            shape.todo = [a for a in arms[first:] + arms[:first] for _ in range(SAMPLES)]
            shape.todo.reverse()  # popped from the end
        arm = shape.todo.pop()
        if arm != self.current:
            self._set(arm)
        self._pending = (shape, arm)
        return self._clock()

    def _decide(self, shape: _Shape) -> None:
        best, best_t = 0, 0.0
        for arm in sorted(shape.times):
            t = _estimate(shape.times[arm])
            if not best or t < best_t * (1.0 - MIN_GAIN):
                best, best_t = arm, t
        # The same choice again: measure half as often (a round costs samples at the slower
        # counts); a new one: back to every EXPLORE_S.
        shape.gap = min(2.0 * shape.gap, EXPLORE_MAX_S) if best == shape.best else EXPLORE_S
        if best == shape.best:
            shape.fails = 0  # the choice held from one round to the next
        shape.best, shape.best_t = best, best_t
        fewest = min(shape.times)
        shape.fallback = fewest if best != fewest else 0
        shape.fallback_t = _estimate(shape.times[fewest])
        shape.debt = 0.0
        shape.todo = []
        shape.next = self._clock() + shape.gap
        self.rounds += 1

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
            self._shapes.clear()  # measured under the old cap
            self._pending = None
        if self._probe is None:
            self._probe = LoadProbe()  # measures from now on; until then, all threads
            self.free = self.cap
            self.crowded = self._probe.runnable() > CROWDED * self._probe.cores
            return
        free = min(self.cap, free_threads(self._probe.cores, self._probe.others_busy()))
        runnable = getattr(self._probe, "runnable", None)
        crowded = runnable is not None and runnable() > CROWDED * self._probe.cores
        if free != self.free or crowded != self.crowded:  # the load changed: measure again
            for shape in self._shapes.values():
                if shape.next:
                    shape.next, shape.gap = now, EXPLORE_S
        self.crowded = crowded
        self.free = free


_POLICY = BlasThreads()
gemm = _POLICY.gemm
timed = _POLICY.timed
done = _POLICY.done


def policy() -> BlasThreads:
    """The process's policy object (its `cap`, `free`, `current` and `switches`)."""
    return _POLICY
