"""The BLAS-threads policy: one thread for small GEMMs, the free cores for large ones, the
user's cap respected, and the library called only when the wanted count changes.

Every test drives the policy with a fake BLAS library, a fake load probe and a fake clock:
nothing here is timed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
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
    p, lib, _, _ = policy()
    worker = threading.Thread(target=lambda: p.gemm(*SMALL))
    worker.start()
    worker.join()
    assert lib.calls == []  # a replica thread leaves the count alone
    p.gemm(*SMALL)
    assert lib.calls == [1]


# --- the measured choice (`timed` / `done`) ---------------------------------------------------
# Per product shape, the counts are timed now and then and the fastest is kept. Each simulated
# GEMM advances the fake clock by what its thread count costs: the decisions are checked,
# nothing is timed.


def mpolicy(threads=2, cores=2, busy=0.0):
    lib, probe, clock = FakeLib(threads), FakeProbe(cores, busy), Clock()
    return bt.BlasThreads([lib], probe, clock), lib, probe, clock


def run(p, lib, clock, cost, calls=1, shape=BIG):
    """`calls` GEMMs of `shape`, each taking `cost[threads]` seconds; the counts they ran on."""
    used = []
    for _ in range(calls):
        t = p.timed(*shape)
        used.append(lib.threads)
        clock.now += cost[lib.threads]
        if t is not None:
            p.done(t)
    return used


def test_measurement_beats_the_load_rule_when_two_threads_are_faster():
    # Another process keeps 0.7 of the second core busy: the load rule asks for 1 thread, but
    # 2 threads are measured faster (what a machine loaded by short jobs gave).
    p, lib, _, clock = mpolicy(busy=0.7)
    p.gemm(*BIG)
    clock.now += bt.REFRESH_S
    p.gemm(*BIG)
    assert lib.threads == 1  # the load rule
    used = run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=40)
    assert p.rounds == 1
    assert used[2 * bt.SAMPLES :] == [2] * (40 - 2 * bt.SAMPLES)


def test_one_thread_is_kept_when_the_second_is_slower_on_a_quiet_looking_machine():
    p, lib, _, clock = mpolicy(busy=0.0)  # the load rule would give 2
    used = run(p, lib, clock, {1: 455e-6, 2: 600e-6}, calls=40)
    assert p.rounds == 1 and used[-30:] == [1] * 30


def test_more_threads_must_win_by_min_gain():
    p, lib, _, clock = mpolicy()
    used = run(p, lib, clock, {1: 455e-6, 2: 455e-6 * (1 - bt.MIN_GAIN / 2)}, calls=20)
    assert used[-10:] == [1] * 10


def test_a_catastrophically_slow_count_is_dropped_after_its_first_call():
    p, lib, _, clock = mpolicy()
    run(p, lib, clock, {1: 450e-6, 2: 45e-3}, calls=10)
    clock.now = next(iter(p._shapes.values())).next
    used = run(p, lib, clock, {1: 450e-6, 2: 45e-3}, calls=10)
    assert used.count(2) == 1 and p.rounds == 2


def test_a_round_times_a_block_of_calls_per_count_the_chosen_one_first():
    p, lib, _, clock = mpolicy()
    used = run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=2 * bt.SAMPLES)
    assert used == [2] * bt.SAMPLES + [1] * bt.SAMPLES  # quiet: the load rule's 2 leads
    clock.now = next(iter(p._shapes.values())).next
    used = run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=2 * bt.SAMPLES)
    assert used == [2] * bt.SAMPLES + [1] * bt.SAMPLES  # 2 was chosen: it leads


def test_the_first_call_of_a_block_waking_the_threads_is_not_held_against_the_count():
    p, lib, _, clock = mpolicy(busy=1.0)  # the load rule: 1 thread
    p.gemm(*BIG)
    clock.now += bt.REFRESH_S
    p.gemm(*BIG)
    last = None
    for _ in range(2 * bt.SAMPLES + 3):
        t = p.timed(*BIG)
        n = lib.threads
        # 2 threads: 3 ms when the workers were asleep (the previous call ran on 1), then fast
        clock.now += 3e-3 if n == 2 and last == 1 else {1: 455e-6, 2: 320e-6}[n]
        last = n
        if t is not None:
            p.done(t)
    assert p.rounds == 1 and lib.threads == 2


def test_between_rounds_no_library_calls_and_no_samples():
    p, lib, _, clock = mpolicy()
    cost = {1: 320e-6, 2: 455e-6}  # 1 thread wins: nothing to watch
    run(p, lib, clock, cost, calls=2 * bt.SAMPLES + 1)  # the round, then the winner's count
    calls, switches = len(lib.calls), p.switches
    for _ in range(50):
        assert p.timed(*BIG) is None  # not a sample: the caller skips `done`
        clock.now += cost[lib.threads]
    assert len(lib.calls) == calls and p.switches == switches


def test_more_threads_are_watched_between_rounds_without_library_calls():
    p, lib, _, clock = mpolicy()
    cost = {1: 455e-6, 2: 320e-6}
    run(p, lib, clock, cost, calls=2 * bt.SAMPLES + 1)
    calls, rounds = len(lib.calls), p.rounds
    assert run(p, lib, clock, cost, calls=50) == [2] * 50
    assert len(lib.calls) == calls and p.rounds == rounds and p.fallbacks == 0


def test_a_stall_on_more_threads_falls_back_at_once_and_measures_later():
    p, lib, _, clock = mpolicy()
    run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=2 * bt.SAMPLES)
    shape = next(iter(p._shapes.values()))
    gap = shape.gap
    used = run(p, lib, clock, {1: 455e-6, 2: 40e-3}, calls=5)  # the other core got taken
    assert used == [2, 1, 1, 1, 1] and p.fallbacks == 1
    # A first stall: measured again after EXPLORE_S, whatever the gap was before.
    assert shape.best == 1 and shape.gap == bt.EXPLORE_S == gap


def test_a_lone_stall_costs_one_short_wait_stalls_in_a_row_wait_longer():
    p, lib, _, clock = mpolicy()
    fast = {1: 455e-6, 2: 320e-6}
    for _ in range(3):  # the choice confirmed: rounds every 4 EXPLORE_S
        run(p, lib, clock, fast, calls=2 * bt.SAMPLES)
        clock.now = next(iter(p._shapes.values())).next
    shape = next(iter(p._shapes.values()))
    run(p, lib, clock, fast, calls=2 * bt.SAMPLES)
    assert shape.best == 2 and shape.gap == 8 * bt.EXPLORE_S
    gaps = []
    for _ in range(3):  # a stall right after each round: fallbacks in a row
        run(p, lib, clock, {1: 455e-6, 2: 40e-3}, calls=1)
        gaps.append(shape.gap)
        clock.now = shape.next
        run(p, lib, clock, fast, calls=2 * bt.SAMPLES)  # the round picks 2 threads again
        assert shape.best == 2
    assert gaps == [bt.EXPLORE_S, 2 * bt.EXPLORE_S, 4 * bt.EXPLORE_S] and p.fallbacks == 3
    clock.now = shape.next
    run(p, lib, clock, fast, calls=2 * bt.SAMPLES)  # 2 threads held to the next round
    assert shape.fails == 0


def test_small_stalls_are_paid_for_by_the_gains_before_them():
    p, lib, _, clock = mpolicy()
    run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=2 * bt.SAMPLES)
    run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=20)  # 2.7 ms gained
    used = run(p, lib, clock, {1: 455e-6, 2: 3e-3}, calls=1)  # a 2.5 ms loss
    used += run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=3)
    assert used == [2] * 4 and p.fallbacks == 0


def test_a_clearly_slower_count_is_dropped_after_its_second_call():
    p, lib, _, clock = mpolicy()
    cost = {1: 450e-6, 2: 3e-3}  # 6.7x: more than REJECT, less than REJECT_FIRST
    used = run(p, lib, clock, cost, calls=10)
    assert used.count(2) == bt.SAMPLES and p.rounds == 1  # the first round leads with 2
    clock.now = next(iter(p._shapes.values())).next
    used = run(p, lib, clock, cost, calls=10)
    assert used.count(2) == 2 and p.rounds == 2  # the second call (threads awake) decides


def test_a_confirmed_choice_is_measured_less_often_a_new_one_as_often_as_at_first():
    p, lib, _, clock = mpolicy()
    cost = {1: 450e-6, 2: 300e-6}
    rounds = []
    for _ in range(4):
        run(p, lib, clock, cost, calls=2 * bt.SAMPLES)
        shape = next(iter(p._shapes.values()))
        rounds.append(shape.gap)
        clock.now = shape.next
    assert rounds == [bt.EXPLORE_S, 2 * bt.EXPLORE_S, 4 * bt.EXPLORE_S, 8 * bt.EXPLORE_S]
    run(p, lib, clock, {1: 450e-6, 2: 900e-6}, calls=2 * bt.SAMPLES)  # the load changed
    shape = next(iter(p._shapes.values()))
    assert shape.best == 1 and shape.gap == bt.EXPLORE_S


def test_the_choice_follows_the_load_after_the_next_round():
    p, lib, _, clock = mpolicy()
    run(p, lib, clock, {1: 450e-6, 2: 300e-6}, calls=10)
    assert lib.threads == 2
    # Another process takes the second core: 2 threads become slow.
    used = run(p, lib, clock, {1: 450e-6, 2: 2e-3}, calls=int(bt.EXPLORE_MAX_S / 450e-6) + 20)
    assert used[-10:] == [1] * 10


def test_a_change_of_the_load_rule_starts_a_round_at_once():
    p, lib, probe, clock = mpolicy()
    cost = {1: 450e-6, 2: 300e-6}
    for _ in range(4):  # gap grows to 8 EXPLORE_S
        run(p, lib, clock, cost, calls=2 * bt.SAMPLES)
        clock.now = next(iter(p._shapes.values())).next
    rounds = p.rounds
    probe.busy = 1.0
    clock.now += bt.REFRESH_S
    run(p, lib, clock, {1: 450e-6, 2: 2e-3}, calls=2 * bt.SAMPLES)
    assert p.rounds == rounds + 1 and lib.threads == 1


def test_shapes_are_measured_apart():
    p, lib, _, clock = mpolicy()
    other = (784, 256, 256)  # same multiply-adds as BIG, another shape
    run(p, lib, clock, {1: 450e-6, 2: 300e-6}, calls=10)
    used = run(p, lib, clock, {1: 450e-6, 2: 900e-6}, calls=10, shape=other)
    assert used[-3:] == [1] * 3
    assert run(p, lib, clock, {1: 450e-6, 2: 300e-6}, calls=3) == [2, 2, 2]


def test_a_sample_never_closed_does_not_stop_the_rounds():
    p, lib, _, clock = mpolicy()
    for _ in range(2 * bt.SAMPLES):  # a caller that never reports (an exception in the GEMM)
        p.timed(*BIG)
        clock.now += 1e-3
    used = run(p, lib, clock, {1: 450e-6, 2: 300e-6}, calls=2 * bt.SAMPLES + 5)
    assert p.rounds >= 1 and used[-3:] == [2] * 3


def test_small_products_and_the_user_cap_are_respected():
    p, lib, _, clock = mpolicy(threads=2, cores=8)  # OPENBLAS_NUM_THREADS=2 on 8 cores
    used = run(p, lib, clock, {1: 450e-6, 2: 300e-6}, calls=20)
    assert max(used) == 2 and max(lib.calls, default=2) <= 2
    assert p.timed(*SMALL) is None and lib.threads == 1


def test_a_count_someone_else_set_resets_the_measurements():
    p, lib, _, clock = mpolicy(threads=4, cores=4)
    run(p, lib, clock, {1: 450e-6, 2: 300e-6, 4: 200e-6}, calls=20)
    assert lib.threads == 4
    lib.threads = 1  # threadpool_limits(1) around the user's code
    clock.now += bt.REFRESH_S
    before = len(lib.calls)
    used = run(p, lib, clock, {1: 450e-6, 2: 300e-6, 4: 200e-6}, calls=5)
    assert used == [1] * 5 and p.cap == 1 and lib.calls[before:] == []


def test_other_threads_never_measure_nor_switch():
    p, lib, _, clock = mpolicy()
    got = []
    worker = threading.Thread(target=lambda: got.append(p.timed(*BIG)))
    worker.start()
    worker.join()
    assert got == [None] and lib.calls == [] and p._pending is None


def test_without_a_blas_library_timed_never_samples():
    p = bt.BlasThreads([], FakeProbe(4), Clock())
    assert p.timed(*BIG) is None and p.timed(*SMALL) is None and p.switches == 0


def test_eager_dense_and_matmul_close_their_samples(monkeypatch):
    # The real policy: the ops' GEMMs report back, so a round finishes after its samples.
    import layerflow as tf
    from layerflow._src.ops.dense_ops import dense

    p = bt.BlasThreads([FakeLib(2)], FakeProbe(2), Clock())
    monkeypatch.setattr(bt, "timed", p.timed)
    monkeypatch.setattr(bt, "done", p.done)
    x = tf.constant(np.ones((256, 784), np.float32))
    w = tf.constant(np.ones((784, 256), np.float32))
    for _ in range(2 * bt.SAMPLES):
        dense(x, w, tf.zeros((256,)))
    assert p.rounds == 1 and p._pending is None
    for _ in range(2 * bt.SAMPLES):
        tf.matmul(x, w)
    assert p.rounds == 2


def test_compiled_plan_closes_its_samples(monkeypatch):
    import layerflow as tf

    p = bt.BlasThreads([FakeLib(2)], FakeProbe(2), Clock())
    monkeypatch.setattr(bt, "timed", p.timed)
    monkeypatch.setattr(bt, "done", p.done)
    w = tf.Variable(np.ones((784, 256), np.float32))

    @tf.function
    def f(x):
        return tf.reduce_sum(tf.matmul(x, w) * 2.0)

    x = tf.constant(np.ones((256, 784), np.float32))
    want = float(np.sum(np.ones((256, 784), np.float32) @ np.ones((784, 256), np.float32) * 2))
    for _ in range(2 * bt.SAMPLES + 2):
        assert float(f(x)) == pytest.approx(want)
    assert p.rounds >= 1 and p._pending is None


class CrowdedProbe(FakeProbe):
    def __init__(self, cores: int, runnable: float) -> None:
        super().__init__(cores, 0.0)  # /proc/stat says the other core is idle
        self.load = runnable

    def runnable(self) -> float:
        return self.load


def test_a_crowded_machine_gets_one_thread_and_no_rounds():
    # 6 runnable threads on 2 cores: a 2-thread product risks a stall of tens of ms.
    lib, probe, clock = FakeLib(2), CrowdedProbe(2, 6.0), Clock()
    p = bt.BlasThreads([lib], probe, clock)
    p.gemm(*BIG)
    clock.now += bt.REFRESH_S
    used = run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=20)
    assert used[1:] == [1] * 19 and p.rounds == 0 and p.crowded
    probe.load = 1.5  # the crowd left: a round at the next refresh
    clock.now += bt.REFRESH_S
    used = run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=2 * bt.SAMPLES + 3)
    assert p.rounds == 1 and used[-3:] == [2] * 3
    probe.load = 6.0  # back: one thread at the next refresh, before the round was due
    clock.now += bt.REFRESH_S
    assert run(p, lib, clock, {1: 455e-6, 2: 320e-6}, calls=3) == [1] * 3
