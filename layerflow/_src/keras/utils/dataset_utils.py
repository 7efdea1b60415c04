"""`split_dataset` and `timeseries_dataset_from_array` (Keras 2 semantics, tf.data results)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from layerflow._src.data.batching import BatchDataset
from layerflow._src.data.dataset import Dataset
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import gather_ops


def _host(v: Any) -> np.ndarray:
    return v.numpy() if isinstance(v, TensorLike) else np.asarray(v)


def _batch_size(dataset: Dataset) -> int | None:
    d: Any = dataset
    while d is not None:
        if isinstance(d, BatchDataset):
            return d._batch_size
        d = getattr(d, "_input", None)
    return None


def _samples(dataset: Any) -> tuple[list, Any]:
    """The dataset as a list of samples, and how to rebuild one structure from the list."""
    if isinstance(dataset, Dataset):
        source = dataset.unbatch() if _batch_size(dataset) is not None else dataset
        samples = list(source.as_numpy_iterator())
        return samples, "dataset"
    if isinstance(dataset, np.ndarray | TensorLike):
        arr = _host(dataset)
        return list(arr), "array"
    if isinstance(dataset, list | tuple):
        arrays = [_host(a) for a in dataset]
        if not arrays:
            return [], type(dataset)
        lengths = {len(a) for a in arrays}
        if len(lengths) != 1:
            raise ValueError(
                "split_dataset: every array in `dataset` must have the same number of samples, "
                f"got lengths {[len(a) for a in arrays]}."
            )
        return list(zip(*arrays, strict=True)), type(dataset)
    raise TypeError(
        "The `dataset` argument must be either a `tf.data.Dataset` object or a list/tuple of "
        f"arrays. Received: dataset={dataset!r} of type {type(dataset)}"
    )


def _restore(samples: list, kind: Any) -> Any:
    if not samples:
        raise ValueError("split_dataset: a split came out empty.")
    if kind == "array":
        return np.stack(samples)
    first = samples[0]
    if isinstance(first, tuple):
        columns = tuple(np.stack(c) for c in zip(*samples, strict=True))
        return columns if kind is not list else list(columns)
    if isinstance(first, dict):
        return {k: np.stack([s[k] for s in samples]) for k in first}
    return np.stack(samples)


def _sizes(left: Any, right: Any, total: int) -> tuple[int, int]:
    for value, side in ((left, "left_size"), (right, "right_size")):
        if value is not None and type(value) not in (int, float):
            raise TypeError(
                f"Invalid `{side}` Type. Expected: int or float or None, Received: "
                f"type({side})={type(value)}."
            )
    if left == 0 and right == 0:
        raise ValueError(
            "Both `left_size` and `right_size` are zero. At least one of the split sizes must "
            "be non-zero."
        )
    for value, side in ((left, "left_size"), (right, "right_size")):
        if (isinstance(value, int) and (value <= 0 or value >= total)) or (
            isinstance(value, float) and (value <= 0 or value >= 1)
        ):
            raise ValueError(
                f"`{side}` should be either a positive integer smaller than {total}, or a "
                f"float within the range `[0, 1]`. Received: {side}={value}"
            )
    if isinstance(left, float) and isinstance(right, float) and left + right > 1:
        raise ValueError(
            "The sum of `left_size` and `right_size` is greater than 1. It must be less than "
            "or equal to 1."
        )
    lsize = round(left * total) if isinstance(left, float) else left
    rsize = round(right * total) if isinstance(right, float) else right
    if lsize is None:
        lsize = total - rsize
    elif rsize is None:
        rsize = total - lsize
    if lsize + rsize > total:
        raise ValueError(
            f"The sum of `left_size` and `right_size` should be smaller than the {total}. "
            f"Received: left_size + right_size = {lsize + rsize} and total_length = {total}"
        )
    for split, side in ((lsize, "left"), (rsize, "right")):
        if split == 0:
            raise ValueError(
                f"With `dataset` of length={total}, `left_size`={left} and `right_size`="
                f"{right}. Resulting {side} side dataset split will be empty. Adjust any of the "
                "aforementioned parameters"
            )
    return int(lsize), int(rsize)


def split_dataset(dataset: Any, left_size: int | float | None = None,
                  right_size: int | float | None = None, shuffle: bool = False,
                  seed: int | None = None) -> tuple[Dataset, Dataset]:  # fmt: skip
    """Split a `tf.data.Dataset`, an array, or a list/tuple of arrays into two datasets.

    Sizes are sample counts (int) or fractions (float in (0, 1)); a missing one is the rest.
    `shuffle=True` shuffles the samples first (reproducibly with `seed`). A batched dataset's
    splits are batched the same way.

    >>> import numpy as np, layerflow as tf
    >>> left, right = tf.keras.utils.split_dataset(np.arange(10), left_size=0.8)
    >>> int(left.cardinality()), int(right.cardinality())
    (8, 2)
    """
    if left_size is None and right_size is None:
        raise ValueError(
            "At least one of the `left_size` or `right_size` must be specified. Received: "
            "left_size=None and right_size=None"
        )
    samples, kind = _samples(dataset)
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.Random(seed).shuffle(samples)  # Keras's order, without reseeding `random`
    lsize, rsize = _sizes(left_size, right_size, len(samples))
    left = Dataset.from_tensor_slices(_restore(samples[:lsize], kind))
    right = Dataset.from_tensor_slices(_restore(samples[-rsize:], kind))
    batch = _batch_size(dataset) if isinstance(dataset, Dataset) else None
    if batch is not None:
        left, right = left.batch(batch), right.batch(batch)
    return left, right


def _positive_int(value: Any, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")


def timeseries_dataset_from_array(data: Any, targets: Any, sequence_length: int,
                                  sequence_stride: int = 1, sampling_rate: int = 1,
                                  batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> Dataset:  # fmt: skip
    """Sliding windows over `data` as a dataset of `(windows, targets)` (or windows alone).

    Window i holds `data[start_index + p_i + k * sampling_rate]` for k < `sequence_length`,
    with window starts `p_i = i * sequence_stride`; its target is `targets[start_index + p_i]`.
    Windows are batched by `batch_size` (None: unbatched); `shuffle` shuffles the windows
    (reproducibly with `seed`).

    >>> import numpy as np, layerflow as tf
    >>> ds = tf.keras.utils.timeseries_dataset_from_array(np.arange(6), None, 3, batch_size=2)
    >>> [b.tolist() for b in ds.as_numpy_iterator()]
    [[[0, 1, 2], [1, 2, 3]], [[2, 3, 4], [3, 4, 5]]]
    """
    data_np = _host(data)
    n = len(data_np)
    if start_index is not None:
        if not isinstance(start_index, int | np.integer) or start_index < 0 or start_index >= n:
            raise ValueError(
                f"`start_index` must be 0 or greater and smaller than `data` length ({n}). "
                f"Received: start_index={start_index}"
            )
    if end_index is not None:
        if not isinstance(end_index, int | np.integer) or end_index < 0 or end_index > n:
            raise ValueError(
                "`end_index` must be 0 or greater and not greater than `data` length "
                f"({n}). Received: end_index={end_index}"
            )
        if start_index is not None and start_index >= end_index:
            raise ValueError(
                "`start_index` must be smaller than `end_index`. Received: "
                f"start_index={start_index}, end_index={end_index}"
            )
    _positive_int(sequence_length, "sequence_length")
    _positive_int(sampling_rate, "sampling_rate")
    _positive_int(sequence_stride, "sequence_stride")
    _positive_int(batch_size, "batch_size", allow_none=True)
    targets_np = None if targets is None else _host(targets)
    start = 0 if start_index is None else int(start_index)
    end = n if end_index is None else int(end_index)
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets_np is not None:
        num_seqs = min(num_seqs, len(targets_np))
    positions = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=np.int64)
    if shuffle:
        if seed is None:
            seed = int(np.random.randint(1e6))
        np.random.RandomState(seed).shuffle(positions)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
    window_data = convert_to_tensor(data_np[start:end])
    target_data = None if targets_np is None else convert_to_tensor(targets_np[start:end])

    def windows(p: Any) -> Any:
        p = _host(p).astype(np.int64)
        idx = convert_to_tensor(p[..., None] + offsets)
        x = gather_ops.gather(window_data, idx)
        if target_data is None:
            return x
        return x, gather_ops.gather(target_data, convert_to_tensor(p))

    ds = Dataset.from_tensor_slices(positions)
    if batch_size is not None:
        ds = ds.batch(int(batch_size))
    return ds.map(windows)
