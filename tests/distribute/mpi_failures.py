"""Run under `mpiexec -n 2 python mpi_failures.py MODE` by test_multi_worker_failures.py.

MODE "checks": disagreements every worker detects alike (each check catches the error on both
ranks and goes on, so one launch covers them all); prints "CHECKS OK rank r" at the end.
MODE "raise" / "exit" / "busy": rank 1 raises / exits / raises while rank 0 is busy, and the
job must end within seconds instead of hanging.
"""

import sys
import time

import numpy as np

import layerflow as tf

mode = sys.argv[1]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id


def expect(error, pattern, fn):
    try:
        fn()
    except error as err:
        if pattern not in str(err):
            raise AssertionError(f"rank {rank}: {pattern!r} not in {err}") from err
        print(f"rank {rank} caught: {err}", flush=True)
        return
    raise AssertionError(f"rank {rank}: no {error.__name__} for {pattern!r}")


def all_reduce(value):
    return strategy.reduce("SUM", strategy.run(lambda: tf.constant(value)), axis=None)


if mode == "checks":
    resolver = strategy.cluster_resolver
    assert (resolver.task_type, resolver.task_id) == ("worker", rank), resolver
    assert resolver.num_accelerators() == {}, resolver.num_accelerators()
    # Same byte size, different dtype: MPI alone would sum the bits as floats.
    same_size = np.ones(4, np.float32) if rank == 0 else np.ones(4, np.int32)
    expect(
        ValueError,
        "rank 0 calls all-reduce of float32 (4,) (16 bytes), but rank 1 calls "
        "all-reduce of int32 (4,) (16 bytes)",
        lambda: all_reduce(same_size),
    )
    # Different sizes: MPICH would abort the job with its own message.
    sizes = np.ones(3, np.float32) if rank == 0 else np.ones(5, np.float32)
    expect(
        ValueError,
        "float32 (3,) (12 bytes), but rank 1 calls all-reduce of float32 (5,)",
        lambda: all_reduce(sizes),
    )
    # Same bytes, different shape.
    shaped = np.ones((2, 3), np.float32) if rank == 0 else np.ones((3, 2), np.float32)
    expect(
        ValueError,
        "float32 (2, 3) (24 bytes), but rank 1 calls all-reduce of float32 (3, 2)",
        lambda: all_reduce(shaped),
    )

    # A variable created with a different shape on each worker.
    def make():
        with strategy.scope():
            tf.Variable(np.zeros((2, 2) if rank == 0 else (2, 3)))

    expect(ValueError, "broadcast of a new variable's initial value of float64 (2, 2)", make)

    # Different collectives at the same point.
    def diverge():
        if rank == 0:
            all_reduce(np.ones(2, np.float32))
        else:
            strategy.gather(tf.constant([1.0]), axis=0)

    expect(
        ValueError,
        "rank 0 calls all-reduce of float32 (2,) (8 bytes), but rank 1 calls all-gather",
        diverge,
    )
    # Agreement is restored: a healthy collective still works after the errors.
    assert float(all_reduce(np.float32(rank + 1))) == 3.0
    # fit on 64 rows here and 48 there: a clear error where the steps diverge, on both.
    rows = 64 if rank == 0 else 48
    x = np.random.default_rng(rank).normal(size=(rows, 3)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    expect(
        ValueError,
        "at step 3 of a distributed dataset, worker rank(s) [1] ran out of "
        "data while rank(s) [0] have another batch",
        lambda: model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False),
    )
    # The same number of rows everywhere trains.
    model.fit(x[:48], y[:48], batch_size=16, epochs=1, verbose=0, shuffle=False)
    print(f"CHECKS OK rank {rank}", flush=True)
elif mode == "raise":
    if rank == 1:
        raise KeyError("boom in rank 1")
    all_reduce(np.ones(2, np.float32))
    print("rank 0 passed the collective: the test must fail", flush=True)
elif mode == "exit":
    all_reduce(np.ones(2, np.float32))
    if rank == 1:
        sys.exit(0)  # leaves early, cleanly: rank 0 must not wait for it forever
    all_reduce(np.ones(2, np.float32))
    print("rank 0 passed the collective: the test must fail", flush=True)
elif mode == "busy":
    if rank == 1:
        raise RuntimeError("rank 1 broke while rank 0 computes")
    time.sleep(600)  # never reaches a collective: only MPI_Abort stops it
    print("rank 0 finished sleeping: the test must fail", flush=True)
