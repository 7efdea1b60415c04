"""Seconds per epoch of the seed's MLP on Fashion-MNIST, layerflow beside its peers.

The MLP (Flatten, Dense(256, relu), Dense(10)), SGD lr 0.1, batch 256, sparse softmax
cross-entropy from logits. Every run shuffles with a fresh permutation per epoch and slices
batches from in-memory float32 arrays, so the runs differ only in the framework.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/mlp_epoch.py [--epochs 4]
"""

from __future__ import annotations

import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import _common  # noqa: E402

BATCH, LR = 256, 0.1


def _tick():
    return time.perf_counter(), time.process_time()


def _tock(start):
    """Wall seconds since `_tick`; the process's CPU seconds (all its threads) go to
    `_common.CPU`, the figure that a loaded machine distorts least."""
    _common.CPU.append(time.process_time() - start[1])
    return time.perf_counter() - start[0]


def _epochs(step, x, y, epochs, rng, each=None):
    import numpy as np

    times = []
    n = len(x)
    for _ in range(epochs):
        t = _tick()
        order = rng.permutation(n)
        for s in range(0, n, BATCH):
            idx = order[s : s + BATCH]
            step(x[idx], y[idx])
        times.append(_tock(t))
    del np
    return times


def w_numpy(epochs):
    import numpy as np

    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    xtr, xte = xtr.reshape(-1, 784), xte.reshape(-1, 784)
    rng = np.random.default_rng(0)
    lim1, lim2 = np.sqrt(6 / (784 + 256)), np.sqrt(6 / (256 + 10))
    W1 = rng.uniform(-lim1, lim1, (784, 256)).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    W2 = rng.uniform(-lim2, lim2, (256, 10)).astype(np.float32)
    b2 = np.zeros(10, np.float32)

    def step(X, y):
        h = X @ W1
        h += b1
        np.maximum(h, 0, out=h)
        z = h @ W2
        z += b2
        z -= z.max(1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(1, keepdims=True)
        z[np.arange(len(y)), y] -= 1
        z /= len(y)
        gW2 = h.T @ z
        gb2 = z.sum(0)
        dh = z @ W2.T
        dh *= h > 0
        gW1 = X.T @ dh
        gb1 = dh.sum(0)
        for p, g in ((W1, gW1), (b1, gb1), (W2, gW2), (b2, gb2)):
            g *= LR
            p -= g

    times = _epochs(step, xtr, ytr, epochs, rng)
    acc = float(((np.maximum(xte @ W1 + b1, 0) @ W2 + b2).argmax(1) == yte).mean())
    _common.emit("numpy (hand-written)", times, acc)


def w_gemm_floor(epochs):
    """The epoch's matrix products alone (NumPy's BLAS, outputs preallocated): the floor that
    no framework running these GEMMs on this BLAS can go under. Per batch: the two forward
    products, and the backward's three (the first layer's input gradient is never needed)."""
    import numpy as np

    xtr, _, _, _ = _common.load_fashion_mnist()
    n = len(xtr)
    rng = np.random.default_rng(0)
    W1 = rng.standard_normal((784, 256)).astype(np.float32)
    W2 = rng.standard_normal((256, 10)).astype(np.float32)
    shapes = {min(BATCH, n - s) for s in range(0, n, BATCH)}
    bufs = {}
    for m in shapes:
        X = np.ascontiguousarray(xtr[:m].reshape(m, 784))
        bufs[m] = (X, *(np.empty(s, np.float32) for s in [(m, 256), (m, 10), (m, 256)]))
    g1, g2 = np.empty((784, 256), np.float32), np.empty((256, 10), np.float32)
    times = []
    for _ in range(epochs):
        t = _tick()
        for s in range(0, n, BATCH):
            X, h, z, dh = bufs[min(BATCH, n - s)]
            np.matmul(X, W1, out=h)
            np.matmul(h, W2, out=z)
            np.matmul(z, W2.T, out=dh)
            np.matmul(h.T, z, out=g2)
            np.matmul(X.T, dh, out=g1)
        times.append(_tock(t))
    _common.emit("GEMM-only floor", times, float("nan"))


def _lf_model(tf):
    return tf.keras.models.Sequential(
        [
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(256, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )


def w_layerflow_tape(epochs, tf_module="layerflow", name="layerflow tape loop"):
    import importlib

    import numpy as np

    tf = importlib.import_module(tf_module)
    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    net = _lf_model(tf)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=LR)

    def step(X, y):
        with tf.GradientTape() as tape:
            l = loss(y, net(X))
        params = net.trainable_variables
        opt.apply_gradients(zip(tape.gradient(l, params), params))

    times = _epochs(step, xtr, ytr, epochs, np.random.default_rng(0))
    acc = float((np.asarray(net(xte)).argmax(1) == yte).mean())
    _common.emit(name, times, acc)


def w_layerflow_function(epochs):
    """The tape loop as a `tf.function`; prints the first call (trace + run) beside the epochs."""
    import numpy as np

    import layerflow as tf

    # The optimizer's update is traced into the program (its kernels and variable writes are
    # steps of the plan), as in a compiled `fit`; it used to be forced into one host step here
    # (~0.07 ms more per step).
    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    net = _lf_model(tf)
    net(xtr[:1])  # built outside, as the eager loop's first step does
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=LR)

    @tf.function
    def step(X, y):
        with tf.GradientTape() as tape:
            l = loss(y, net(X))
        params = net.trainable_variables
        opt.apply_gradients(zip(tape.gradient(l, params), params))

    t = time.perf_counter()
    step.get_concrete_function(
        tf.TensorSpec((BATCH, 28, 28), tf.float32), tf.TensorSpec((BATCH,), tf.as_dtype(ytr.dtype))
    )
    trace_ms = 1e3 * (time.perf_counter() - t)
    print(f"# layerflow tf.function: trace of the train step {trace_ms:.1f} ms")
    _common.NOTES.append(f"trace of the train step (first call, AutoGraph too): {trace_ms:.1f} ms")
    times = _epochs(step, xtr, ytr, epochs, np.random.default_rng(0))
    acc = float((np.asarray(net(xte)).argmax(1) == yte).mean())
    _common.emit("layerflow tf.function loop", times, acc)


def w_layerflow_fit(epochs, tf_module="layerflow", name="layerflow fit", run_eagerly=None):
    import importlib

    import numpy as np

    tf = importlib.import_module(tf_module)
    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    net = _lf_model(tf)
    net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=LR),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        run_eagerly=run_eagerly,
    )
    times = []
    for _ in range(epochs):
        t = _tick()
        net.fit(xtr, ytr, batch_size=BATCH, epochs=1, verbose=0)
        times.append(_tock(t))
    acc = float((np.asarray(net.predict(xte, verbose=0)).argmax(1) == yte).mean())
    _common.emit(name, times, acc)


