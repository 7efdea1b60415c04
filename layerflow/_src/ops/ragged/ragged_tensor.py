"""`tf.RaggedTensor`: values partitioned into rows of different lengths by `row_splits`.

A RaggedTensor is `values` (a Tensor, or another RaggedTensor for a higher ragged rank) plus
`row_splits`, an int64 vector `[0, ..., len(values)]` that never decreases: row `i` is
`values[row_splits[i]:row_splits[i + 1]]`. This is TF's encoding, so `row_splits`,
`row_lengths` and `value_rowids` mean what they mean in TF. It covers the part of TF's class
the string ops need (construction, inspection, row indexing, `to_tensor`, `to_list`); ragged
elementwise dispatch, reductions and gradients through `flat_values` are not here yet.

>>> import layerflow as tf
>>> r = tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3])
>>> r
<tf.RaggedTensor [[1, 2], [3]]>
>>> r.row_lengths().numpy()
array([2, 1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape


def _host(t: Any) -> np.ndarray:
    return backend.to_host(t._data)


def _splits(value: Any, what: str) -> Tensor:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint="int64")
    arr = _host(t)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise ValueError(
            f"RaggedTensor: {what} must be a 1-D integer tensor, got dtype "
            f"{dtypes.from_numpy(arr.dtype).name} and shape {arr.shape}."
        )
    if arr.dtype != np.int32:
        arr = arr.astype(np.int64)
    return convert_to_tensor(arr)


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, "RaggedTensor", f"Arguments do not form a valid RaggedTensor: {msg}"
    )


class RaggedTensor:
    """Rows of different lengths; see the module docstring."""

    __slots__ = ("_values", "_row_splits")

    def __init__(self, values: Any, row_splits: Tensor, internal: bool = False) -> None:
        if not internal:
            raise ValueError(
                "RaggedTensor constructor is private; use a factory method such as "
                "tf.RaggedTensor.from_row_splits(values, row_splits)."
            )
        self._values = values
        self._row_splits = row_splits

    # --- factories ------------------------------------------------------------------------------

    @classmethod
    def from_row_splits(cls, values: Any, row_splits: Any, name: Any = None,
                        validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Rows `values[row_splits[i]:row_splits[i + 1]]`."""
        if not isinstance(values, RaggedTensor):
            values = convert_to_tensor(values)
            if values.shape.rank == 0:
                raise ValueError("RaggedTensor: values must have rank >= 1, got a scalar.")
        splits = _splits(row_splits, "row_splits")
        if validate:
            s = _host(splits)
            n = values.nrows_int() if isinstance(values, RaggedTensor) else values.shape[0]
            if s.size == 0:
                raise _invalid("row_splits must not be empty (it starts with 0).")
            if s[0] != 0:
                raise _invalid(f"row_splits must start with 0, got {s[0]}.")
            if np.any(np.diff(s) < 0):
                raise _invalid(f"row_splits must be sorted in ascending order, got {s.tolist()}.")
            if s[-1] != n:
                raise _invalid(
                    f"the last row_splits value ({s[-1]}) must equal the number of values ({n})."
                )
        return cls(values, splits, internal=True)

    @classmethod
    def from_row_lengths(cls, values: Any, row_lengths: Any, name: Any = None,
                         validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Rows of the given lengths, taken in order from `values`."""
        lengths = _host(_splits(row_lengths, "row_lengths"))
        if validate and np.any(lengths < 0):
            raise _invalid(f"row_lengths must be non-negative, got {lengths.tolist()}.")
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(lengths.dtype)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_value_rowids(cls, values: Any, value_rowids: Any, nrows: Any = None,
                          name: Any = None, validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Value `j` goes to row `value_rowids[j]` (sorted); `nrows` adds empty trailing rows."""
        ids = _host(_splits(value_rowids, "value_rowids"))
        if validate and (np.any(np.diff(ids) < 0) or (ids.size and ids[0] < 0)):
            raise _invalid(f"value_rowids must be sorted and non-negative, got {ids.tolist()}.")
        n = int(ids[-1]) + 1 if ids.size else 0
        if nrows is not None:
            nrows = int(_host(convert_to_tensor(nrows)))
            if validate and nrows < n:
                raise _invalid(f"nrows ({nrows}) must be greater than the largest row id.")
            n = nrows
        lengths = np.bincount(ids, minlength=n).astype(ids.dtype)
        return cls.from_row_lengths(values, lengths, validate=validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values: Any, nested_row_splits: Any, name: Any = None,
                               validate: bool = True) -> RaggedTensor:  # fmt: skip
        result = flat_values
        for splits in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, splits, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(
        cls, flat_values: Any, nested_row_lengths: Any, name: Any = None, validate: bool = True
    ) -> RaggedTensor:
        result = flat_values
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    # --- structure ------------------------------------------------------------------------------

    @property
    def values(self) -> Any:
        return self._values

    @property
    def row_splits(self) -> Tensor:
        return self._row_splits

    @property
    def flat_values(self) -> Tensor:
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self) -> tuple[Tensor, ...]:
        out = [self._row_splits]
        v = self._values
        while isinstance(v, RaggedTensor):
            out.append(v._row_splits)
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return 1 + (self._values.ragged_rank if isinstance(self._values, RaggedTensor) else 0)

    @property
    def dtype(self) -> dtypes.DType:
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self) -> dtypes.DType:
        return self._row_splits.dtype

    @property
    def shape(self) -> TensorShape:
        inner = self._values.shape
        return TensorShape([self.nrows_int(), None, *list(inner)[1:]])

    def nrows_int(self) -> int:
        return int(self._row_splits.shape[0]) - 1

    def nrows(self, out_type: Any = None, name: Any = None) -> Tensor:
        dt = self._row_splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        return convert_to_tensor(np.asarray(self.nrows_int(), dtype=dt.np))

    def row_starts(self, name: Any = None) -> Tensor:
        return convert_to_tensor(_host(self._row_splits)[:-1])

    def row_limits(self, name: Any = None) -> Tensor:
        return convert_to_tensor(_host(self._row_splits)[1:])

    def row_lengths(self, axis: int = 1, name: Any = None) -> Any:
        if axis != 1:
            if not isinstance(self._values, RaggedTensor) or axis < 1:
                raise ValueError(f"RaggedTensor.row_lengths: axis={axis} is not a ragged axis.")
            return self.with_values(self._values.row_lengths(axis - 1))
        return convert_to_tensor(np.diff(_host(self._row_splits)))

    def value_rowids(self, name: Any = None) -> Tensor:
        s = _host(self._row_splits)
        return convert_to_tensor(np.repeat(np.arange(len(s) - 1, dtype=s.dtype), np.diff(s)))

    def nested_row_lengths(self, name: Any = None) -> tuple[Tensor, ...]:
        return tuple(convert_to_tensor(np.diff(_host(s))) for s in self.nested_row_splits)

    def with_values(self, new_values: Any) -> RaggedTensor:
        return RaggedTensor.from_row_splits(new_values, self._row_splits)

    def with_flat_values(self, new_values: Any) -> RaggedTensor:
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def bounding_shape(self, axis: Any = None, out_type: Any = None, name: Any = None) -> Tensor:
        shape = _dense_shape(self.to_list(), self.ragged_rank, self.flat_values.shape)
        arr = np.asarray(shape, dtype=np.int64)
        return convert_to_tensor(arr if axis is None else arr[axis])

    # --- conversion -----------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """TF's `numpy()`: an object array of row arrays (a regular array if rows are even)."""
        values = self._values.numpy()
        s = _host(self._row_splits)
        rows = [values[s[i] : s[i + 1]] for i in range(len(s) - 1)]
        if not rows:
            return np.zeros((0, 0) + values.shape[1:], dtype=values.dtype)
        if any(len(r) != len(rows[0]) for r in rows):
            out = np.empty(len(rows), dtype=object)
            for i, r in enumerate(rows):
                out[i] = r
            return out
        return np.array(rows)

    def to_list(self) -> list:
        """The rows as nested Python lists (strings stay bytes, as in TF)."""
        values = self._values.to_list() if isinstance(self._values, RaggedTensor) else None
        if values is None:
            values = _host(self._values).tolist()
        s = _host(self._row_splits)
        return [values[s[i] : s[i + 1]] for i in range(len(s) - 1)]

    def to_tensor(self, default_value: Any = None, name: Any = None, shape: Any = None) -> Tensor:
        """A dense tensor padded with `default_value` (zero / b""), cropped or padded to `shape`."""
        flat = self.flat_values
        np_dt = _host(flat).dtype
        rows = self.to_list()
        full = _dense_shape(rows, self.ragged_rank, flat.shape)
        if shape is not None:
            shape = list(TensorShape(shape))
            if len(shape) != len(full):
                raise ValueError(
                    f"RaggedTensor.to_tensor: shape {shape} must have rank {len(full)}."
                )
            full = [f if s is None else int(s) for f, s in zip(full, shape, strict=True)]
        if default_value is None:
            fill = b"" if np_dt.kind == "O" else 0
        else:
            fill = _host(convert_to_tensor(default_value, dtype=flat.dtype))
        out = np.empty(full, dtype=np_dt)
        out[...] = fill
        _fill(out, rows, self.ragged_rank)
        return convert_to_tensor(out)

    # --- indexing and printing ------------------------------------------------------------------

    def _row(self, i: int) -> Any:
        n = self.nrows_int()
        if not -n <= i < n:
            raise IndexError(f"Row key {i} out of bounds (the RaggedTensor has {n} rows).")
        i %= n
        s = _host(self._row_splits)
        return self._values[int(s[i]) : int(s[i + 1])]

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            key = (key,)
        if not key:
            return self
        first, rest = key[0], key[1:]
        if isinstance(first, slice):
            if rest:
                raise NotImplementedError(
                    "RaggedTensor indexing: a row slice followed by more indices is not "
                    "supported yet; index rows one at a time."
                )
            s = _host(self._row_splits)
            idx = range(self.nrows_int())[first]
            lengths = np.diff(s)[list(idx)] if len(idx) else np.zeros(0, s.dtype)
            if first.step not in (None, 1):
                raise NotImplementedError("RaggedTensor indexing: row slices take step 1 only.")
            start = int(s[idx.start]) if len(idx) else 0
            vals = self._values[start : start + int(lengths.sum())]
            return RaggedTensor.from_row_lengths(vals, lengths.astype(s.dtype))
        if hasattr(first, "__index__") or isinstance(first, Tensor):
            row = self._row(int(first))
            return row[rest] if rest else row
        raise TypeError(f"RaggedTensor indices must be ints or slices, got {first!r}.")

    def __len__(self) -> int:
        return self.nrows_int()

    def __iter__(self) -> Any:
        return (self._row(i) for i in range(self.nrows_int()))

    def __repr__(self) -> str:
        with np.printoptions(formatter={"all": _formatter}):
            text = _formatter(self.numpy())
        return f"<tf.RaggedTensor {text}>"

    __str__ = __repr__


