"""The compiled kernels of `ops/norm_jit.py` and `ops/pool_jit.py` against the NumPy paths
beside them (`jit.use(False)`), alternating in one process, one thread, CPU clock: training
batch norm forward and backward (a recorded call and its tape gradient) on DenseNet's and
ResNet's shapes, the relu gradient, and the 3x3 max pools of GoogLeNet, all at a batch of 16
with inputs laid out channels-first as the convolutions hand them on. Prints median ms of
each and the totals; checks that both paths agree (max pool: bit for bit).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/norm_pool_jit.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BN = [(48, 64), (24, 128), (24, 192), (12, 224), (6, 256), (3, 512)]  # (H = W, C)
POOLS = [(48, 64, 2), (24, 192, 2), (12, 192, 1), (12, 256, 1), (12, 480, 2), (6, 512, 1),
         (6, 832, 2), (3, 832, 1)]  # fmt: skip


def _cf(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 0)).transpose(1, 2, 3, 0)


def _paired(repeats: int, run) -> dict:
    """{flag: (forward ms, backward ms)} medians, the NumPy path and the kernels in turn."""
    from layerflow._src.backend import jit

    times = {False: ([], []), True: ([], [])}
    outs = {}
    for _ in range(repeats):
        for flag in (False, True):
            with jit.use(flag):
                outs[flag] = run(times[flag])
    return {f: (statistics.median(a) * 1e3, statistics.median(b) * 1e3)
            for f, (a, b) in times.items()}, outs  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()
    import threadpoolctl

    import layerflow as tf
    from layerflow._src.ops import math_ops
    from layerflow._src.ops.normalization_ops import fused_batch_norm_train

    rng = np.random.default_rng(0)
    clock = time.thread_time
    totals = {}
    print(f"{'case':<34}{'NumPy fwd':>10}{'bwd':>8}{'kernel fwd':>12}{'bwd':>8}")

    def report(group: str, name: str, r: dict) -> None:
        t = totals.setdefault(group, [0.0, 0.0, 0.0, 0.0])
        for i, v in enumerate((*r[False], *r[True])):
            t[i] += v
        print(f"{name:<34}{r[False][0]:>10.3f}{r[False][1]:>8.3f}{r[True][0]:>12.3f}"
              f"{r[True][1]:>8.3f}")  # fmt: skip

    with threadpoolctl.threadpool_limits(1):
        for hw, c in BN:
            shape = (a.batch, hw, hw, c)
            x = tf.constant(_cf(rng.standard_normal(shape).astype(np.float32) * 2 + 1))
            dy = tf.constant(_cf(rng.standard_normal(shape).astype(np.float32)))
            s, o = (
                tf.Variable(rng.standard_normal(c).astype(np.float32)),
                tf.Variable(np.zeros(c, np.float32)),
            )  # noqa: E501

            def bn(acc, x=x, dy=dy, s=s, o=o):
                t = clock()
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = fused_batch_norm_train(x, s, o, 1e-3)[0]
                t1 = clock()
                g = tape.gradient(y, x, output_gradients=dy)
                acc[0].append(t1 - t)
                acc[1].append(clock() - t1)
                return y.numpy(), g.numpy()

            r, outs = _paired(a.repeats, bn)
            for got, want in zip(outs[True], outs[False]):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            report("batch norm", f"batch norm {shape}", r)

            y = tf.constant(_cf(rng.standard_normal(shape).astype(np.float32)))

            def relu_grad(acc, y=y, dy=dy):
                t = clock()
                g = math_ops._relu_grad(dy, y)
                acc[1].append(clock() - t)
                acc[0].append(0.0)
                return g.numpy()

            r, outs = _paired(a.repeats, relu_grad)
            np.testing.assert_array_equal(outs[True], outs[False])
            report("relu gradient", f"relu gradient {shape}", r)
        for hw, c, stride in POOLS:
            shape = (a.batch, hw, hw, c)
            x = tf.constant(_cf(rng.standard_normal(shape).astype(np.float32)))

            def pool(acc, x=x, stride=stride):
                t = clock()
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = tf.nn.max_pool2d(x, 3, stride, "SAME")
                t1 = clock()
                g = tape.gradient(y, x, output_gradients=y)
                acc[0].append(t1 - t)
                acc[1].append(clock() - t1)
                return y.numpy(), g.numpy()

            r, outs = _paired(a.repeats, pool)
            for got, want in zip(outs[True], outs[False]):
                np.testing.assert_array_equal(got, want)
            report("max pool", f"max pool 3x3/{stride} {shape}", r)
    for group, t in totals.items():
        print(f"{'total ' + group:<34}{t[0]:>10.3f}{t[1]:>8.3f}{t[2]:>12.3f}{t[3]:>8.3f}")
    print("(ms, medians; CPU time of this thread; NumPy = jit.use(False), kernel = the numba "
          f"kernels; load average {os.getloadavg()[0]:.1f})")  # fmt: skip


if __name__ == "__main__":
    main()
