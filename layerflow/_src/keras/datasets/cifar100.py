"""`tf.keras.datasets.cifar100`: 60,000 32x32 colour images in 100 fine / 20 coarse classes."""

from __future__ import annotations

import os

import numpy as np

from layerflow._src.keras.datasets import cifar, keras_cache

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
SHA256 = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"


def load_data(label_mode: str = "fine", cache_dir: str | None = None) -> tuple[tuple, tuple]:
    """CIFAR-100 as `(x_train, y_train), (x_test, y_test)`; `label_mode` "fine" or "coarse".

    >>> import layerflow as tf
    >>> _, (x_test, y_test) = tf.keras.datasets.cifar100.load_data("coarse")  # doctest: +SKIP
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError(
            f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.'
        )
    path = keras_cache.fetch("cifar-100-python", ORIGIN, SHA256, cache_dir, untar=True)
    key = label_mode + "_labels"
    x_train, y_train = cifar.load_batch(os.path.join(path, "train"), label_key=key)
    x_test, y_test = cifar.load_batch(os.path.join(path, "test"), label_key=key)
    y_train = np.asarray(y_train).reshape(len(y_train), 1)
    y_test = np.asarray(y_test).reshape(len(y_test), 1)
    return (cifar.channels(x_train), y_train), (cifar.channels(x_test), y_test)
