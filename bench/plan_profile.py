"""Where a compiled `fit` step spends its time: CPU microseconds per step of the plan.

Trains the seed MLP or the book's LeNet with `fit` (compiled) on part of Fashion-MNIST and
times every step of the train step's plan (`function/plan.py`) with the process's CPU clock
(the figure a loaded machine distorts least), then prints the steps by cost, what the plan
took per call, and what `fit` spent outside it (batches, callbacks, the step function's call).
The timer wraps `Plan.run` in this process only (a bench, never part of the library).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        python bench/plan_profile.py --model lenet --images 15360
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def _name(step) -> str:
    if step.kind == "op":
        return step.fn.name
    if step.kind == "host":
        return "host: " + getattr(step.fn, "__qualname__", str(step.fn)).split(".<locals>")[0]
    if step.kind == "assign":
        return f"{step.fn}: {getattr(step.refs[0], 'name', '?')}"
    return step.kind


def install(stats: dict, calls: collections.Counter) -> None:
    """Replace `Plan.run` by a copy that adds each step's CPU time to `stats[(plan, i)]`."""
    from layerflow._src.function import plan as plan_mod

    clock = time.process_time

    def run(self, arrays):
        pool = self._free_buffers
        buffers = pool.pop() if pool else self._new_buffers()
        env = [None] * self.n_slots + buffers
        key = id(self)
        calls[key] += 1
        try:
            for s, a in zip(self.input_slots, arrays):
                env[s] = a
            for i, (runner, frees) in enumerate(self.program):
                t = clock()
                runner(env)
                for s in frees:
                    env[s] = None
                stats[(key, i)] = stats.get((key, i), 0.0) + clock() - t
            return [g(env) for g in self.out_gets]
        finally:
            pool.append(buffers)

    plan_mod.Plan.run = run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=["mlp", "lenet"], default="lenet")
    ap.add_argument("--images", type=int, default=15360, help="training images timed")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    import numpy as np

    import layerflow as tf

    xtr, ytr, _, _ = _common.load_fashion_mnist()
    if a.model == "lenet":
        import lenet_epoch

        net, lr, xtr = lenet_epoch._keras_lenet(tf), lenet_epoch.LR, xtr[..., None]
    else:
        import mlp_epoch

        net, lr = mlp_epoch._lf_model(tf), mlp_epoch.LR
    net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=lr),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    net.fit(xtr[:1024], ytr[:1024], batch_size=256, epochs=1, verbose=0)  # traces
    stats: dict = {}
    calls: collections.Counter = collections.Counter()
    install(stats, calls)
    n = min(a.images, len(xtr))
    t, c = time.perf_counter(), time.process_time()
    net.fit(xtr[:n], ytr[:n], batch_size=256, epochs=1, verbose=0)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    key, steps = calls.most_common(1)[0]
    plan = next(p for p in _plans(net) if id(p) == key)
    per = {i: stats[(key, i)] / steps * 1e6 for i in range(len(plan.program))}
    total = sum(per.values())
    print(f"{a.model}: {steps} steps of batch 256; {_common.machine_load()}")
    step_cpu = cpu / steps * 1e3
    print(f"fit: {wall / steps * 1e3:.2f} ms wall, {step_cpu:.2f} ms CPU per step; plan "
          f"{total / 1e3:.2f} ms CPU, outside the plan {step_cpu - total / 1e3:.2f}")  # fmt: skip
    by_kind: dict = collections.defaultdict(float)
    for i, us in per.items():
        by_kind[_name(plan.program_steps[i])] += us
    print(f"{'plan step':<58}{'us CPU':>9}{'share':>7}")
    for i in sorted(per, key=per.get, reverse=True)[: a.top]:
        name = f"{i:3d} {_name(plan.program_steps[i])}"
        print(f"{name:<58}{per[i]:>9.0f}{per[i] / total:>7.1%}")
    print(f"{'by kind':<58}{'us CPU':>9}{'share':>7}")
    for name, us in sorted(by_kind.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"{name:<58}{us:>9.0f}{us / total:>7.1%}")
    del np


def _plans(net):
    """The plans of the model's train function (every trace of its tf.function)."""
    fn = net.train_function.function
    seen = []
    for concrete in fn._traces.values():
        if all(concrete._plan is not p for p in seen):
            seen.append(concrete._plan)
    return seen


if __name__ == "__main__":
    main()
