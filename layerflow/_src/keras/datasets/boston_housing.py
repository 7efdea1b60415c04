"""`tf.keras.datasets.boston_housing`: 506 houses, 13 attributes, median price (k$)."""

from __future__ import annotations

import numpy as np

from layerflow._src.keras.datasets import keras_cache, safe_load

SHA256 = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path: str = "boston_housing.npz", test_split: float = 0.2, seed: int = 113,
              cache_dir: str | None = None) -> tuple[tuple, tuple]:  # fmt: skip
    """`(x_train, y_train), (x_test, y_test)`: x (n, 13) float64, y (n,) float64, shuffled with
    `seed` and split by `test_split` as Keras does.

    >>> import layerflow as tf
    >>> (x_train, y_train), _ = tf.keras.datasets.boston_housing.load_data()  # doctest: +SKIP
    """
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1), got {test_split}.")
    origin = keras_cache.BASE_URL + "boston_housing.npz"
    fpath = keras_cache.fetch(path, origin, SHA256, cache_dir)
    arrays = safe_load.load_npz(fpath)
    safe_load.require(arrays, ("x", "y"), fpath)
    x, y = arrays["x"], arrays["y"]
    if x.dtype.hasobject or y.dtype.hasobject or x.ndim != 2 or y.shape != x.shape[:1]:
        raise ValueError(
            f"{fpath}: expected x of shape (n, 13) and y of shape (n,), got {x.shape} and "
            f"{y.shape}."
        )
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x))
    rng.shuffle(indices)
    x, y = x[indices], y[indices]
    split = int(len(x) * (1 - test_split))
    return (np.array(x[:split]), np.array(y[:split])), (np.array(x[split:]), np.array(y[split:]))
