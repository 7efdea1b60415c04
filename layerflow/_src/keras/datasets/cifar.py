"""Reading CIFAR batch files (Python pickles) safely; shared by `cifar10` and `cifar100`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerflow._src.keras.datasets import safe_load
from layerflow._src.keras.engine import backend_config


def load_batch(fpath: str | os.PathLike, label_key: str = "labels") -> tuple[np.ndarray, Any]:
    """`(data, labels)` of one CIFAR batch: data uint8 of shape (n, 3, 32, 32), labels a list.

    The pickle goes through `safe_load.RestrictedUnpickler`, and its contents are checked.
    """
    raw = safe_load.load_pickle(fpath, encoding="bytes")
    if not isinstance(raw, dict):
        raise ValueError(f"{fpath} is not a CIFAR batch: it holds a {type(raw).__name__}.")
    d = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in raw.items()}
    if "data" not in d or label_key not in d:
        raise ValueError(
            f"{fpath} is not a CIFAR batch with {label_key!r}: it holds the keys {sorted(d)}."
        )
    data, labels = d["data"], d[label_key]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2:
        raise ValueError(f"{fpath}: 'data' must be a 2-D uint8 array, got {_describe(data)}.")
    if data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"{fpath}: 'data' rows must hold 3072 bytes, got shape {data.shape}.")
    labels_arr = np.asarray(labels)
    if labels_arr.shape != (data.shape[0],) or labels_arr.dtype.kind not in "iu":
        raise ValueError(
            f"{fpath}: {label_key!r} must hold {data.shape[0]} integers, got "
            f"{_describe(labels_arr)}."
        )
    if labels_arr.size and (labels_arr.min() < 0 or labels_arr.max() > 255):
        raise ValueError(f"{fpath}: {label_key!r} must lie in 0..255.")
    return data.reshape(data.shape[0], 3, 32, 32), labels


def _describe(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    return f"a {type(a).__name__}"


def channels(x: np.ndarray) -> np.ndarray:
    """(n, 3, 32, 32) -> (n, 32, 32, 3) when the image data format is channels_last."""
    if backend_config.image_data_format() == "channels_last":
        return x.transpose(0, 2, 3, 1)
    return x
