"""Sparse x dense matmul: a 10^5 x 10^5 float32 matrix with 10^6 non-zeros times a dense
[10^5, 16], in layerflow (tf.sparse.sparse_dense_matmul), SciPy directly (CSR @ dense) and
TensorFlow (from the interpreter named by $LAYERFLOW_PEERS, when set), each in its own process.

Densified, the matrix would take 40 GB; the peak RSS column shows that nobody densifies.
Reported: median seconds of the product (10 runs after a warm-up), of building the sparse
operand, and of one forward + backward (gradients to the values and the dense operand) where
the framework has one; a checksum of the product to show that all three agree.
Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/sparse_matmul.py
"""

import json
import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(__file__))
from _common import ROOT, machine_load, peers_python  # noqa: E402

PEERS = peers_python()
N, NNZ, COLS, REPEATS = 100_000, 1_000_000, 16, 10

COMMON = textwrap.dedent(
    f"""
    import json, resource, statistics, time
    import numpy as np
    N, NNZ, COLS, REPEATS = {N}, {NNZ}, {COLS}, {REPEATS}
    rng = np.random.default_rng(0)
    flat = np.sort(rng.choice(N * N, size=NNZ, replace=False))  # canonical order, no repeats
    IDX = np.stack([flat // N, flat % N], axis=1).astype(np.int64)
    VALS = rng.standard_normal(NNZ).astype(np.float32)
    B = rng.standard_normal((N, COLS)).astype(np.float32)

    def timed(fn):
        fn()
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times), out

    def finish(name, build, matmul, out, grad=None):
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("RESULT " + json.dumps({{"name": name, "build": build, "matmul": matmul,
              "grad": grad, "checksum": float(np.abs(np.asarray(out)).sum()), "rss": rss}}))
    """
)

WORKERS = {
    "layerflow": (
        "self",
        """
        import layerflow as tf
        b = tf.constant(B)
        t = time.perf_counter(); st = tf.SparseTensor(IDX, VALS, [N, N])
        build = time.perf_counter() - t
        mm, out = timed(lambda: tf.sparse.sparse_dense_matmul(st, b).numpy())
        vals = tf.Variable(VALS); bv = tf.Variable(B)
        def step():
            with tf.GradientTape() as tape:
                y = tf.sparse.sparse_dense_matmul(tf.SparseTensor(IDX, vals, [N, N]), bv)
                loss = tf.reduce_sum(y * y)
            return tape.gradient(loss, [vals, bv])
        grad, _ = timed(step)
        finish("layerflow", build, mm, out, grad)
        """,
    ),
    "scipy": (
        "self",
        """
        import scipy.sparse as sps
        t = time.perf_counter(); a = sps.csr_matrix((VALS, (IDX[:, 0], IDX[:, 1])), shape=(N, N))
        build = time.perf_counter() - t
        mm, out = timed(lambda: a @ B)
        finish("scipy (CSR @ dense)", build, mm, out)
        """,
    ),
    "tensorflow": (
        "peers",
        """
        import os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import tensorflow as tf
        b = tf.constant(B)
        t = time.perf_counter(); st = tf.SparseTensor(IDX, VALS, [N, N])
        build = time.perf_counter() - t
        mm, out = timed(lambda: tf.sparse.sparse_dense_matmul(st, b).numpy())
        vals = tf.Variable(VALS); bv = tf.Variable(B)
        def step():
            with tf.GradientTape() as tape:
                y = tf.sparse.sparse_dense_matmul(tf.SparseTensor(IDX, vals, [N, N]), bv)
                loss = tf.reduce_sum(y * y)
            return tape.gradient(loss, [vals, bv])
        grad, _ = timed(step)
        finish("tensorflow " + tf.__version__, build, mm, out, grad)
        """,
    ),
}


def main() -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    env["PYTHONPATH"] = str(ROOT)
    print(f"({machine_load()} at start)")
    results = []
    for name, (which, body) in WORKERS.items():
        if which == "peers" and PEERS is None:
            print(f"{name}: skipped (set LAYERFLOW_PEERS to a Python with TensorFlow)")
            continue
        exe = sys.executable if which == "self" else PEERS
        code = COMMON + textwrap.dedent(body)
        proc = subprocess.run([exe, "-c", code], capture_output=True, text=True, env=env,
                              timeout=1800)  # fmt: skip
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode or not lines:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            print(f"{name}: failed ({tail[0][:200]})")
            continue
        results.append(json.loads(lines[-1][len("RESULT ") :]))
    base = next((r for r in results if r["name"].startswith("scipy")), None)
    print(f"{N} x {N} float32, {NNZ} non-zeros, times dense [{N}, {COLS}]; median of {REPEATS}")
    head = f"{'run':<24}{'build s':>9}{'matmul s':>10}{'vs SciPy':>10}{'fwd+bwd s':>11}"
    print(head + f"{'peak RSS MiB':>14}{'checksum':>14}")
    for r in results:
        ratio = r["matmul"] / base["matmul"] if base else float("nan")
        grad = "-" if r["grad"] is None else f"{r['grad']:.4f}"
        print(f"{r['name']:<24}{r['build']:>9.4f}{r['matmul']:>10.4f}{ratio:>10.2f}{grad:>11}"
              f"{r['rss']:>14.0f}{r['checksum']:>14.1f}")  # fmt: skip
    print(f"({machine_load()} at end)")


if __name__ == "__main__":
    main()
