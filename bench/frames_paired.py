"""Shifted-frame convolution layers (`ops/conv_flat`): the NumPy path and the compiled kernels
(`ops/frames_jit`, numba) alternating in ONE process, forward and backward of each layer, CPU
milliseconds (process_time, median of the reps after the first), beside the same GEMMs alone.

Layers are `N,H,C,M` (a 3x3 SAME convolution of an NxHxHxC channels-first input to M filters,
bias and relu, as in VGG); `nox` after them skips the input gradient (a first layer). One BLAS
thread and one conv thread by default (the non-GEMM work is what differs); `--threads 2` runs
both paths on two conv threads and adds the wall time.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/frames_paired.py \\
        --layers "4,224,64,64;4,224,1,64,nox;4,112,64,128;16,56,64,64" --reps 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))

VGG_STEP = "4,224,1,64,nox;4,224,64,64;4,112,64,128"  # vgg-step's layers at a batch of 4


def _gemms(cv, need_x: bool, reps: int) -> tuple[float, float]:
    """The layer's GEMMs alone, chunk by chunk as the frames run them (min CPU s)."""
    from layerflow._src.ops import conv_flat

    k, m = cv.k, cv.m
    spans = [conv_flat._flat_span(cv, c)[1] for c in cv.plan]
    p = max(spans)
    a, cols = np.ones((m, k), np.float32), np.ones((k, p), np.float32)
    dz, out, dcols = np.ones((m, p), np.float32), np.empty((m, p), np.float32), np.empty_like(cols)
    dw = np.empty((k, m), np.float32)
    fs, bs = [], []
    for _ in range(reps):
        t0 = time.process_time()
        for q in spans:
            np.matmul(a, cols[:, :q], out=out[:, :q])
        t1 = time.process_time()
        for q in spans:
            np.matmul(cols[:, :q], dz[:, :q].T, out=dw)
            if need_x:
                np.matmul(a.T, dz[:, :q], out=dcols[:, :q])
        fs.append(t1 - t0)
        bs.append(time.process_time() - t1)
    return min(fs), min(bs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", default=VGG_STEP)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    from threadpoolctl import threadpool_limits

    from layerflow._src.backend import jit
    from layerflow._src.ops import conv_flat, conv_kernels, conv_threads

    if not jit.available():
        sys.exit("numba is not installed (extra `fast`): nothing to compare")
    conv_threads.FORCE = a.threads
    rng = np.random.default_rng(0)
    print(f"{'layer':<28}{'numpy fwd':>10}{'bwd':>8}{'jit fwd':>9}{'bwd':>8}"
          f"{'gemm fwd':>10}{'bwd':>8}" + (f"{'numpy wall':>12}{'jit wall':>10}" if a.threads > 1
                                           else ""))  # fmt: skip
    with threadpool_limits(1):
        for spec in a.layers.split(";"):
            parts = spec.split(",")
            n, h, c, m = (int(v) for v in parts[:4])
            need_x = "nox" not in parts[4:]
            xs, ws = (n, h, h, c), (3, 3, c, m)
            cv = conv_kernels.plan(xs, ws, ((1, 1), (1, 1), "SAME", 1), "conv2d")
            x = rng.standard_normal((c, n, h, h), dtype=np.float32).transpose(1, 2, 3, 0)
            w = rng.standard_normal(ws, dtype=np.float32) * 0.1
            b = rng.standard_normal(m, dtype=np.float32)
            dy = rng.standard_normal((m, n, h, h), dtype=np.float32).transpose(1, 2, 3, 0)
            res = {False: ([], [], []), True: ([], [], [])}
            for _ in range(a.reps):
                for fast in (False, True):
                    with jit.use(fast):
                        w0, t0 = time.perf_counter(), time.process_time()
                        _, _, mask = conv_flat.flat_forward(np, x, w, cv, b, True, True)
                        t1 = time.process_time()
                        conv_flat.flat_backward(np, x, w, dy, cv, need_x, True, True, mask)
                        t2 = time.process_time()
                        res[fast][0].append(t1 - t0)
                        res[fast][1].append(t2 - t1)
                        res[fast][2].append(time.perf_counter() - w0)
            gf, gb = _gemms(cv, need_x, max(2, a.reps // 2))

            def med(v):
                return statistics.median(v[1:] or v) * 1e3

            line = (f"{spec:<28}{med(res[False][0]):>10.1f}{med(res[False][1]):>8.1f}"
                    f"{med(res[True][0]):>9.1f}{med(res[True][1]):>8.1f}"
                    f"{gf * 1e3:>10.1f}{gb * 1e3:>8.1f}")  # fmt: skip
            if a.threads > 1:
                line += f"{med(res[False][2]):>12.1f}{med(res[True][2]):>10.1f}"
            print(line, flush=True)
    print(
        f"(CPU ms, medians of {a.reps} alternating reps after the first; {a.threads} conv "
        f"thread(s), one BLAS thread; load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
