"""The BLAS-threads policy: one thread for small GEMMs, the free cores for large ones, the
user's cap respected, and the library called only when the wanted count changes.

Every test drives the policy with a fake BLAS library, a fake load probe and a fake clock:
nothing here is timed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from layerflow._src.backend import blas_threads as bt

BIG = (256, 256, 784)  # the MLP's first layer: far above SMALL_MNK
SMALL = (8, 8, 8)


class FakeLib:
    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.calls: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.calls.append(n)
        self.threads = n


class FakeProbe:
    def __init__(self, cores: int, busy: float = 0.0) -> None:
        self.cores, self.busy = cores, busy

    def others_busy(self) -> float:
        return self.busy


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def policy(threads=4, cores=4, busy=0.0):
    lib, probe, clock = FakeLib(threads), FakeProbe(cores, busy), Clock()
    return bt.BlasThreads([lib], probe, clock), lib, probe, clock


def test_small_gemm_asks_for_one_thread():
    p, lib, _, _ = policy()
    p.gemm(*SMALL)
    assert lib.calls == [1]
    assert bt.SMALL_MNK > 8 * 8 * 8


def test_large_gemm_gets_every_thread_on_a_quiet_machine():
    p, lib, _, _ = policy()
    p.gemm(*SMALL)
    p.gemm(*BIG)
    assert lib.calls == [1, 4]


def test_library_is_called_only_when_the_wanted_count_changes():
    p, lib, _, clock = policy()
    for _ in range(50):
        p.gemm(*BIG)
        clock.now += 0.1  # several refreshes, the same answer
    assert lib.calls == []  # 4 threads already: never switched
    for _ in range(10):
        p.gemm(*SMALL)
    assert lib.calls == [1]
    for _ in range(10):
        p.gemm(*BIG)
    assert lib.calls == [1, 4]
    assert p.switches == 2


def test_load_of_other_processes_lowers_the_count_at_the_next_refresh():
    p, lib, probe, clock = policy(threads=2, cores=2)
    p.gemm(*BIG)  # first refresh: no measurement yet, all threads
    probe.busy = 1.0  # another process keeps one core busy
    p.gemm(*BIG)
    assert lib.calls == []  # not yet refreshed: the probe is read every REFRESH_S
    clock.now += bt.REFRESH_S
    p.gemm(*BIG)
    assert lib.calls == [1]
    probe.busy = 0.0
    clock.now += bt.REFRESH_S
    p.gemm(*BIG)
    assert lib.calls == [1, 2]


def test_a_user_cap_is_never_exceeded():
    # OPENBLAS_NUM_THREADS=2 on an 8-core machine: BLAS starts with 2 threads, the cap.
    p, lib, _, clock = policy(threads=2, cores=8)
    for _ in range(3):
        p.gemm(*BIG)
        clock.now += bt.REFRESH_S
    assert max(lib.threads, *lib.calls, 0) <= 2 and p.cap == 2


def test_a_count_someone_else_set_becomes_the_cap():
    p, lib, _, clock = policy(threads=4, cores=4)
    p.gemm(*BIG)
    lib.threads = 1  # e.g. threadpoolctl.threadpool_limits(1) around the user's code
    clock.now += bt.REFRESH_S
    p.gemm(*BIG)
    assert p.cap == 1 and lib.calls == []
    lib.threads = 4  # the limit ends and restores the count
    clock.now += bt.REFRESH_S
    p.gemm(*BIG)
    assert p.cap == 4 and lib.threads == 4


@pytest.mark.parametrize(
    ("cores", "busy", "want"),
    [(2, 0.0, 2), (2, 0.3, 2), (2, 0.7, 1), (2, 1.0, 1), (2, 3.0, 1), (8, 2.0, 6), (1, 0.0, 1)],
)
def test_free_threads(cores, busy, want):
    assert bt.free_threads(cores, busy) == want


def test_load_probe_does_not_count_this_process_as_load(monkeypatch):
    # Two cores fully busy for one second, this process used 1.5 of them: 0.5 is others'.
    samples = iter([(0.0, 10.0, (100.0, 400.0)), (1.0, 11.5, (102.0, 402.0))])
    monkeypatch.setattr(bt.LoadProbe, "_sample", staticmethod(lambda: next(samples)))
    monkeypatch.setattr(bt.os, "cpu_count", lambda: 2)
    probe = bt.LoadProbe()
    assert probe.others_busy() == pytest.approx(0.5)


def test_without_a_blas_library_gemm_does_nothing():
    p = bt.BlasThreads([], FakeProbe(4), Clock())
    p.gemm(*BIG)
    p.gemm(*SMALL)
    assert p.switches == 0


def test_real_openblas_respects_openblas_num_threads():
    pytest.importorskip("threadpoolctl")
    code = (
        "import numpy as np\n"
        "from layerflow._src.backend import blas_threads as bt\n"
        "a = np.ones((256, 784), np.float32); b = np.ones((784, 256), np.float32)\n"
        "bt.gemm(256, 256, 784); a @ b\n"
        "p = bt.policy(); print(p.cap, p.current)\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()  # fmt: skip
    assert out == ["1", "1"]


def test_only_the_main_thread_switches():
    import threading

    p, lib, _, _ = policy()
    worker = threading.Thread(target=lambda: p.gemm(*SMALL))
    worker.start()
    worker.join()
    assert lib.calls == []  # a replica thread leaves the count alone
    p.gemm(*SMALL)
    assert lib.calls == [1]
