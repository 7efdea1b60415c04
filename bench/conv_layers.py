"""The convolution kernels of one model's training step, layer by layer: old tree vs new tree
alternating in ONE process, beside the GEMMs alone (issue 14).

The conv calls of one forward + backward step of a `cnn_step.py` model are recorded (shapes,
strides, padding, bias, relu, which gradients the tape asks for), then replayed on random data
with `conv_kernels` loaded from each tree in turn (`--before DIR` names the old tree; the new
one is this checkout), `--reps` times, alternating, and the median CPU seconds (process_time)
of each layer's forward and backward are printed with the time of the same GEMMs run alone.
So "kernel - GEMM" is the non-GEMM work: patch gathering, col2im, masks, copies. Pin
`OPENBLAS_NUM_THREADS=1` on a shared machine: the non-GEMM work is single-threaded anyway.

    OPENBLAS_NUM_THREADS=1 env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python bench/conv_layers.py alexnet --before ../base-conv --reps 5

`--jit` instead compares this tree's kernels with the compiled kernels off (`jit.use(False)`,
the NumPy path) and on, alternating, by CPU time (pin `OPENBLAS_NUM_THREADS=1`).

`--threads N` instead compares this tree's kernels on one thread and on N threads
(`conv_threads.FORCE`, whatever the load), alternating, with wall-clock milliseconds (forward +
backward) beside the CPU ones: run it without pinning OPENBLAS_NUM_THREADS.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))


def _load(tree: str, label: str):
    path = os.path.join(tree, "layerflow", "_src", "ops", "conv_kernels.py")
    spec = importlib.util.spec_from_file_location(f"_conv_kernels_{label}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(model_name: str, batch: int) -> list:
    """The conv calls of one training step: [(x_shape, w_shape, attrs, bias, relu, need)]."""
    import cnn_step

    import layerflow as tf
    from layerflow._src.ops import conv_ops

    size, spec = cnn_step.MODELS[model_name]
    model = cnn_step._keras_model(tf, spec, size)
    x, y = cnn_step._data(size, batch)
    calls, fwd = [], {}  # fwd: the calls of each shape, latest last (backward runs in reverse)
    real_f, real_b = conv_ops._forward, conv_ops._backward

    def spy_f(xp, x, w, b, attrs, relu, name):
        fwd.setdefault((tuple(x.shape), tuple(w.shape), attrs), []).append(len(calls))
        cf = x.ndim == 4 and x.transpose(3, 0, 1, 2).flags.c_contiguous and x.shape[3] > 1
        calls.append([tuple(x.shape), tuple(w.shape), attrs, b is not None, relu, None, cf])
        return real_f(xp, x, w, b, attrs, relu, name)

    def spy_b(dy, x, w, attrs, saved, need):
        # Layers of one shape: the backward pass meets them in reverse order.
        i = fwd[(tuple(x._data.shape), tuple(w._data.shape), attrs)].pop()
        calls[i][5] = tuple(need)
        calls[i].append(dy._data.transpose(3, 0, 1, 2).flags.c_contiguous)
        return real_b(dy, x, w, attrs, saved, need)

    conv_ops._forward, conv_ops._backward = spy_f, spy_b
    try:
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape.gradient(loss, model.trainable_variables)
    finally:
        conv_ops._forward, conv_ops._backward = real_f, real_b
    return calls


def _plan(mod, xs, ws, attrs):
    if hasattr(mod, "plan"):
        return mod.plan(xs, ws, attrs, "conv2d")
    strides, dilations, padding, groups = attrs
    outs, pads = mod.geometry(xs[1:3], ws[:2], strides, dilations, padding, "conv2d")
    return mod.Conv(xs, ws, (outs, pads, strides, dilations), groups)


def _others_busy(dt: float = 0.3) -> float:
    """Cores other processes kept busy over the next `dt` seconds (/proc/stat)."""

    def sample():
        with open("/proc/stat") as f:
            v = [int(t) for t in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4], time.process_time()

    (b0, c0), _ = sample(), time.sleep(dt)
    b1, c1 = sample()
    ticks = os.sysconf("SC_CLK_TCK")
    return max(0.0, ((b1 - b0) / ticks - (c1 - c0)) / dt)


def wait_quiet(limit: float, patience: float = 20.0) -> bool:
    """Wait (up to `patience` s) until other processes keep fewer than `limit` cores busy."""
    end = time.monotonic() + patience
    while time.monotonic() < end:
        if _others_busy() < limit:
            return True
    return False


def run_layer(mod, call, data, wall=None) -> tuple[float, float]:
    """(forward, backward) CPU seconds of one layer with kernel module `mod`; the wall
    seconds of both are appended to `wall` when given."""
    xs, ws, attrs, has_b, relu, need = call[:6]
    x, w, b, dy = data
    w0 = time.perf_counter()
    t0 = time.process_time()
    cv = _plan(mod, xs, ws, attrs)
    out, cols, mask = mod.conv_forward(np, x, w, cv, b if has_b else None, relu, keep=True)
    t1 = time.process_time()
    if need is not None:
        cv = _plan(mod, xs, ws, attrs)
        mod.conv_backward(np, x, w, dy, cv, x_shape=xs, need_x=need[0], need_w=need[1],
                          need_b=need[2], mask=mask, cols=cols if need[1] else None)  # fmt: skip
    t2 = time.process_time()
    if wall is not None:
        wall.append(time.perf_counter() - w0)
    return t1 - t0, t2 - t1


def gemm_floor(mod, call, reps: int) -> tuple[float, float]:
    """The same layer's GEMMs alone (forward, backward), CPU seconds, min of `reps`."""
    xs, ws, attrs, _, _, need = call[:6]
    cv = _plan(mod, xs, ws, attrs)
    g, k, mg = cv.g, cv.kh * cv.kw * cv.cg, cv.m // cv.g
    p = xs[0] * cv.geo[0][0] * cv.geo[0][1]
    rng = np.random.default_rng(0)
    a = rng.random((g, mg, k), dtype=np.float32)
    cols = rng.random((g, k, p), dtype=np.float32)
    dz = rng.random((g, mg, p), dtype=np.float32)
    out = np.empty((g, mg, p), np.float32)
    dcols = np.empty((g, k, p), np.float32)
    fs, bs = [], []
    for _ in range(reps):
        t = time.process_time()
        np.matmul(a, cols, out=out)
        t1 = time.process_time()
        if need is not None and need[1]:
            np.matmul(cols, dz.transpose(0, 2, 1))
        if need is not None and need[0]:
            np.matmul(a.transpose(0, 2, 1), dz, out=dcols)
        fs.append(t1 - t)
        bs.append(time.process_time() - t1)
    return min(fs), min(bs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--before", help="the old source tree")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, help="compare 1 and this many conv threads")
    ap.add_argument("--jit", action="store_true", help="compare the compiled kernels off and on")
    ap.add_argument(
        "--quiet",
        type=float,
        help="before each layer's alternation, wait until "
        "other processes keep fewer than this many cores busy (e.g. 0.3)",
    )
    ap.add_argument("--no-gemm", action="store_true", help="skip the GEMM-alone column")
    ap.add_argument(
        "--stat",
        choices=["median", "min"],
        default="median",
        help="min is steadier on a machine that others load",
    )
    a = ap.parse_args()
    stat = min if a.stat == "min" else statistics.median
    calls = record(a.model, a.batch)
    new = _load(str(ROOT), "new")
    mods = {"new": new}
    if a.before:
        mods = {"old": _load(a.before, "old"), **mods}
    force = {label: None for label in mods}
    jit_on = {label: True for label in mods}
    if a.jit:
        mods = {"numpy": mods["new"], "jit": mods["new"]}
        force, jit_on = {"numpy": None, "jit": None}, {"numpy": False, "jit": True}
    if a.threads:
        mods = {"1thr": mods["new"], f"{a.threads}thr": mods["new"]}
        force = {"1thr": 1, f"{a.threads}thr": a.threads}
    from layerflow._src.backend import jit
    from layerflow._src.ops import conv_threads

    quiet = tried = 0
    rng = np.random.default_rng(1)
    res = {(label, i): ([], [], []) for label in mods for i in range(len(calls))}
    for _ in range(a.reps):
        for i, call in enumerate(calls):
            xs, ws, attrs = call[:3]
            cv = _plan(new, xs, ws, attrs)
            x = rng.standard_normal(xs, dtype=np.float32)
            if call[6]:  # channels-first behind an NHWC view, as the step had it
                x = np.ascontiguousarray(x.transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)
            data = (x,
                    rng.standard_normal(ws, dtype=np.float32) * 0.1,
                    rng.standard_normal(ws[-1:], dtype=np.float32),
                    rng.standard_normal((xs[0], *cv.geo[0], ws[-1]), dtype=np.float32))  # fmt: skip
            if len(call) > 7 and call[7]:  # dy channels-first too
                dy = np.ascontiguousarray(data[3].transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)
                data = (*data[:3], dy)
            if a.quiet is not None:
                quiet += wait_quiet(a.quiet)
                tried += 1
            for label, mod in mods.items():
                conv_threads.FORCE = force[label]
                with jit.use(jit_on.get(label, True)):
                    f, b = run_layer(mod, call, data, res[(label, i)][2])
                res[(label, i)][0].append(f)
                res[(label, i)][1].append(b)
    walls = {lb: 0.0 for lb in mods}
    print(f"{'layer':<44}" + "".join(f"{lb + ' fwd':>10}{lb + ' bwd':>10}" for lb in mods)
          + "".join(f"{lb + ' wall':>11}" for lb in mods)
          + ("" if a.no_gemm else f"{'gemm fwd':>10}{'gemm bwd':>10}"))  # fmt: skip
    tot = {lb: [0.0, 0.0] for lb in [*mods, "gemm"]}
    for i, call in enumerate(calls):
        xs, ws, attrs, _, _, need, cf = call[:7]
        pad = attrs[2] if isinstance(attrs[2], str) else "pad"
        layout = (" cf" if cf else "") + (" dycf" if call[7:8] == [True] else "")
        desc = f"{xs[1:]}*{ws} s{attrs[0][0]} {pad}{layout}"
        line = f"{desc:<44}"
        for lb in mods:
            f, b = (stat(v) for v in res[(lb, i)][:2])
            tot[lb][0] += f
            tot[lb][1] += b
            line += f"{f * 1e3:>10.1f}{b * 1e3:>10.1f}"
        for lb in mods:
            wl = stat(res[(lb, i)][2])
            walls[lb] += wl
            line += f"{wl * 1e3:>11.1f}"
        if not a.no_gemm:
            f, b = gemm_floor(new, call, max(3, a.reps // 2))
            tot["gemm"][0] += f
            tot["gemm"][1] += b
            line += f"{f * 1e3:>10.1f}{b * 1e3:>10.1f}"
        print(line, flush=True)
    gemm = "" if a.no_gemm else f"{tot['gemm'][0] * 1e3:>10.1f}{tot['gemm'][1] * 1e3:>10.1f}"
    print(
        f"{'total ms':<44}"
        + "".join(f"{tot[lb][0] * 1e3:>10.1f}{tot[lb][1] * 1e3:>10.1f}" for lb in mods)
        + "".join(f"{walls[lb] * 1e3:>11.1f}" for lb in mods)
        + gemm
    )
    print(
        f"({a.stat}s of {a.reps} alternating reps, CPU ms; batch {a.batch}; "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})"
        + (f"; quiet before {quiet} of {tried} alternations" if tried else "")
    )


if __name__ == "__main__":
    main()
