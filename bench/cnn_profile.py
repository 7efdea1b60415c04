"""Where an eager CNN training step spends its CPU time: milliseconds per step by op.

Builds a model of `cnn_step.py` (GoogLeNet, ResNet-18, DenseNet, ...), runs its eager training
step (tape, loss, gradient, SGD) and times every op's forward and every gradient function by
the thread's CPU clock at one BLAS thread and serial convolutions, *exclusive* of the ops they
call (a gradient written with ops shows its parts under their own names). The rest of the
step (layer calls, the tape's walk, the optimizer's Python) is "outside ops". The timers wrap
the ops of this process only (a bench, never part of the library).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn_profile.py resnet18 --steps 4
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn_step  # noqa: E402

clock = time.thread_time
# One entry per running timed call: the CPU time its timed callees took.
_stack: list[float] = []
STATS: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])


def _timed(name: str, fn):
    def timed(*args, **kwargs):
        _stack.append(0.0)
        t = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = clock() - t
            inner = _stack.pop()
            s = STATS[name]
            s[0] += spent - inner
            s[1] += 1
            if _stack:
                _stack[-1] += spent

    timed.__wrapped__ = fn
    return timed


def _cell(fn, name: str):
    code = getattr(fn, "__code__", None)
    if code is None or name not in code.co_freevars:
        return None
    return fn.__closure__[code.co_freevars.index(name)]


def install() -> int:
    """Wrap the forward of every op wrapper now loaded, and every primitive's gradient."""
    from layerflow._src.autodiff import op as op_mod

    done, n = set(), 0
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith("layerflow"):
            continue
        for w in list(vars(mod).values()):
            prim = getattr(w, "prim", None)
            if not isinstance(prim, op_mod.Primitive) or id(prim) in done:
                continue
            done.add(id(prim))
            cell = _cell(w, "forward")
            if cell is None:
                run = _cell(w, "run")
                cell = run and _cell(run.cell_contents, "forward")
            if cell is not None and not hasattr(cell.cell_contents, "__wrapped__"):
                cell.cell_contents = _timed(prim.name, cell.cell_contents)
                n += 1
    for prims in op_mod.primitives.values():
        for prim in prims:
            if prim.grad_fn is not None and not hasattr(prim.grad_fn, "__wrapped__"):
                prim.grad_fn = _timed(prim.name + " (grad)", prim.grad_fn)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model", choices=sorted(cnn_step.MODELS))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=4, help="timed steps (after one warm-up)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--compare", action="store_true",
                    help="alternate steps with the compiled kernels off and on (jit.use), "
                    "and print both")  # fmt: skip
    a = ap.parse_args()
    import threadpoolctl

    import layerflow as tf
    from layerflow._src.backend import jit
    from layerflow._src.ops import conv_threads

    conv_threads.FORCE = 1
    size, spec = cnn_step.MODELS[a.model]
    model = cnn_step._keras_model(tf, spec, size)
    x, y = cnn_step._data(size, a.batch)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(0.01)
    parts = collections.Counter()

    def step():
        t = clock()
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        t1 = clock()
        grads = tape.gradient(loss, model.trainable_variables)
        t2 = clock()
        opt.apply_gradients(zip(grads, model.trainable_variables))
        t3 = clock()
        float(loss)
        parts["forward"] += t1 - t
        parts["gradient"] += t2 - t1
        parts["optimizer"] += t3 - t2

    flags = (False, True) if a.compare else (None,)
    stats, totals, steps = {}, {}, {}
    with threadpoolctl.threadpool_limits(1):
        for flag in flags:
            with jit.use(flag) if flag is not None else contextlib.nullcontext():
                step()  # builds, compiles kernels, loads the op modules
        install()
        for f in flags:
            stats[f], totals[f], steps[f] = collections.defaultdict(lambda: [0.0, 0]), {}, []
        for _ in range(a.steps):
            for flag in flags:
                STATS.clear()
                parts.clear()
                with jit.use(flag) if flag is not None else contextlib.nullcontext():
                    t = clock()
                    step()
                    steps[flag].append(clock() - t)
                for k, (sec, calls) in STATS.items():
                    stats[flag][k][0] += sec
                    stats[flag][k][1] += calls
                for k, v in parts.items():
                    totals[flag][k] = totals[flag].get(k, 0.0) + v
    for flag in flags:
        _report(a, flag, stats[flag], totals[flag], steps[flag])


def _report(a, flag, stats: dict, parts: dict, steps: list) -> None:
    total = sum(steps) / a.steps
    ops = sum(s[0] for s in stats.values()) / a.steps
    what = "" if flag is None else (" compiled kernels" if flag else " NumPy paths")
    print(f"{a.model}, batch {a.batch},{what}: {total * 1e3:.1f} ms CPU per step (one thread; "
          f"median {statistics.median(steps) * 1e3:.1f}), {ops * 1e3:.1f} in ops, "
          f"{(total - ops) * 1e3:.1f} outside; "
          + ", ".join(f"{k} {v / a.steps * 1e3:.1f}" for k, v in parts.items()))  # fmt: skip
    rows = sorted(stats.items(), key=lambda kv: -kv[1][0])
    print(f"{'op':<48}{'ms/step':>9}{'calls':>7}{'share':>7}")
    for name, (sec, calls) in rows[: a.top]:
        ms = sec / a.steps * 1e3
        print(f"{name:<48}{ms:>9.2f}{calls // a.steps:>7}{sec / a.steps / total:>7.1%}")


if __name__ == "__main__":
    main()
