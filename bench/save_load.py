"""Seconds and peak memory to save and load a 100M-parameter model: layerflow beside TensorFlow.

Each measurement runs in a fresh subprocess; peak memory is the rise of the process's peak RSS
above its level once the model exists (so it counts what saving/loading allocates on top).
Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/save_load.py
(TensorFlow from the interpreter named by $LAYERFLOW_PEERS, when set.)
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(__file__))
from _common import peers_python  # noqa: E402

PEERS = peers_python()
N_VARS, SHAPE = 10, (1000, 10_000)  # 10 x 10M float32 = 100M parameters, 400 MB

COMMON = textwrap.dedent(
    f"""
    import gc, json, resource, sys, time
    import numpy as np
    N_VARS, SHAPE = {N_VARS}, {SHAPE}
    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20
    """
)

LAYERFLOW = COMMON + textwrap.dedent(
    """
    import layerflow as tf
    from layerflow._src.framework.trackable import Trackable
    from layerflow._src.keras.saving import keras_weights

    class Big(Trackable):
        def __init__(self, fill):
            self.vs = [tf.Variable(np.full(SHAPE, fill + i, np.float32)) for i in range(N_VARS)]
        def _trackable_children(self):
            return {"layers": self.vs}

    op, path = sys.argv[1], sys.argv[2]
    model = Big(1.0 if op == "save" else 0.0)
    gc.collect()
    base = max(rss_mb(), peak_mb())
    t = time.perf_counter()
    if op == "save":
        keras_weights.save_weights(model, path)
    else:
        keras_weights.load_weights(model, path).assert_consumed()
        assert float(model.vs[3].numpy()[0, 0]) == 4.0
    dt = time.perf_counter() - t
    print(json.dumps({"seconds": dt, "peak_mb": peak_mb() - base}))
    """
)

TENSORFLOW = COMMON + textwrap.dedent(
    """
    import os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow as tf

    op, path = sys.argv[1], sys.argv[2]
    fill = 1.0 if op == "save" else 0.0
    vs = [tf.Variable(np.full(SHAPE, fill + i, np.float32)) for i in range(N_VARS)]
    ckpt = tf.train.Checkpoint(layers=vs)
    gc.collect()
    base = max(rss_mb(), peak_mb())
    t = time.perf_counter()
    if op == "save":
        ckpt.write(path)
    else:
        ckpt.read(path).assert_consumed()
        assert float(vs[3].numpy()[0, 0]) == 4.0
    dt = time.perf_counter() - t
    print(json.dumps({"seconds": dt, "peak_mb": peak_mb() - base}))
    """
)


def measure(python, script, op, path):
    out = subprocess.run([python, "-c", script, op, path], capture_output=True, text=True,
                         timeout=900)  # fmt: skip
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        lf = os.path.join(tmp, "big.params")
        rows.append(("layerflow", "save", measure(sys.executable, LAYERFLOW, "save", lf)))
        rows.append(("layerflow", "load", measure(sys.executable, LAYERFLOW, "load", lf)))
        size_lf = os.path.getsize(lf) / 2**20
        if PEERS is not None:
            tfp = os.path.join(tmp, "tf_ckpt")
            rows.append(("tensorflow", "save", measure(PEERS, TENSORFLOW, "save", tfp)))
            rows.append(("tensorflow", "load", measure(PEERS, TENSORFLOW, "load", tfp)))
    print(f"100M float32 parameters ({N_VARS} x {SHAPE}); layerflow file {size_lf:.0f} MB")
    print(f"{'framework':<12}{'op':<6}{'seconds':>9}{'peak MB above model':>22}")
    base = {op: r for name, op, r in rows if name == "layerflow"}
    for name, op, r in rows:
        if "error" in r:
            print(f"{name:<12}{op:<6}  failed: {r['error']}")
            continue
        ratio = ""
        if name != "layerflow" and "seconds" in base[op]:
            ratio = f"   (layerflow time / TF time = {base[op]['seconds'] / r['seconds']:.2f})"
        print(f"{name:<12}{op:<6}{r['seconds']:>9.2f}{r['peak_mb']:>22.0f}{ratio}")


if __name__ == "__main__":
    main()
