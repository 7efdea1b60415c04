"""The seed MLP's compiled train step, two checkouts side by side, steps taken in turns.

On a shared machine the load changes faster than one bench run, so the checkouts compared
here run in processes of their own that take turns, 10 steps each, round after round (the
order alternates); a row's ratio is the median of its per-round ratios. Beside them, the
hand-written NumPy step and the GEMM-only floor (its five products alone) run the same
batches. Batches are gathered once, before timing: the figures are the step alone.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/mlp_step_paired.py \\
        --base /path/to/other/checkout [--rounds 60]

`--base-host-optimizer` also runs the base with the optimizer forced into one host step (what
`mlp_epoch.py` did before issue 12's traced optimizer). `--no-policy` adds this checkout with
its BLAS-thread policy switched off (OpenBLAS's own choice, as NumPy runs); `--no-kernels`
adds it with the fused numba kernels off (`LAYERFLOW_NUMBA=0`). `--contention`
runs the rounds twice, quiet then beside a busy-loop process that keeps one core busy
(`_common.busy_core`), and prints both tables and each row's slowdown.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
BATCH, LR, PER_ROUND = 256, 0.1, 10


def _numpy_step(mode):
    import numpy as np

    rng = np.random.default_rng(0)
    W1 = rng.uniform(-0.07, 0.07, (784, 256)).astype(np.float32)
    W2 = rng.uniform(-0.14, 0.14, (256, 10)).astype(np.float32)
    b1, b2 = np.zeros(256, np.float32), np.zeros(10, np.float32)
    h, dh = np.empty((256, 256), np.float32), np.empty((256, 256), np.float32)
    z, g1, g2 = np.empty((256, 10), np.float32), np.empty_like(W1), np.empty_like(W2)

    def floor(X, y):
        X = X.reshape(len(X), 784)
        np.matmul(X, W1, out=h)
        np.matmul(h, W2, out=z)
        np.matmul(z, W2.T, out=dh)
        np.matmul(h.T, z, out=g2)
        np.matmul(X.T, dh, out=g1)

    def step(X, y):
        X = X.reshape(len(X), 784)
        a = X @ W1
        a += b1
        np.maximum(a, 0, out=a)
        s = a @ W2
        s += b2
        s -= s.max(1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(1, keepdims=True)
        s[np.arange(len(y)), y] -= 1
        s /= len(y)
        gW2, gb2 = a.T @ s, s.sum(0)
        d = s @ W2.T
        d *= a > 0
        gW1, gb1 = X.T @ d, d.sum(0)
        for p, g in ((W1, gW1), (b1, gb1), (W2, gW2), (b2, gb2)):
            g *= LR
            p -= g

    return floor if mode == "floor" else step


def _layerflow_step(host_optimizer, policy=True):
    import layerflow as tf

    if not policy:
        from layerflow._src.backend import blas_threads

        blas_threads.gemm = lambda m, n, k: None
        if hasattr(blas_threads, "timed"):
            blas_threads.timed = lambda m, n, k: None

    if host_optimizer:
        from layerflow._src.function import host_method
        from layerflow._src.keras.optimizers.optimizer import Optimizer

        Optimizer.apply_gradients = host_method(
            Optimizer.apply_gradients, result=lambda self, *a, **k: self.iterations
        )
    net = tf.keras.models.Sequential(
        [tf.keras.layers.Flatten(), tf.keras.layers.Dense(256, activation="relu"),
         tf.keras.layers.Dense(10)]
    )  # fmt: skip
    net.build((None, 28, 28))
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=LR)

    @tf.function
    def step(X, y):
        with tf.GradientTape() as tape:
            l = loss(y, net(X))
        params = net.trainable_variables
        opt.apply_gradients(zip(tape.gradient(l, params), params))

    return step


def worker(mode):
    if mode == "layerflow-nokernels":
        os.environ["LAYERFLOW_NUMBA"] = "0"  # read at the first kernel check (`backend/jit`)
    import numpy as np

    sys.path.insert(0, str(HERE))
    import _common

    xtr, ytr, _, _ = _common.load_fashion_mnist()
    if mode in ("numpy", "floor"):
        step = _numpy_step(mode)
    else:
        step = _layerflow_step(mode == "layerflow-host", mode != "layerflow-nopolicy")
    order = np.random.default_rng(0).permutation(len(xtr))
    batches = [
        (xtr[order[i : i + BATCH]], ytr[order[i : i + BATCH]]) for i in range(0, BATCH * 40, BATCH)
    ]
    for _ in range(20):
        step(*batches[0])
    print("ready", flush=True)
    k = 0
    for line in sys.stdin:
        times = []
        for _ in range(int(line)):
            X, y = batches[k % len(batches)]
            k += 1
            t = time.perf_counter()
            step(X, y)
            times.append(time.perf_counter() - t)
        print(json.dumps(times), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--base", help="another checkout (its root) to run beside this one")
    ap.add_argument("--base-host-optimizer", action="store_true")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--no-policy", action="store_true")
    ap.add_argument("--no-kernels", action="store_true")
    ap.add_argument("--contention", action="store_true")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)

    root = str(HERE.parent)
    runs = {"layerflow (this checkout)": (root, "layerflow")}
    if args.base:
        runs["layerflow (base)"] = (args.base, "layerflow")
        if args.base_host_optimizer:
            runs["layerflow (base), host optimizer"] = (args.base, "layerflow-host")
    if args.no_policy:
        runs["layerflow (this checkout), no thread policy"] = (root, "layerflow-nopolicy")
    if args.no_kernels:
        runs["layerflow (this checkout), no numba kernels"] = (root, "layerflow-nokernels")
    runs["numpy (hand-written)"] = (root, "numpy")
    runs["GEMM-only floor"] = (root, "floor")
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    procs = {}
    for name, (path, mode) in runs.items():
        procs[name] = subprocess.Popen(
            [sys.executable, __file__, "--worker", mode], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env={**env, "PYTHONPATH": path}, cwd=path,
        )  # fmt: skip
    for name, p in procs.items():
        if p.stdout.readline().strip() != "ready":
            raise SystemExit(f"{name}: the worker did not start")
    sys.path.insert(0, str(HERE))
    import _common

    tables = {}
    for contended in [False, True] if args.contention else [False]:
        with _common.busy_core(contended):
            tables[contended] = _rounds(procs, args.rounds)
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"MLP train step (batch {BATCH}), {args.rounds} rounds of {PER_ROUND} steps in turns;")
    print(_common.machine_load())
    for contended, (medians, means) in tables.items():
        floor = medians["GEMM-only floor"]
        print("contended (one core kept busy):" if contended else "quiet:")
        print(f"{'run':44s} {'median us/step':>14s} {'to floor':>9s} {'mean us/step':>12s} "
              f"{'slowdown':>9s}")  # fmt: skip
        for name, m in medians.items():
            ratio = statistics.median(a / b for a, b in zip(m, floor))
            mean = statistics.fmean(means[name])
            slow = ""
            if contended:
                slow = f"{statistics.median(m) / statistics.median(tables[False][0][name]):9.2f}"
            print(f"{name:44s} {1e6 * statistics.median(m):14.0f} {ratio:9.3f} {1e6 * mean:12.0f} "
                  f"{slow}")  # fmt: skip


def _rounds(procs, rounds):
    """Per worker, the median and the mean step time of each round (rounds in turns, order
    alternating). The mean is what an epoch pays: a thread stalled for tens of ms now and then
    leaves the median alone."""
    medians = {name: [] for name in procs}
    means = {name: [] for name in procs}
    for r in range(rounds):
        for name in list(procs) if r % 2 == 0 else list(reversed(procs)):
            procs[name].stdin.write(f"{PER_ROUND}\n")
            procs[name].stdin.flush()
            times = json.loads(procs[name].stdout.readline())
            medians[name].append(statistics.median(times))
            means[name].append(statistics.fmean(times))
    return medians, means


if __name__ == "__main__":
    main()
