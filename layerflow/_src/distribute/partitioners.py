"""`tf.distribute.experimental.partitioners`: how many shards a variable is split into.

A partitioner is called with the variable's `TensorShape` and dtype (and `axis`) and returns
the number of partitions per axis, TF's formula: only `axis` is split (every other entry is
1). Strings count `bytes_per_string` bytes per element.
"""

from __future__ import annotations

import math
from typing import Any

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape


def _checked(shape: Any, axis: int, who: str) -> TensorShape:
    shape = TensorShape(shape)
    if shape.rank is None or not shape.is_fully_defined():
        raise ValueError(f"{who}: the shape must be fully defined, got {shape}.")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"{who}: cannot partition a variable of shape {shape} along axis {axis}.")
    return shape


def _element_bytes(dtype: Any, bytes_per_string: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    return bytes_per_string if dtype == dtypes.string else dtype.size


def _positive(name: str, value: Any) -> None:
    if value < 1:
        raise ValueError(f"Argument `{name}` must be positive. Received: {value}")


class Partitioner:
    """Base class: `partitioner(shape, dtype, axis=0)` gives the partitions per axis."""

    def __call__(self, shape: Any, dtype: Any, axis: int = 0) -> list[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__.")


class FixedShardsPartitioner(Partitioner):
    """`num_shards` shards (fewer when the axis is shorter).

    >>> FixedShardsPartitioner(num_shards=2)(TensorShape([10, 3]), dtypes.float32)
    [2, 1]
    """

    def __init__(self, num_shards: int) -> None:
        _positive("num_shards", num_shards)
        self._num_shards = num_shards

    def __call__(self, shape: Any, dtype: Any, axis: int = 0) -> list[int]:
        shape = _checked(shape, axis, "FixedShardsPartitioner")
        result = [1] * len(shape)
        result[axis] = min(self._num_shards, shape[axis])
        return result


class MinSizePartitioner(Partitioner):
    """As many shards as keep each at least `min_shard_bytes`, at most `max_shards`.

    >>> MinSizePartitioner(min_shard_bytes=4, max_shards=2)(TensorShape([6, 1]), dtypes.float32)
    [2, 1]
    """

    def __init__(
        self, min_shard_bytes: int = 256 << 10, max_shards: int = 1, bytes_per_string: int = 16
    ) -> None:
        _positive("min_shard_bytes", min_shard_bytes)
        _positive("max_shards", max_shards)
        _positive("bytes_per_string", bytes_per_string)
        self._min_shard_bytes = min_shard_bytes
        self._max_shards = max_shards
        self._bytes_per_string = bytes_per_string

    def __call__(self, shape: Any, dtype: Any, axis: int = 0) -> list[int]:
        shape = _checked(shape, axis, "MinSizePartitioner")
        total = shape.num_elements() * _element_bytes(dtype, self._bytes_per_string)
        result = [1] * len(shape)
        wanted = int(math.ceil(total / self._min_shard_bytes))
        result[axis] = max(1, min(shape[axis], self._max_shards, wanted))
        return result


class MaxSizePartitioner(Partitioner):
    """As few shards as keep each at most `max_shard_bytes` (a slice along `axis` is never
    split), at most `max_shards`.

    >>> MaxSizePartitioner(max_shard_bytes=8)(TensorShape([6, 1]), dtypes.float32)
    [3, 1]
    """

    def __init__(
        self, max_shard_bytes: int, max_shards: int | None = None, bytes_per_string: int = 16
    ) -> None:
        _positive("max_shard_bytes", max_shard_bytes)
        if max_shards is not None:
            _positive("max_shards", max_shards)
        _positive("bytes_per_string", bytes_per_string)
        self._max_shard_bytes = max_shard_bytes
        self._max_shards = max_shards
        self._bytes_per_string = bytes_per_string

    def __call__(self, shape: Any, dtype: Any, axis: int = 0) -> list[int]:
        shape = _checked(shape, axis, "MaxSizePartitioner")
        element = _element_bytes(dtype, self._bytes_per_string)
        if shape[axis] == 0:
            raise ValueError(f"MaxSizePartitioner: axis {axis} of shape {shape} is empty.")
        bytes_per_slice = shape.num_elements() / shape[axis] * element
        slices_per_shard = max(1, math.floor(self._max_shard_bytes / bytes_per_slice))
        shards = int(math.ceil(shape[axis] / slices_per_shard))
        if self._max_shards:
            shards = min(self._max_shards, shards)
        result = [1] * len(shape)
        result[axis] = shards
        return result
