"""Milliseconds per training step of a d2l-sized char-RNN, layerflow beside its peers.

d2l's recurrent chapter model: vocabulary 28, one LSTM (or GRU) layer of 256 hidden units,
35 time steps, batch 32, one-hot inputs, a Dense(28) head, sparse softmax cross-entropy,
SGD lr 1 with gradients clipped to global norm 1, a fresh zero state per batch. The text is
synthetic (a fixed random Markov chain over 28 symbols, the same for every run), so nothing
is downloaded. Each framework runs the same steps in its own process:

- a GradientTape loop written as d2l writes it (`RNN(LSTMCell, time_major=True)`), eager;
- `Model.fit` on a batch-major `LSTM` / `GRU`;
- the peers (LAYERFLOW_PEERS): tf_keras (Keras 2) eager and `tf.function` loops and `fit`,
  and PyTorch's `nn.LSTM`.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/char_rnn.py [--steps 200]
        [--threads N]

`--threads N` caps every framework's CPU threads (OpenBLAS/OpenMP for layerflow and NumPy,
TF's intra-op pool, torch's): on a machine shared with other jobs, BLAS threads that spin
waiting for a core can make small GEMMs ten times slower, so compare at one thread there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import _common  # noqa: E402

VOCAB, HIDDEN, STEPS, BATCH, LR, CLIP = 28, 256, 35, 32, 1.0, 1.0
WARMUP = 5


def _corpus(n_batches):
    """(n_batches, BATCH, STEPS) inputs and their next-symbol labels from a Markov chain."""
    import numpy as np

    rng = np.random.default_rng(0)
    trans = rng.dirichlet(np.full(VOCAB, 0.3), VOCAB)
    total = n_batches * BATCH * STEPS + 1
    seq = np.empty(total, np.int64)
    seq[0] = 0
    u = rng.random(total)
    cdf = trans.cumsum(1)
    for i in range(1, total):
        seq[i] = min(int(np.searchsorted(cdf[seq[i - 1]], u[i])), VOCAB - 1)
    x = seq[:-1].reshape(n_batches, BATCH, STEPS)
    y = seq[1:].reshape(n_batches, BATCH, STEPS)
    return x.astype(np.int32), y.astype(np.int32)


def _timed(step, xs, ys):
    times, loss = [], None
    for x, y in zip(xs, ys):
        t = time.perf_counter()
        loss = float(step(x, y))
        times.append(time.perf_counter() - t)
    return times[WARMUP:], loss


def _keras_tape(tf, keras, cell_name, steps, compiled=False):
    xs, ys = _corpus(steps + WARMUP)
    cell = getattr(keras.layers, cell_name)(HIDDEN)
    rnn = keras.layers.RNN(cell, time_major=True, return_sequences=True, return_state=True)
    dense = keras.layers.Dense(VOCAB)
    opt = keras.optimizers.SGD(LR)

    def step(x, y):
        state = rnn.cell.get_initial_state(batch_size=BATCH, dtype=tf.float32)
        with tf.GradientTape() as tape:
            inp = tf.one_hot(tf.transpose(x), VOCAB)
            out, *state = rnn(inp, state)
            logits = dense(tf.reshape(out, (-1, HIDDEN)))
            labels = tf.reshape(tf.transpose(y), (-1,))
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        params = rnn.trainable_variables + dense.trainable_variables
        grads = tape.gradient(loss, params)
        grads, _ = tf.clip_by_global_norm(grads, CLIP)
        opt.apply_gradients(zip(grads, params))
        return loss

    return _timed(tf.function(step) if compiled else step, xs, ys)


def _keras_fit(tf, keras, layer_name, steps):
    import numpy as np

    xs, ys = _corpus(steps + WARMUP)
    x = np.eye(VOCAB, dtype=np.float32)[xs.reshape(-1, STEPS)]
    y = ys.reshape(-1, STEPS)
    model = keras.Sequential([
        keras.Input((STEPS, VOCAB)),
        getattr(keras.layers, layer_name)(HIDDEN, return_sequences=True),
        keras.layers.Dense(VOCAB),
    ])  # fmt: skip
    opt = keras.optimizers.SGD(LR, global_clipnorm=CLIP)
    model.compile(opt, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    n = WARMUP * BATCH
    model.fit(x[:n], y[:n], batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    t = time.perf_counter()
    hist = model.fit(x[n:], y[n:], batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    per_step = (time.perf_counter() - t) / steps
    return [per_step], hist.history["loss"][-1]


def w_layerflow(name, steps):
    import layerflow as tf

    kind = name.split()[1]
    if "fit" in name:
        times, loss = _keras_fit(tf, tf.keras, kind, steps)
    else:
        times, loss = _keras_tape(tf, tf.keras, kind + "Cell", steps)
    _common.emit(name, times, loss)


def _threads():
    import os

    n = os.environ.get("CHAR_RNN_THREADS")
    return int(n) if n else None


def w_tf_keras(name, steps):
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import tf_keras as keras

    if _threads():
        tf.config.threading.set_intra_op_parallelism_threads(_threads())
        tf.config.threading.set_inter_op_parallelism_threads(1)

    kind = name.split()[1]
    if "fit" in name:
        times, loss = _keras_fit(tf, keras, kind, steps)
    else:
        times, loss = _keras_tape(tf, keras, kind + "Cell", steps, "function" in name)
    _common.emit(name, times, loss)


def w_torch(name, steps):
    import torch

    if _threads():
        torch.set_num_threads(_threads())
    xs, ys = _corpus(steps + WARMUP)
    lstm = torch.nn.LSTM(VOCAB, HIDDEN)
    head = torch.nn.Linear(HIDDEN, VOCAB)
    params = list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=LR)
    lossf = torch.nn.CrossEntropyLoss()
    eye = torch.eye(VOCAB)

    def step(x, y):
        x, y = torch.from_numpy(x.T.copy()).long(), torch.from_numpy(y.T.copy()).long()
        opt.zero_grad()
        out, _ = lstm(eye[x])
        loss = lossf(head(out.reshape(-1, HIDDEN)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        return loss.item()

    times, loss = _timed(step, xs, ys)
    _common.emit(name, times, loss)


WORKERS = [
    ("layerflow LSTM tape", "self", w_layerflow),
    ("layerflow GRU tape", "self", w_layerflow),
    ("layerflow LSTM fit", "self", w_layerflow),
    ("tf_keras LSTM tape", "peers", w_tf_keras),
    ("tf_keras LSTM tf.function", "peers", w_tf_keras),
    ("tf_keras GRU tape", "peers", w_tf_keras),
    ("tf_keras LSTM fit", "peers", w_tf_keras),
    ("PyTorch LSTM eager", "peers", w_torch),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--worker")
    ap.add_argument("--only", help="comma-separated worker names")
    ap.add_argument("--threads", type=int, help="cap every framework's CPU threads")
    ap.add_argument(
        "--contention",
        action="store_true",
        help="run each worker quiet, then beside a busy-loop process; report both",
    )
    args = ap.parse_args()
    if args.worker:
        {n: f for n, _, f in WORKERS}[args.worker](args.worker, args.steps)
        return
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}  # fmt: skip
    env["PYTHONPATH"] = str(_common.ROOT)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "CHAR_RNN_THREADS"):  # fmt: skip
            env[var] = str(args.threads)
    print(f"({_common.machine_load()} at start)")
    results, contended = [], []
    for name, python, _ in WORKERS:
        if args.only and name not in args.only.split(","):
            continue
        if python == "peers" and _common.PEERS is None:
            continue
        exe = sys.executable if python == "self" else _common.PEERS
        cmd = [exe, __file__, "--worker", name, "--steps", str(args.steps)]
        for busy in (False, True) if args.contention else (False,):
            with _common.busy_core(busy):
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
                print(f"{name}: skipped ({tail[0][:160]})", file=sys.stderr)
                continue
            (contended if busy else results).append(json.loads(lines[-1][len("RESULT ") :]))
            print(f"  {name}{' (contended)' if busy else ''}: done", file=sys.stderr, flush=True)
    base = next((r for r in results if r["name"] == "tf_keras LSTM tape"), None)
    threads = f", {args.threads} thread(s) each" if args.threads else ""
    print(f"char-RNN: vocab {VOCAB}, hidden {HIDDEN}, {STEPS} steps x batch {BATCH}, "
          f"{args.steps} SGD steps{threads}")  # fmt: skip
    print(f"{'run':<28}{'median ms/step':>16}{'vs tf_keras tape':>18}{'final loss':>12}"
          f"{'peak RSS MiB':>14}")  # fmt: skip
    for r in results:
        med = statistics.median(r["times"]) * 1000
        ratio = med / (statistics.median(base["times"]) * 1000) if base else float("nan")
        print(f"{r['name']:<28}{med:>16.2f}{ratio:>18.2f}{r['acc']:>12.3f}{r['rss']:>14.0f}")
    print("(fit rows: one epoch's wall time / steps, after a warm-up epoch)")
    if args.contention:
        busy = {r["name"]: r for r in contended}
        print(f"{'run':<28}{'quiet ms/step':>15}{'contended':>11}{'slowdown':>10}")
        for r in results:
            q = statistics.median(r["times"]) * 1000
            c = busy.get(r["name"])
            cm = statistics.median(c["times"]) * 1000 if c else float("nan")
            print(f"{r['name']:<28}{q:>15.2f}{cm:>11.2f}{cm / q:>9.2f}x")
        print("(contended: another process keeps one core busy during the run; same run)")
    print(f"({_common.machine_load()} at end)")


if __name__ == "__main__":
    main()
