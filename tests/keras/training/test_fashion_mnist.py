"""The seed's MLP on the real Fashion-MNIST reaches >= 0.85 test accuracy after 10 epochs,
trained both with the book's GradientTape loop (train_epoch_ch3) and with compile/fit."""

import os
import pathlib

import numpy as np
import pytest

import layerflow as tf


@pytest.fixture(scope="module")
def data():
    root = os.environ.get("LAYERFLOW_DATASETS")
    if not root or not (pathlib.Path(root) / "fashion-mnist").is_dir():
        pytest.skip("Fashion-MNIST files not found; set LAYERFLOW_DATASETS=../shared/data")
    (xtr, ytr), (xte, yte) = tf.keras.datasets.fashion_mnist.load_data()
    return (xtr / 255.0).astype(np.float32), ytr, (xte / 255.0).astype(np.float32), yte


def _net():
    return tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(10),
    ])  # fmt: skip


def _accuracy(net, x, y):
    logits = net(x).numpy()
    return float((logits.argmax(1) == y).mean())


def test_book_gradient_tape_loop(data):
    xtr, ytr, xte, yte = data
    tf.random.set_seed(0)
    net = _net()
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    trainer = tf.keras.optimizers.SGD(learning_rate=0.1)
    assert isinstance(trainer, tf.keras.optimizers.Optimizer)
    train_iter = tf.data.Dataset.from_tensor_slices((xtr, ytr)).shuffle(60000).batch(256)
    for _ in range(10):
        for X, y in train_iter:
            with tf.GradientTape() as tape:
                y_hat = net(X)
                l = loss(y, y_hat)
            params = net.trainable_variables
            grads = tape.gradient(l, params)
            trainer.apply_gradients(zip(grads, params))
    acc = _accuracy(net, xte, yte)
    assert acc >= 0.85, acc


def test_compile_fit(data):
    xtr, ytr, xte, yte = data
    tf.random.set_seed(1)
    net = _net()
    net.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])  # fmt: skip
    h = net.fit(xtr, ytr, batch_size=256, epochs=10, verbose=0)
    assert h.history["accuracy"][-1] > h.history["accuracy"][0]
    _, acc = net.evaluate(xte, yte, batch_size=256, verbose=0)
    assert acc >= 0.85, acc
    assert acc == pytest.approx(_accuracy(net, xte, yte), abs=1e-6)
