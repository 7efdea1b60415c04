"""A convolution's chunks shared between threads when the machine has free cores.

Why. Only the GEMMs of a convolution run on BLAS' threads; its patch gathers (im2col), patch
gradient adds (col2im, shifted-frame tap adds), relu masks and bias sums run on one core. When
`blas_threads`' policy would give a large GEMM more than one thread (the cores other processes
leave free, never more than BLAS was allowed), the chunks go to that many Python threads, each
with its own buffers, and BLAS is set to one thread: copies, adds and GEMMs of different chunks
then run side by side with no barrier per GEMM (NumPy releases the GIL for all three, and
the shifted frames' compiled kernels, `frames_jit`, release it too).

Units. A thread always gets whole images: the chunks of one image range (`cv.plan`'s bands of
rows of one image, or one chunk of whole images) form one unit, and units are dealt round
robin, so bands that overlap in the input gradient (col2im adds at their borders) are added by
one thread in the serial order. Dealt round robin, the threads reach the chunks in about
their order, so the filter and bias gradients are added in chunk order (`Turns`): every
result is the same, bit for bit, whatever the number of threads.

Budget. Threads run only while all their buffers together fit the convolution's budget
(`conv_kernels.BUDGET_BYTES`, kept in the plan): a plan whose chunks fill it stays serial.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from layerflow._src.backend import blas_threads
from layerflow._src.ops.conv_geometry import add_filter_grad

# At most this many threads run one convolution's chunks (the pool is made on first use),
# and only a convolution of at least this many multiply-adds (one GEMM's worth) is shared:
# starting and joining the threads costs ~0.1 ms.
MAX_THREADS = 4
THREADS_MNK = 1 << 22
# Benches and tests only: this many threads whatever the load and size (None: the policy's).
FORCE: int | None = None
# Whether im2col (`wide=True` callers: WIDE) and the shifted frames (`wide="frames"`: FRAMES)
# share their chunks at all; row frames (`conv_small`) always may. Per layer, sharing is faster
# on a quiet 2-core machine (wall ms forward / backward, batch 16, 1 -> 2 threads: AlexNet's
# 11x11/4 layer 10.4 / 18.3 -> 10.2 / 14.4, its 5x5 96 -> 256 layer 44.9 / 87.8 -> 38.6 /
# 87.5, VGG-11's 56x56 64 -> 64 layer by shifted frames 22.1 / 44.2 -> 14.8 / 30.8). Whole
# training steps (`bench/cnn_step.py` models, batch 16, on and off alternating in one process,
# median s/step, load 1-2): shifted frames on / off VGG-11 0.393 / 0.428, AlexNet, NiN,
# GoogLeNet, ResNet-18, DenseNet within 2%; im2col on / off NiN 0.419 / 0.332, GoogLeNet 0.183
# / 0.168, ResNet-18 0.194 / 0.186, VGG-11 0.404 / 0.446, AlexNet and DenseNet within 2%.
# OpenBLAS's idle workers spin (~0.1 s) after every multi-threaded GEMM of the layers that stay
# serial (NiN's and GoogLeNet's many 1x1 convolutions), taking the core a conv thread needs.
# So the shifted frames share and im2col stays serial.
WIDE = False
FRAMES = True
_POOL: list[Any] = [None, 0]  # the pool, and the process that made it


def count(xp: Any, units: int, mnk: tuple[int, int, int], per_thread: int = 0,
          budget: int = 0, wide: bool | str = False) -> int:  # fmt: skip
    """How many threads run `units` units of work of a convolution whose whole product is
    `mnk` (m, n, k): 1 off NumPy, off the main thread, for one unit or a small product; else
    the threads the policy gives a large GEMM (at most MAX_THREADS, one per unit, and as many
    as `per_thread` bytes of buffers each fit `budget`). With more than one, BLAS is set to
    one thread (each thread's GEMMs are its own). im2col (`wide=True`) shares only while WIDE
    is set, the shifted frames (`wide="frames"`) only while FRAMES is."""
    if FORCE is None and ((wide == "frames" and not FRAMES) or (wide is True and not WIDE)):
        return 1
    if xp is not np or units < 2 or threading.current_thread() is not threading.main_thread():
        return 1
    if FORCE is not None:
        threads = FORCE
    else:
        m, n, k = mnk
        if m * n * k < THREADS_MNK:
            return 1
        # The policy looks at the load (every 0.5 s) and sets the threads a large GEMM gets.
        blas_threads.gemm(m, n, k)
        threads = blas_threads.policy().current
    threads = min(threads, units, MAX_THREADS)
    if per_thread > 0 and budget > 0:
        threads = min(threads, max(1, budget // per_thread))
    if threads < 2:
        return 1
    blas_threads.gemm(1, 1, 1)  # one BLAS thread per Python thread
    return threads


def units(plan: list) -> list[list[int]]:
    """The chunk indices of each unit: consecutive chunks of one image range."""
    out: list[list[int]] = []
    for i, (n0, n1, _, _) in enumerate(plan):
        if out and plan[out[-1][0]][:2] == (n0, n1):
            out[-1].append(i)
        else:
            out.append([i])
    return out


def deal(plan: list, threads: int) -> list[list[int]]:
    """The chunk indices each of `threads` threads runs, in order: units dealt round robin."""
    shares: list[list[int]] = [[] for _ in range(threads)]
    for u, unit in enumerate(units(plan)):
        shares[u % threads].extend(unit)
    return shares


def run(threads: int, work: Any) -> None:
    """`work(t)` for t in range(threads): the first in this thread, the others in the pool's.
    Returns when all have ended; re-raises the first error (the others are told to stop
    waiting through `Turns.fail`, which `work` calls on its way out)."""
    if threads == 1:
        work(0)
        return
    pool, pid = _POOL
    if pool is None or pid != os.getpid():  # a forked child has none of the parent's threads
        pool = ThreadPoolExecutor(MAX_THREADS - 1, thread_name_prefix="lf-conv")
        _POOL[:] = [pool, os.getpid()]
    futures = [pool.submit(work, t) for t in range(1, threads)]
    errors: list[BaseException] = []
    try:
        work(0)
    except BaseException as e:
        errors.append(e)
    for fut in futures:
        try:
            fut.result()  # waits for every thread
        except BaseException as e:
            errors.append(e)
    if errors:  # the error that stopped the others, not theirs
        raise next((e for e in errors if not isinstance(e, Stopped)), errors[0])


class Stopped(RuntimeError):
    """A thread stopped waiting for its turn because another one failed."""


class Turns:
    """Chunk i's additions to the shared gradients wait until chunk i - 1's are done, so the
    sums are taken in chunk order. `fail` (a thread's error) wakes and stops every waiter."""

    __slots__ = ("next", "cond", "failed")

    def __init__(self) -> None:
        self.next, self.cond, self.failed = 0, threading.Condition(), False

    def wait(self, i: int) -> None:
        with self.cond:
            while self.next != i and not self.failed:
                self.cond.wait()
            if self.failed:
                raise Stopped("another thread of this convolution failed")

    def done(self) -> None:
        with self.cond:
            self.next += 1
            self.cond.notify_all()

    def fail(self) -> None:
        with self.cond:
            self.failed = True
            self.cond.notify_all()


def guarded(turns: Turns | None, work: Any) -> Any:
    """`work` that, on an error, fails `turns` (so no other thread waits for it forever)."""

    def call(t: int) -> None:
        try:
            work(t)
        except BaseException:
            if turns is not None:
                turns.fail()
            raise

    return call


def add_grads(xp: Any, turns: Turns | None, i: int, cols: Any, dz3: Any, dw: Any, db: Any,
              part: list, sums: Any = None) -> None:  # fmt: skip
    """Chunk i's filter gradient, patches (groups, K, p) @ dz (groups, Mg, p)^T, onto `dw`,
    and its bias gradient (dz summed, or `sums` (groups, Mg) when given) onto `db` (each None
    when not needed). Serial (`turns` None): `add_filter_grad`'s way. Threaded: the product
    goes to this thread's buffer (`part`), and both are added in chunk i's turn, in the serial
    path's operations."""
    s = None if db is None else dz3.sum(axis=2) if sums is None else sums
    if turns is None:
        if s is not None:
            db += s
        if dw is not None:
            add_filter_grad(xp, cols, dz3, dw, i, part)
        return
    if dw is not None:
        if not part:
            part.append(xp.empty_like(dw))
        xp.matmul(cols, dz3.transpose(0, 2, 1), out=part[0])
    turns.wait(i)
    try:
        if s is not None:
            db += s
        if dw is not None:
            if i == 0:
                dw[...] = part[0]
            else:
                dw += part[0]
    finally:
        turns.done()