def _formatter(x: Any) -> str:
    """TF's RaggedTensor printer: NumPy's layout with commas, elements printed with `str`."""
    if isinstance(x, np.ndarray):
        if x.size != 0:
            return np.array2string(x, separator=", ")
        return repr(x.tolist())
    return str(x)


def _dense_shape(rows: list, ragged_rank: int, inner: Any) -> list[int]:
    """The bounding shape of nested lists `rows` (ragged dims: the longest row)."""
    shape = [len(rows)]
    level = rows
    for _ in range(ragged_rank):
        shape.append(max((len(r) for r in level), default=0))
        level = [x for r in level for x in r]
    return shape + [int(d) for d in list(inner)[1:]]


def _fill(out: np.ndarray, rows: list, depth: int) -> None:
    """Copy nested-list `rows` into the padded array `out`, cropping what does not fit."""
    for i, row in enumerate(rows[: out.shape[0]]):
        if depth > 1:
            _fill(out[i], row, depth - 1)
            continue
        n = min(len(row), out.shape[1])
        if n:
            arr = np.asarray(row[:n], dtype=out.dtype)
            out[i, :n] = arr[(slice(None),) + tuple(slice(0, d) for d in out.shape[2:])]


def is_ragged(value: Any) -> bool:
    return isinstance(value, RaggedTensor)
