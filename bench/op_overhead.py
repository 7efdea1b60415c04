"""Microseconds per op for a 2x3 float32 add and an 8x8 float32 matmul, side by side.

layerflow without a tape and under a recording tape, NumPy, and the peers (TensorFlow, PyTorch,
JAX) that the interpreter named by $LAYERFLOW_PEERS can import,
each in its own subprocess. Median of repeated timings. Run under
`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/op_overhead.py [--cpu]`.

`--cpu` times with the process's CPU clock instead of the wall clock: on a machine shared
with other jobs, the time the scheduler gives to others is then not counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import peers_python  # noqa: E402

PEER_CODE = r"""
import json, sys, time, timeit, statistics
import numpy as np
which = sys.argv[1]
timer = time.process_time if sys.argv[2:] == ["cpu"] else time.perf_counter
a = np.random.rand(2, 3).astype("float32"); b = np.random.rand(2, 3).astype("float32")
m = np.random.rand(8, 8).astype("float32"); n = np.random.rand(8, 8).astype("float32")

def med(stmt, number=20000):
    times = timeit.repeat(stmt, number=number, repeat=7, timer=timer)
    return statistics.median(times) / number * 1e6

out = {}
if which == "numpy":
    out["add"] = med(lambda: a + b); out["matmul"] = med(lambda: m @ n)
elif which == "layerflow":
    import layerflow as tf
    x, y, p, q = tf.constant(a), tf.constant(b), tf.constant(m), tf.constant(n)
    w = tf.Variable(a)
    out["add"] = med(lambda: x + y); out["matmul"] = med(lambda: tf.matmul(p, q))
    out["matmul_op"] = med(lambda: p @ q)
    with tf.GradientTape() as t:
        t.watch([x, p])
        out["add_tape"] = med(lambda: x + y, 5000)
        out["matmul_tape"] = med(lambda: tf.matmul(p, q), 5000)
elif which == "torch":
    import torch
    x, y, p, q = (torch.from_numpy(v) for v in (a, b, m, n))
    out["add"] = med(lambda: x + y); out["matmul"] = med(lambda: p @ q)
    xr, pr = x.clone().requires_grad_(), p.clone().requires_grad_()
    out["add_tape"] = med(lambda: xr + y, 5000); out["matmul_tape"] = med(lambda: pr @ q, 5000)
elif which == "tensorflow":
    import tensorflow as tf
    x, y, p, q = (tf.constant(v) for v in (a, b, m, n))
    out["add"] = med(lambda: x + y, 2000); out["matmul"] = med(lambda: tf.matmul(p, q), 2000)
    with tf.GradientTape() as t:
        t.watch([x, p])
        out["add_tape"] = med(lambda: x + y, 2000)
        out["matmul_tape"] = med(lambda: tf.matmul(p, q), 2000)
elif which == "jax":
    import jax.numpy as jnp
    x, y, p, q = (jnp.asarray(v) for v in (a, b, m, n))
    out["add"] = med(lambda: (x + y).block_until_ready(), 2000)
    out["matmul"] = med(lambda: (p @ q).block_until_ready(), 2000)
print(json.dumps(out))
"""


def run(python: str, which: str, cpu: bool = False) -> dict | None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    args = [python, "-c", PEER_CODE, which] + (["cpu"] if cpu else [])
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    cpu = "--cpu" in sys.argv[1:]
    peers = peers_python()
    rows = [("layerflow", sys.executable), ("numpy", sys.executable)]
    if peers is not None:
        rows += [("torch", peers), ("jax", peers), ("tensorflow", peers)]
    clock = "CPU" if cpu else "wall"
    print(f"{'framework':<12}{'add':>9}{'add+tape':>10}{'matmul':>9}{'mm+tape':>9}"
          f"  (median us/op, {clock} clock)")  # fmt: skip
    results = {}
    for which, python in rows:
        r = run(python, which, cpu)
        if r is None:
            print(f"{which:<12} not importable")
            continue
        results[which] = r

        def f(key: str, r: dict = r) -> str:
            return f"{r[key]:.2f}" if key in r else "-"

        print(f"{which:<12}{f('add'):>9}{f('add_tape'):>10}{f('matmul'):>9}{f('matmul_tape'):>9}")
    lf = results.get("layerflow")
    if lf:
        print(f"layerflow `p @ q`: {lf['matmul_op']:.2f} us")
        for peer in ("torch", "jax", "tensorflow"):
            if peer in results:
                print(f"ratio {peer}/layerflow: add {results[peer]['add'] / lf['add']:.2f}x, "
                      f"matmul {results[peer]['matmul'] / lf['matmul']:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
