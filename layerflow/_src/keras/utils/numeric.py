"""`tf.keras.utils` numeric helpers: one-hot labels, normalization, seeding everything."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import random_ops


def _host(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if isinstance(x, TensorLike) else x)


def to_categorical(y: Any, num_classes: int | None = None, dtype: Any = "float32") -> np.ndarray:
    """One-hot rows for integer class labels (a NumPy array, as in Keras 2).

    >>> import layerflow as tf
    >>> tf.keras.utils.to_categorical([0, 2], num_classes=3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    y = _host(y)
    if y.size and not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise ValueError(f"to_categorical needs integer class labels, got dtype {y.dtype}.")
    y = y.astype(np.int64)
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]  # Keras drops a trailing axis of size 1
    y = y.ravel()
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical: labels must be >= 0, got {int(y.min())}.")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and int(y.max()) >= num_classes:
        raise ValueError(
            f"to_categorical: label {int(y.max())} is out of range for num_classes={num_classes}; "
            f"labels must lie in [0, {num_classes})."
        )
    dt = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
    out = np.zeros((y.size, num_classes), dtype=dt)
    out[np.arange(y.size), y] = 1
    return out.reshape(shape + (num_classes,))


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """Scale slices along `axis` to unit `order`-norm (zero slices stay zero).

    >>> import layerflow as tf
    >>> tf.keras.utils.normalize([[3.0, 4.0]])
    array([[0.6, 0.8]])
    """
    x = _host(x)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


def set_random_seed(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator and `tf.random` at once.

    >>> import layerflow as tf
    >>> tf.keras.utils.set_random_seed(0); a = tf.random.uniform((2,))
    >>> tf.keras.utils.set_random_seed(0); b = tf.random.uniform((2,))
    >>> bool((a.numpy() == b.numpy()).all())
    True
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"set_random_seed expects an int, got {seed!r} ({type(seed).__name__}).")
    random.seed(int(seed))
    np.random.seed(int(seed) % (2**32))
    random_ops.set_seed(int(seed))


def to_ordinal(y: Any, num_classes: int | None = None, dtype: Any = "float32") -> np.ndarray:
    """Ordinal-regression rows for integer class labels: class k has its first k entries 1.

    A trailing dimension of 1 is dropped, as in Keras.

    >>> import layerflow as tf
    >>> tf.keras.utils.to_ordinal([0, 2], num_classes=3)
    array([[0., 0.],
           [1., 1.]], dtype=float32)
    """
    y = np.array(_host(y), dtype="int")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = tuple(shape[:-1])
    y = y.reshape(-1)
    if not num_classes:
        num_classes = int(np.max(y)) + 1 if y.size else 1
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(
            f"to_ordinal: labels must lie in [0, {num_classes}), got values from {y.min()} to "
            f"{y.max()}. Pass the right num_classes."
        )
    ordinal = (np.arange(num_classes - 1)[None, :] < y[:, None]).astype(dtype)
    return ordinal.reshape(tuple(shape) + (num_classes - 1,))
