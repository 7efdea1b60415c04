"""`tf.experimental.DynamicRaggedShape` (what `tf.shape` of a RaggedTensor returns), in a
small form: the lengths of every dimension (a number for uniform ones, the row lengths for
ragged ones), indexing of uniform dimensions, `static_lengths`, `row_partitions`, `rank`,
`num_row_partitions`, `inner_shape`. Broadcasting between shapes is not offered.

>>> import layerflow as tf
>>> tf.shape(tf.ragged.constant([[1, 2], [3]]))
<DynamicRaggedShape lengths=[2, (2, 1)] num_row_partitions=1>
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _host


class RowPartition:
    """One row partition (`tf.experimental.RowPartition`): the row splits of a ragged level."""

    __slots__ = ("_splits", "_uniform")

    def __init__(self, splits: Any, uniform: int | None) -> None:
        self._splits = splits
        self._uniform = uniform

    # TF's factories (what StructuredTensor.partition_outer_dimension takes)
    @classmethod
    def from_row_splits(cls, row_splits: Any, validate: bool = True,
                        dtype: Any = None, dtype_hint: Any = None) -> RowPartition:  # fmt: skip
        splits = RaggedTensor.from_row_splits(np.zeros(0), row_splits, validate=False).row_splits
        s = _host(splits)
        if validate and (s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0)):
            raise ValueError(f"RowPartition: row_splits must start with 0 and be sorted: {s}.")
        return cls(_cast(splits, dtype), None)

    @classmethod
    def from_row_lengths(
        cls, row_lengths: Any, validate: bool = True, dtype: Any = None, dtype_hint: Any = None
    ) -> RowPartition:
        lengths = np.asarray(_host(convert_to_tensor(row_lengths)))
        if validate and np.any(lengths < 0):
            raise ValueError(f"RowPartition: row_lengths must be non-negative: {lengths}.")
        # a Python list takes int64 (TF's dtype_hint); an int32 tensor keeps int32
        want = np.int32 if hasattr(row_lengths, "dtype") and lengths.dtype == np.int32 else np.int64
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(want)
        return cls(_cast(convert_to_tensor(splits), dtype), None)

    @classmethod
    def from_uniform_row_length(
        cls,
        uniform_row_length: Any,
        nvals: Any = None,
        nrows: Any = None,
        validate: bool = True,
        dtype: Any = None,
        dtype_hint: Any = None,
    ) -> RowPartition:
        length = int(_host(convert_to_tensor(uniform_row_length)))
        if nrows is None:
            if nvals is None:
                raise ValueError("RowPartition.from_uniform_row_length: give nvals or nrows.")
            nvals = int(_host(convert_to_tensor(nvals)))
            nrows = nvals // length if length else 0
        nrows = int(_host(convert_to_tensor(nrows)))
        splits = convert_to_tensor(np.arange(nrows + 1, dtype=np.int64) * length)
        return cls(_cast(splits, dtype), length)

    @property
    def dtype(self) -> Any:
        return self._splits.dtype

    @property
    def static_nrows(self) -> int:
        return int(self._splits.shape[0]) - 1

    @property
    def static_uniform_row_length(self) -> int | None:
        return self._uniform

    def uniform_row_length(self) -> Any:
        if self._uniform is None:
            return None
        return convert_to_tensor(np.asarray(self._uniform, self._splits.dtype.np))

    def nvals(self) -> Any:
        return convert_to_tensor(np.asarray(_host(self._splits)[-1], self._splits.dtype.np))

    def with_dtype(self, dtype: Any) -> RowPartition:
        return RowPartition(_cast(self._splits, dtype), self._uniform)

    def row_splits(self) -> Any:
        return self._splits

    def row_lengths(self) -> Any:
        return convert_to_tensor(np.diff(_host(self._splits)))

    def nrows(self) -> Any:
        return convert_to_tensor(np.asarray(int(self._splits.shape[0]) - 1, self.dtype.np))

    def is_uniform(self) -> bool:
        return self._uniform is not None

    def __repr__(self) -> str:
        if self._uniform is not None:
            return f"tf.RowPartition(nrows={self.static_nrows}, uniform_row_length={self._uniform})"
        return f"tf.RowPartition(row_splits={_host(self._splits)})"


def _cast(splits: Any, dtype: Any) -> Any:
    if dtype is None or dtypes.as_dtype(dtype) == splits.dtype:
        return splits
    return convert_to_tensor(_host(splits).astype(dtypes.as_dtype(dtype).np))


class DynamicRaggedShape:
    """The shape of a RaggedTensor; see the module docstring."""

    __slots__ = ("_lengths", "_partitions", "_inner", "_dtype")

    def __init__(self, lengths: list[Any], partitions: tuple, inner: list[int], dtype: Any) -> None:
        self._lengths = lengths
        self._partitions = partitions
        self._inner = inner
        self._dtype = dtypes.as_dtype(dtype)

    @classmethod
    def from_tensor(cls, t: Any, dtype: Any = "int64") -> DynamicRaggedShape:
        if not isinstance(t, RaggedTensor):
            shape = [int(d) for d in t.shape]
            return cls(shape, (), shape, dtype)
        lengths: list[Any] = [t.nrows_int()]
        parts = []
        v: Any = t
        while isinstance(v, RaggedTensor):
            lens = np.diff(_host(v.row_splits)).tolist()
            lengths.append(v._uniform if v._uniform is not None else tuple(lens))
            parts.append(RowPartition(v.row_splits, v._uniform))
            v = v.values
        inner = [int(v.shape[0])] + [int(d) for d in list(v.shape)[1:]]
        lengths += inner[1:]
        return cls(lengths, tuple(parts), inner, dtype)

    @property
    def rank(self) -> int:
        return len(self._lengths)

    @property
    def num_row_partitions(self) -> int:
        return len(self._partitions)

    @property
    def row_partitions(self) -> tuple:
        return self._partitions

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def inner_shape(self) -> Any:
        return convert_to_tensor(np.asarray(self._inner, self._dtype.np))

    def static_lengths(self, ragged_lengths: bool = True) -> list:
        if ragged_lengths:
            return list(self._lengths)
        return [d if isinstance(d, int) else None for d in self._lengths]

    def is_uniform(self, axis: int) -> bool:
        return isinstance(self._lengths[axis], int)

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, int):
            raise TypeError(f"DynamicRaggedShape indices must be integers, got {index!r}.")
        if not -self.rank <= index < self.rank:
            raise IndexError(f"Index {index} is out of range for a shape of rank {self.rank}.")
        d = self._lengths[index]
        if not isinstance(d, int):
            raise ValueError(f"Index {index} is not uniform")
        return convert_to_tensor(np.asarray(d, self._dtype.np))

    def __len__(self) -> int:
        return self.rank

    def __repr__(self) -> str:
        shown = ", ".join(
            str(d) if isinstance(d, int) else "(" + ", ".join(map(str, d)) + ")"
            for d in self._lengths
        )
        return (
            f"<DynamicRaggedShape lengths=[{shown}] num_row_partitions={self.num_row_partitions}>"
        )


def shape(input: Any, out_type: Any = "int32", name: Any = None) -> DynamicRaggedShape:  # noqa: A002
    """`tf.shape` of a RaggedTensor."""
    return DynamicRaggedShape.from_tensor(input, out_type)
