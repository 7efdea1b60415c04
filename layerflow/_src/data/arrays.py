"""In-memory arrays as a source of batches: what `Model.fit(x, y)` slices its batches from.

A batch source holds, for each input, the array behind a tensor (no copy) or a host NumPy
array; `rows` slices a batch and returns it as a tensor on the device it computes on. This is
the one place above `backend/` where Keras's data feeding touches arrays (a service layer, as
the rest of `data/`); `keras/` only passes these arrays around and reads their shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike


def source_array(x: Any) -> Any:
    """The array batches are sliced from: a tensor's own array (no copy), or `x` as a NumPy
    array (float64 becomes float32, as Keras feeds it; text becomes a string tensor's bytes, as
    TF feeds a NumPy array of str to `TextVectorization`/`StringLookup`)."""
    if isinstance(x, TensorLike):
        return x._data
    a = np.asarray(x)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    if a.dtype.kind in "US" or a.dtype == object:
        try:
            return convert_to_tensor(a)._data  # strings as tf.string (bytes), on the host
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"Training data must be numeric or string arrays, got an array of dtype "
                f"{a.dtype} that is neither ({e}). Convert it to numbers or strings first."
            ) from None
    return a


def feed_device() -> backend.Device:
    """The device batches go to: the current device when the source is made."""
    return backend.current_device()


def rows(a: Any, idx: Any, device: backend.Device) -> Tensor:
    """`a[idx]` as a tensor: host rows copied to `device`, device rows kept where they are."""
    part = a[idx]
    if isinstance(part, np.ndarray) and part.dtype.kind not in "SO":  # strings stay on the host
        return Tensor(backend.to_device(part, device), device)
    return Tensor(part, backend.array_device(part))


def host_rows(a: np.ndarray, idx: Any, device: backend.Device) -> Tensor:
    """`rows(a, idx, device)` for a host array of numbers and a CPU `device`: a slice is a
    view, an index array one `np.take` (the rows of `a[idx]`, ~15% faster for a batch of
    images)."""
    part = a[idx] if type(idx) is slice else np.take(a, idx, axis=0)
    return Tensor(part, device)


def to_tensor(a: Any) -> Any:
    """`a` as a tensor on the current device (a tensor or None unchanged)."""
    if a is None or isinstance(a, TensorLike):
        return a
    device = backend.current_device()
    return Tensor(backend.to_device(source_array(a), device), device)


def host(a: Any) -> np.ndarray:
    """A NumPy view or copy of a source array or tensor, for host-side bookkeeping."""
    if isinstance(a, TensorLike):
        return a.numpy()
    return np.asarray(backend.to_host(a))
