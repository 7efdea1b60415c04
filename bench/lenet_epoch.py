"""Seconds per epoch of the book's LeNet on Fashion-MNIST, layerflow beside its peers.

LeNet (sigmoid, average pooling): Conv2D(6, 5, same), AvgPool2D(2, 2), Conv2D(16, 5),
AvgPool2D(2, 2), Flatten, Dense(120), Dense(84), Dense(10); SGD lr 0.9, batch 256. With
`--epochs 10` the test accuracy column is the book's >= 0.75 criterion. `layerflow_fit_numpy`
is the same fit with the compiled (numba) kernels off; `--jit-pairs` alone compares the two
in one process, epochs alternating at one BLAS thread (CPU ms per step).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/lenet_epoch.py [--epochs 2]
"""

from __future__ import annotations

import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

BATCH, LR = 256, 0.9


def _keras_lenet(tf):
    L = tf.keras.layers
    return tf.keras.models.Sequential(
        [
            L.Conv2D(6, 5, activation="sigmoid", padding="same"),
            L.AvgPool2D(2, 2),
            L.Conv2D(16, 5, activation="sigmoid"),
            L.AvgPool2D(2, 2),
            L.Flatten(),
            L.Dense(120, activation="sigmoid"),
            L.Dense(84, activation="sigmoid"),
            L.Dense(10),
        ]
    )


def _data():
    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    return xtr[..., None], ytr, xte[..., None], yte


def w_fit(epochs, module="layerflow", name="layerflow fit"):
    import numpy as np

    tf = importlib.import_module(module)
    xtr, ytr, xte, yte = _data()
    net = _keras_lenet(tf)
    net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=LR),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    times = []
    for _ in range(epochs):
        t, c = time.perf_counter(), time.process_time()
        net.fit(xtr, ytr, batch_size=BATCH, epochs=1, verbose=0)
        times.append(time.perf_counter() - t)
        _common.CPU.append(time.process_time() - c)  # all threads: the loaded machine's figure
    acc = float((np.asarray(net.predict(xte, batch_size=1000, verbose=0)).argmax(1) == yte).mean())
    _common.emit(name, times, acc)


def w_fit_numpy(epochs):
    """`fit` with the compiled kernels off (LAYERFLOW_NUMBA=0): the NumPy paths."""
    os.environ["LAYERFLOW_NUMBA"] = "0"
    w_fit(epochs, name="layerflow fit, NumPy kernels")


def w_tape(epochs, module="layerflow", name="layerflow tape loop"):
    import numpy as np

    tf = importlib.import_module(module)
    xtr, ytr, xte, yte = _data()
    net = _keras_lenet(tf)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=LR)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(epochs):
        t = time.perf_counter()
        order = rng.permutation(len(xtr))
        for s in range(0, len(xtr), BATCH):
            idx = order[s : s + BATCH]
            with tf.GradientTape() as tape:
                l = loss(ytr[idx], net(xtr[idx]))
            params = net.trainable_variables
            opt.apply_gradients(zip(tape.gradient(l, params), params))
        times.append(time.perf_counter() - t)
    # In batches, as predict does: one 10,000-image forward would dominate the peak RSS.
    pred = np.concatenate([np.asarray(net(xte[i : i + 1000])) for i in range(0, len(xte), 1000)])
    acc = float((pred.argmax(1) == yte).mean())
    _common.emit(name, times, acc)


def w_tf_fit(epochs):
    w_fit(epochs, "tensorflow", "TF/Keras fit")


def w_torch(epochs):
    import numpy as np
    import torch
    from torch import nn

    xtr, ytr, xte, yte = _data()
    net = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2),
        nn.Sigmoid(),
        nn.AvgPool2d(2, 2),
        nn.Conv2d(6, 16, 5),
        nn.Sigmoid(),
        nn.AvgPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(400, 120),
        nn.Sigmoid(),
        nn.Linear(120, 84),
        nn.Sigmoid(),
        nn.Linear(84, 10),
    )
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    lossf = nn.CrossEntropyLoss()
    xt = torch.from_numpy(xtr.transpose(0, 3, 1, 2).copy())
    yt = torch.from_numpy(ytr)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(epochs):
        t = time.perf_counter()
        order = torch.from_numpy(rng.permutation(len(xt)))
        for s in range(0, len(xt), BATCH):
            idx = order[s : s + BATCH]
            opt.zero_grad()
            lossf(net(xt[idx]), yt[idx]).backward()
            opt.step()
        times.append(time.perf_counter() - t)
    with torch.no_grad():
        pred = net(torch.from_numpy(xte.transpose(0, 3, 1, 2).copy())).argmax(1).numpy()
    _common.emit("PyTorch eager", times, float((pred == yte).mean()))


