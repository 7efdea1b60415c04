"""The seed MLP's epoch ratios measured in one process, epochs interleaved, for a shared machine.

`mlp_epoch.py` runs each framework in its own process one after the other; when other jobs
come and go on the machine, one worker can get a quiet minute and the next a busy one, and the
ratios swing by 2x. Here the hand-written NumPy step and layerflow's GradientTape loop take
turns batch by batch on the same batches, and a `fit` epoch runs next to each such epoch
(alternating which goes first); the ratios are the medians of the per-round ratios to the NumPy
time of the same round. `--phases` adds a per-step split (forward, loss, gradient, update) of
the tape loop beside the NumPy step's own.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/mlp_interleaved.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import _common  # noqa: E402

BATCH, LR = 256, 0.1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--phases", action="store_true")
    args = ap.parse_args()

    import numpy as np

    import layerflow as tf

    xtr, ytr, _, _ = _common.load_fashion_mnist()
    x2 = xtr.reshape(-1, 784)
    rng = np.random.default_rng(0)
    lim1, lim2 = np.sqrt(6 / (784 + 256)), np.sqrt(6 / (256 + 10))
    W1 = rng.uniform(-lim1, lim1, (784, 256)).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    W2 = rng.uniform(-lim2, lim2, (256, 10)).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    split = {k: 0.0 for k in ("np_fwd", "np_loss", "np_grad", "np_sgd")}
    split.update({k: 0.0 for k in ("lf_fwd", "lf_loss", "lf_grad", "lf_sgd")})
    pc = time.perf_counter

    def np_step(X, y):  # bench/mlp_epoch.py's NumPy worker, with phase clocks
        t0 = pc()
        h = X @ W1
        h += b1
        np.maximum(h, 0, out=h)
        z = h @ W2
        z += b2
        t1 = pc()
        z -= z.max(1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(1, keepdims=True)
        z[np.arange(len(y)), y] -= 1
        z /= len(y)
        t2 = pc()
        gW2 = h.T @ z
        gb2 = z.sum(0)
        dh = z @ W2.T
        dh *= h > 0
        gW1 = X.T @ dh
        gb1 = dh.sum(0)
        t3 = pc()
        for p, g in ((W1, gW1), (b1, gb1), (W2, gW2), (b2, gb2)):
            g *= LR
            p -= g
        t4 = pc()
        split["np_fwd"] += t1 - t0
        split["np_loss"] += t2 - t1
        split["np_grad"] += t3 - t2
        split["np_sgd"] += t4 - t3

    def model():
        return tf.keras.models.Sequential(
            [
                tf.keras.layers.Flatten(),
                tf.keras.layers.Dense(256, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )

    net = model()
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=LR)

    def lf_step(X, y):  # bench/mlp_epoch.py's tape loop, with phase clocks
        t0 = pc()
        with tf.GradientTape() as tape:
            out = net(X)
            t1 = pc()
            value = loss(y, out)
        t2 = pc()
        params = net.trainable_variables
        grads = tape.gradient(value, params)
        t3 = pc()
        opt.apply_gradients(zip(grads, params))
        t4 = pc()
        split["lf_fwd"] += t1 - t0
        split["lf_loss"] += t2 - t1
        split["lf_grad"] += t3 - t2
        split["lf_sgd"] += t4 - t3

    fit_net = model()
    fit_net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=LR),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )

    def paired_epoch():
        # NumPy and the tape loop take turns batch by batch on the same batches.
        order = rng.permutation(len(x2))
        t_np = t_lf = 0.0
        for s in range(0, len(x2), BATCH):
            idx = order[s : s + BATCH]
            y = ytr[idx]
            t = pc()
            np_step(x2[idx], y)
            t_np += pc() - t
            t = pc()
            lf_step(xtr[idx], y)
            t_lf += pc() - t
        return t_np, t_lf

    def fit_epoch():
        t = pc()
        fit_net.fit(xtr, ytr, batch_size=BATCH, epochs=1, verbose=0)
        return pc() - t

    paired_epoch()  # warm-up: builds, first allocations, BLAS threads
    fit_epoch()
    for k in split:
        split[k] = 0.0
    times: dict[str, list[float]] = {"numpy (hand-written)": [], "layerflow tape loop": []}
    times["layerflow fit"] = []
    for r in range(args.rounds):
        # Alternate which goes first, so a load change favours neither.
        if r % 2:
            t_fit = fit_epoch()
            t_np, t_lf = paired_epoch()
        else:
            t_np, t_lf = paired_epoch()
            t_fit = fit_epoch()
        for name, t in zip(times, (t_np, t_lf, t_fit)):
            times[name].append(t)
    base = times["numpy (hand-written)"]
    print(f"MLP on Fashion-MNIST, {args.rounds} interleaved rounds, batch {BATCH}")
    print(f"{'run':24s} {'median s/epoch':>15s} {'median ratio':>13s}  per-round ratios")
    for name in times:
        ratios = [t / b for t, b in zip(times[name], base)]
        print(
            f"{name:24s} {statistics.median(times[name]):15.3f} "
            f"{statistics.median(ratios):13.2f}  {[round(x, 2) for x in ratios]}"
        )
    if args.phases:
        per = 1e6 / (len(x2) / BATCH) / args.rounds
        print("per step, us (NumPy | layerflow tape loop):")
        for phase in ("fwd", "loss", "grad", "sgd"):
            a, b = split["np_" + phase] * per, split["lf_" + phase] * per
            print(f"  {phase:5s} {a:8.1f} | {b:8.1f}")


if __name__ == "__main__":
    main()