def w_layerflow_fit_eager(epochs):
    """fit with compile(run_eagerly=True): the eager steps (fit's default before issue 12)."""
    w_layerflow_fit(epochs, name="layerflow fit (eager)", run_eagerly=True)


def w_tf_eager(epochs):
    w_layerflow_tape(epochs, "tensorflow", "TF eager loop")


def w_tf_fit(epochs):
    w_layerflow_fit(epochs, "tensorflow", "TF/Keras fit")


def w_tf_function(epochs):
    import numpy as np
    import tensorflow as tf

    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    net = _lf_model(tf)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(learning_rate=LR)

    @tf.function
    def step(X, y):
        with tf.GradientTape() as tape:
            l = loss(y, net(X))
        params = net.trainable_variables
        opt.apply_gradients(zip(tape.gradient(l, params), params))

    times = _epochs(step, xtr, ytr, epochs, np.random.default_rng(0))
    acc = float((np.asarray(net(xte)).argmax(1) == yte).mean())
    _common.emit("TF tf.function loop", times, acc)


def w_torch(epochs):
    import numpy as np
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    net = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    )
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    lossf = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)

    def step(X, y):
        opt.zero_grad()
        lossf(net(X), y).backward()
        opt.step()

    times = _epochs(step, xt, yt, epochs, np.random.default_rng(0))
    with torch.no_grad():
        acc = float((net(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())
    _common.emit("PyTorch eager", times, acc)


def w_jax(epochs):
    import jax
    import jax.numpy as jnp
    import numpy as np

    xtr, ytr, xte, yte = _common.load_fashion_mnist()
    xtr, xte = xtr.reshape(-1, 784), xte.reshape(-1, 784)
    rng = np.random.default_rng(0)
    lim1, lim2 = np.sqrt(6 / (784 + 256)), np.sqrt(6 / (256 + 10))
    params = [
        jnp.asarray(rng.uniform(-lim1, lim1, (784, 256)), jnp.float32),
        jnp.zeros(256, jnp.float32),
        jnp.asarray(rng.uniform(-lim2, lim2, (256, 10)), jnp.float32),
        jnp.zeros(10, jnp.float32),
    ]

    def loss(p, X, y):
        z = jnp.maximum(X @ p[0] + p[1], 0) @ p[2] + p[3]
        return -jnp.mean(jax.nn.log_softmax(z)[jnp.arange(len(y)), y])

    @jax.jit
    def update(p, X, y):
        g = jax.grad(loss)(p, X, y)
        return [a - LR * b for a, b in zip(p, g)]

    state = {"p": params}

    def step(X, y):
        state["p"] = update(state["p"], X, y)

    times = []
    n = len(xtr)
    for _ in range(epochs):
        t = _tick()
        order = rng.permutation(n)
        for s in range(0, n, BATCH):
            idx = order[s : s + BATCH]
            step(xtr[idx], ytr[idx])
        jax.block_until_ready(state["p"])
        times.append(_tock(t))
    p = state["p"]
    acc = float(
        (np.asarray(jnp.maximum(xte @ p[0] + p[1], 0) @ p[2] + p[3]).argmax(1) == yte).mean()
    )
    _common.emit("JAX jit", times, acc)


WORKERS = [
    ("numpy", "self", w_numpy),
    ("gemm_floor", "self", w_gemm_floor),
    ("layerflow_tape", "self", w_layerflow_tape),
    ("layerflow_function", "self", w_layerflow_function),
    ("layerflow_fit", "self", w_layerflow_fit),
    ("layerflow_fit_eager", "self", w_layerflow_fit_eager),
    ("tf_eager", "peers", w_tf_eager),
    ("tf_function", "peers", w_tf_function),
    ("tf_fit", "peers", w_tf_fit),
    ("torch", "peers", w_torch),
    ("jax", "peers", w_jax),
]


def main() -> None:
    _common.main(
        __file__, __doc__, WORKERS, default_epochs=4, timeout=900,
        baseline="numpy (hand-written)",
        title=f"MLP on Fashion-MNIST, {{epochs}} epochs each, batch {BATCH}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