def floor() -> str:
    """The epoch's floor on this machine: its GEMMs alone (forward, filter and input
    gradients of both convolutions as im2col GEMMs, the Dense layers' three GEMMs each), and
    the memory traffic of building the im2col patches (written once, read once, forward and
    backward) at this machine's copy bandwidth."""
    import numpy as np

    rng = np.random.default_rng(0)
    steps = -(-60000 // BATCH)
    # (M, K, N) of each GEMM of one step: conv1 (1->6, 5x5 on 28x28, no input gradient),
    # conv2 (6->16, 5x5 on 14x14), dense 400->120->84->10 (no input gradient for the first).
    p1, p2 = BATCH * 28 * 28, BATCH * 10 * 10
    gemms = [(6, 25, p1), (25, p1, 6), (16, 150, p2), (150, p2, 16), (150, 16, p2)]
    for i, o in ((400, 120), (120, 84), (84, 10)):
        gemms += [(BATCH, i, o), (i, BATCH, o)] + ([(BATCH, o, i)] if i != 400 else [])

    def best(f, reps=5):
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        return min(ts)

    try:  # each GEMM at its best thread count, one or all (what the machine's load allows)
        from threadpoolctl import threadpool_info, threadpool_limits

        counts = sorted({1, max(i["num_threads"] for i in threadpool_info())})
    except ImportError:
        threadpool_limits, counts = None, [None]
    gemm = 0.0
    for m, k, n in gemms:
        a = rng.random((m, k), dtype=np.float32)
        b = rng.random((k, n), dtype=np.float32)
        times = []
        for c in counts:
            if threadpool_limits is None:
                times.append(best(lambda a=a, b=b: a @ b))
                continue
            with threadpool_limits(c, user_api="blas"):
                times.append(best(lambda a=a, b=b: a @ b))
        gemm += min(times)
    patches = 4 * (25 * p1 + 150 * p2)  # bytes of the two patch matrices
    src = rng.random(patches // 4, dtype=np.float32)
    dst = np.empty_like(src)
    bandwidth = patches / best(lambda: np.copyto(dst, src))
    traffic = 2 * 2 * patches  # written and read, forward and backward
    return (f"floor: GEMMs alone {gemm * steps:.2f} s/epoch; im2col patches "
            f"{patches / 2**20:.0f} MiB/step, their traffic {traffic * steps / bandwidth:.2f} "
            f"s/epoch at {bandwidth / 1e9:.1f} GB/s copy bandwidth")  # fmt: skip


WORKERS = [
    ("layerflow_fit", "self", w_fit),
    ("layerflow_fit_numpy", "self", w_fit_numpy),
    ("layerflow_tape", "self", w_tape),
    ("tf_fit", "peers", w_tf_fit),
    ("torch", "peers", w_torch),
]


def jit_pairs(rounds: int = 4, images: int = 7680) -> None:
    """`fit` on `images` training images with the compiled kernels on and off, epochs
    alternating in this process at one BLAS thread; prints process CPU (and wall) ms per
    step, the medians of `rounds` epochs each (a loaded machine distorts CPU time least)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    import layerflow as tf
    from layerflow._src.backend import jit

    xtr, ytr, _, _ = _data()
    xtr, ytr = xtr[:images], ytr[:images]
    steps = -(-images // BATCH)
    net = _keras_lenet(tf)
    net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=LR),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    res: dict = {True: [], False: []}
    with threadpool_limits(1):
        for on in (True, False):  # traces, compiles the kernels
            with jit.use(on):
                net.fit(xtr[:1024], ytr[:1024], batch_size=BATCH, epochs=1, verbose=0)
        for _ in range(rounds):
            for on in (False, True):
                with jit.use(on):
                    c, w = time.process_time(), time.perf_counter()
                    net.fit(xtr, ytr, batch_size=BATCH, epochs=1, verbose=0)
                    res[on].append((time.process_time() - c, time.perf_counter() - w))
    print(_common.machine_load())
    for on, name in ((False, "NumPy paths"), (True, "compiled kernels")):
        cpu, wall = (np.median([r[k] for r in res[on]]) / steps * 1e3 for k in (0, 1))
        print(f"layerflow fit, {name}: {cpu:.2f} ms CPU, {wall:.2f} ms wall per step")


def main() -> None:
    if "--jit-pairs" in sys.argv:  # fit with the kernels on and off, alternating here
        jit_pairs()
        return
    _common.main(
        __file__, __doc__, WORKERS, default_epochs=2, timeout=3600, baseline="TF/Keras fit",
        title=f"LeNet on Fashion-MNIST, {{epochs}} epochs each, batch {BATCH}",
    )  # fmt: skip
    if "--worker" not in sys.argv:
        print(floor())


if __name__ == "__main__":
    main()
