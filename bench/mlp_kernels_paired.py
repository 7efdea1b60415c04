"""The seed MLP's compiled train step with the fused kernels on and off, steps in turns.

One process builds the same step twice (the same initial weights): once with numba's kernels
off (`jit.use(False)`: the plan as it was before `function/fusion.py`, the NumPy path), once
with them on, and runs the two plans alternately on the same batches, one BLAS thread, timing
every plan step with the thread's CPU clock (what a loaded machine distorts least). Beside
them, the step's five GEMMs alone (the floor `mlp_epoch.py` prints) and the batch gather
`x[idx]` that every training loop pays. Prints the medians per plan step, the whole steps, and
checks that both plans leave bit-identical weights.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/mlp_kernels_paired.py \\
        [--fit] [--steps 600]

`--fit` times `fit`'s train step (loss and accuracy metrics included) instead of the
`tf.function` tape loop of `mlp_epoch.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

BATCH = 256


def _loop_plan(tf, net, batch):
    import mlp_epoch

    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=mlp_epoch.LR)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            l = loss(y, net(x))
        params = net.trainable_variables
        opt.apply_gradients(zip(tape.gradient(l, params), params))

    step(*batch)
    return step.get_concrete_function(*batch)._plan


def _fit_plan(tf, net, batch):
    import mlp_epoch

    net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=mlp_epoch.LR),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    net.fit(*batch, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)  # traces
    return next(iter(net.train_function.function._traces.values()))._plan


def _name(step) -> str:
    if step.kind == "op":
        return step.fn.name
    if step.kind == "assign":
        return f"{step.fn}: {getattr(step.refs[0], 'name', '?')}"
    return step.kind


def _timed_run(plan, arrays, per_step, clock):
    pool = plan._free_buffers
    buffers = pool.pop() if pool else plan._new_buffers()
    env = [None] * plan.n_slots + buffers
    try:
        for s, a in zip(plan.input_slots, arrays):
            env[s] = a
        for i, (runner, frees) in enumerate(plan.program):
            t = clock()
            runner(env)
            for s in frees:
                env[s] = None
            per_step[i].append(clock() - t)
    finally:
        pool.append(buffers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fit", action="store_true", help="fit's train step (metrics included)")
    ap.add_argument("--steps", type=int, default=600)
    a = ap.parse_args()
    import mlp_epoch
    import numpy as np
    import threadpoolctl

    import layerflow as tf
    from layerflow._src.backend import jit

    if not jit.available():
        raise SystemExit("numba is not installed (or LAYERFLOW_NUMBA=0): nothing to compare")
    threadpoolctl.threadpool_limits(1)
    xtr, ytr, _, _ = _common.load_fashion_mnist()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(xtr))
    batches = [(xtr[order[i : i + BATCH]], ytr[order[i : i + BATCH]])
               for i in range(0, BATCH * 40, BATCH)]  # fmt: skip
    plans, nets, init = {}, {}, None
    for kernels in (False, True):
        with jit.use(kernels):
            net = mlp_epoch._lf_model(tf)
            net.build((None, 28, 28))
            if init is None:
                init = net.get_weights()
            net.set_weights(init)
            make = _fit_plan if a.fit else _loop_plan
            plans[kernels] = make(tf, net, batches[0])
            nets[kernels] = net
    clock = time.thread_time
    per_step = {k: [[] for _ in p.program] for k, p in plans.items()}
    totals = {k: [] for k in (False, True, "floor", "gather")}
    w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in [(784, 256), (256, 10)])
    h, dh = np.empty((BATCH, 256), np.float32), np.empty((BATCH, 256), np.float32)
    z, g1, g2 = np.empty((BATCH, 10), np.float32), np.empty_like(w1), np.empty_like(w2)

    def floor(x):
        x = x.reshape(len(x), 784)
        np.matmul(x, w1, out=h)
        np.matmul(h, w2, out=z)
        np.matmul(z, w2.T, out=dh)
        np.matmul(h.T, z, out=g2)
        np.matmul(x.T, dh, out=g1)

    gather_order = rng.permutation(len(xtr))
    for k in range(a.steps):
        x, y = batches[k % len(batches)]
        turns = (False, True, "floor", "gather") if k % 2 else ("gather", "floor", True, False)
        for turn in turns:
            t = clock()
            if turn == "floor":
                floor(x)
            elif turn == "gather":
                s = (k * BATCH) % (len(xtr) - BATCH)
                idx = gather_order[s : s + BATCH]
                xtr[idx], ytr[idx]
            else:
                with jit.use(turn):
                    _timed_run(plans[turn], [x, y], per_step[turn], clock)
            totals[turn].append(clock() - t)
    same = all(np.array_equal(p, q) for p, q in zip(nets[False].get_weights(),
                                                    nets[True].get_weights()))  # fmt: skip
    med = {k: 1e6 * statistics.median(v) for k, v in totals.items()}
    what = "fit's train step" if a.fit else "tf.function tape loop"
    print(f"MLP {what}, batch {BATCH}, one BLAS thread, CPU us (thread clock), medians of "
          f"{a.steps} steps in turns; {_common.machine_load()}")  # fmt: skip
    for kernels in (False, True):
        print("kernels on (numba):" if kernels else "kernels off (NumPy path):")
        for i, s in enumerate(plans[kernels].program_steps):
            print(f"  {i:3d} {_name(s):62s}{1e6 * statistics.median(per_step[kernels][i]):8.1f}")
    print(f"{'run':44s}{'us/step':>9s}{'+ gather, to floor':>20s}")
    labels = [(False, "layerflow, kernels off"), (True, "layerflow, kernels on"),
              ("floor", "GEMM-only floor"), ("gather", "batch gather x[idx]")]  # fmt: skip
    for key, label in labels:
        ratio = (med[key] + med["gather"]) / med["floor"] if key in (False, True) else None
        tail = f"{ratio:20.3f}" if ratio is not None else ""
        print(f"{label:44s}{med[key]:9.1f}{tail}")
    print(f"weights after {a.steps} steps each bit-identical: {same}")


if __name__ == "__main__":
    main()
