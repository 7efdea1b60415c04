"""Max pooling kernels, forward + backward, on the pool shapes of GoogLeNet (96x96 inputs) and
AlexNet (224x224) at a batch of 16: the separable frame passes and one scatter-add
(`pool_kernels.py`) against the window-tap loop they replaced (`_tap_max_and_arg`, still the
fallback for windows whose maximum is NaN or the lowest value), alternating in one process,
inputs laid out channels-first as the convolutions hand them on. Prints the median wall and
CPU ms of each.

    OPENBLAS_NUM_THREADS=1 env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python bench/pool_step.py [--repeats 15] [--batch 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from layerflow._src.ops import pool_ops as P  # noqa: E402

# (name, H = W, C, ksize, stride, padding, calls per training step)
SHAPES = [
    ("googlenet b1", 48, 64, 3, 2, "SAME", 1),
    ("googlenet b2", 24, 192, 3, 2, "SAME", 1),
    ("googlenet 3a", 12, 192, 3, 1, "SAME", 1),
    ("googlenet 3b", 12, 256, 3, 1, "SAME", 1),
    ("googlenet b3", 12, 480, 3, 2, "SAME", 1),
    ("googlenet 4*", 6, 512, 3, 1, "SAME", 5),
    ("googlenet b4", 6, 832, 3, 2, "SAME", 1),
    ("googlenet 5*", 3, 832, 3, 1, "SAME", 2),
    ("alexnet p1", 54, 96, 3, 2, "VALID", 1),
    ("alexnet p2", 26, 256, 3, 2, "VALID", 1),
    ("alexnet p3", 12, 256, 3, 2, "VALID", 1),
]


def _channels_first(a: np.ndarray) -> np.ndarray:
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, -1, 0)), 0, -1)


def _step(impl: str, x, dy, k: tuple, s: tuple, pad: str, geo):
    make = P._max_and_arg if impl == "new" else P._tap_max_and_arg
    y, arg = make(np, x, k, geo, True)
    dx = P._max_pool_grad.prim.forward(np, dy, x, k, s, pad, arg)
    return y, dx


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    totals = {"old": [0.0, 0.0], "new": [0.0, 0.0]}
    print(f"{'shape':14} {'input':>18} {'old ms':>8} {'new ms':>8} {'old cpu':>8} {'new cpu':>8}")
    for name, hw, c, k, s, pad, calls in SHAPES:
        x = _channels_first(
            np.maximum(rng.standard_normal((args.batch, hw, hw, c)), 0).astype(np.float32)
        )
        ks, ss = (k, k), (s, s)
        geo = P._pool_geo(x.shape, ks, ss, pad, "bench")
        dy = _channels_first(rng.standard_normal((args.batch, *geo[0], c)).astype(np.float32))
        y0, dx0 = _step("old", x, dy, ks, ss, pad, geo)
        y1, dx1 = _step("new", x, dy, ks, ss, pad, geo)
        np.testing.assert_array_equal(y0, y1)
        np.testing.assert_allclose(dx0, dx1, rtol=1e-6, atol=1e-6)
        wall, cpu = {"old": [], "new": []}, {"old": [], "new": []}
        for _ in range(args.repeats):
            for impl in ("old", "new"):
                t, p = time.perf_counter(), time.process_time()
                _step(impl, x, dy, ks, ss, pad, geo)
                wall[impl].append(time.perf_counter() - t)
                cpu[impl].append(time.process_time() - p)
        med = {i: (statistics.median(wall[i]) * 1e3, statistics.median(cpu[i]) * 1e3) for i in wall}
        for i in med:
            totals[i][0] += med[i][0] * calls
            totals[i][1] += med[i][1] * calls
        shape = f"{args.batch}x{hw}x{hw}x{c}"
        old, new = med["old"], med["new"]
        print(f"{name:14} {shape:>18} {old[0]:8.2f} {new[0]:8.2f} {old[1]:8.2f} {new[1]:8.2f}"
              f"  (k{k} s{s} {pad}, x{calls})")  # fmt: skip
    print(f"{'per step':14} {'':>18} {totals['old'][0]:8.2f} {totals['new'][0]:8.2f} "
          f"{totals['old'][1]:8.2f} {totals['new'][1]:8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
