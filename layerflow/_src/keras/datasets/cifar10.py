"""`tf.keras.datasets.cifar10`: 60,000 32x32 colour images in 10 classes."""

from __future__ import annotations

import os

import numpy as np

from layerflow._src.keras.datasets import cifar, keras_cache

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"


def load_data(cache_dir: str | None = None) -> tuple[tuple, tuple]:
    """CIFAR-10 as `(x_train, y_train), (x_test, y_test)`, uint8.

    x: (50000, 32, 32, 3) and (10000, 32, 32, 3) (channels_last); y: (n, 1), labels 0-9.
    Read from Keras's cache (`$KERAS_HOME/datasets/`, `~/.keras/datasets/`) when there,
    else downloaded (SHA-256 checked) into it.

    >>> import layerflow as tf
    >>> (x_train, y_train), _ = tf.keras.datasets.cifar10.load_data()  # doctest: +SKIP
    """
    path = keras_cache.fetch("cifar-10-batches-py", ORIGIN, SHA256, cache_dir, untar=True)
    xs, ys = [], []
    for i in range(1, 6):
        data, labels = cifar.load_batch(os.path.join(path, f"data_batch_{i}"))
        xs.append(data)
        ys.append(np.asarray(labels, dtype="uint8"))
    x_test, y_test = cifar.load_batch(os.path.join(path, "test_batch"))
    x_train, y_train = np.concatenate(xs), np.concatenate(ys)
    y_train = y_train.reshape(len(y_train), 1)
    y_test = np.asarray(y_test, dtype="uint8").reshape(len(y_test), 1)
    return (cifar.channels(x_train), y_train), (cifar.channels(x_test), y_test)
