"""`tf.RaggedTensor`: values partitioned into rows of different lengths by `row_splits`.

A RaggedTensor is `values` (a Tensor, or another RaggedTensor for a higher ragged rank) plus
`row_splits`, an integer vector `[0, ..., len(values)]` that never decreases: row `i` is
`values[row_splits[i]:row_splits[i + 1]]`. This is TF's encoding, so `row_splits`,
`row_lengths` and `value_rowids` mean what they mean in TF. A partition made by
`from_uniform_row_length` remembers its row length, so that dimension is known in `shape`.

The partitions are small integer vectors and are read on the host; the values stay Tensors
(never copied or converted), so ops on `flat_values` record on the tape and gradients flow
through them. Elementwise ops, reductions, `concat`, `gather`... dispatch over RaggedTensors
(`ragged_dispatch.py`); indexing follows TF's rules (`ragged_getitem.py`).

Import cycle, on purpose: `from_tensor`, `to_tensor`, `merge_dims` (ragged_convert), indexing
(ragged_getitem) and `_type_spec` (ragged_spec) live in modules that operate on this class, so
those methods import them when called. The ops' ragged overrides (ragged_dispatch, with
ragged_ops and ragged_shape) are imported at the end of this module: a RaggedTensor exists only
once it is loaded, so `import layerflow` does not pay for them.

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
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape


def _host(t: Any) -> np.ndarray:
    if isinstance(t, TensorLike):
        return backend.to_host(t._data)
    return np.asarray(t)


def _splits(value: Any, what: str, dtype: Any = None) -> Tensor:
    """A 1-D int64 (or int32) partition tensor from `value`."""
    if isinstance(value, TensorLike):
        arr = _host(value)
    else:
        arr = np.asarray(value)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise ValueError(
            f"RaggedTensor: {what} must be a 1-D integer tensor, got dtype "
            f"{arr.dtype} and shape {arr.shape}."
        )
    want = np.int64 if dtype is None else dtypes.as_dtype(dtype).np
    if dtype is None and isinstance(value, TensorLike | np.ndarray) and arr.dtype == np.int32:
        want = np.int32
    return convert_to_tensor(arr.astype(want, copy=False))


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, "RaggedTensor", f"Arguments do not form a valid RaggedTensor: {msg}"
    )


def _as_values(values: Any) -> Any:
    if isinstance(values, RaggedTensor | TensorLike):
        return values  # Tensors and Variables as they are: the tape sees the ops on them
    values = convert_to_tensor(values)
    return values


def _nrows_of(values: Any) -> int:
    if isinstance(values, RaggedTensor):
        return values.nrows_int()
    return int(values.shape[0])


class RaggedTensor:
    """Rows of different lengths; see the module docstring."""

    __slots__ = ("_values", "_row_splits", "_uniform", "__weakref__")

    def __init__(self, values: Any = None, row_splits: Any = None, internal: bool = False,
                 uniform_row_length: int | None = None) -> None:  # fmt: skip
        if not internal:
            raise ValueError(
                "RaggedTensor constructor is private; use a factory method such as "
                "tf.RaggedTensor.from_row_splits(values, row_splits)."
            )
        self._values = values
        self._row_splits = row_splits
        self._uniform = uniform_row_length

    # --- factories ------------------------------------------------------------------------------

    @classmethod
    def from_row_splits(cls, values: Any, row_splits: Any, name: Any = None,
                        validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Rows `values[row_splits[i]:row_splits[i + 1]]`.

        >>> import layerflow as tf
        >>> tf.RaggedTensor.from_row_splits([3, 1, 4, 1], [0, 3, 3, 4])
        <tf.RaggedTensor [[3, 1, 4], [], [1]]>
        """
        values = _as_values(values)
        if not isinstance(values, RaggedTensor) and values.shape.rank == 0:
            raise ValueError("RaggedTensor: values must have rank >= 1, got a scalar.")
        splits = _splits(row_splits, "row_splits")
        if isinstance(values, RaggedTensor) and values.row_splits_dtype != splits.dtype:
            raise ValueError(
                f"RaggedTensor: row_splits dtype {splits.dtype.name} differs from the nested "
                f"values' row_splits dtype {values.row_splits_dtype.name}; use "
                "rt.with_row_splits_dtype(...) to make them agree."
            )
        if validate:
            s = _host(splits)
            n = _nrows_of(values)
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
        t = _splits(row_lengths, "row_lengths")
        lengths = _host(t)
        if validate and np.any(lengths < 0):
            raise _invalid(f"row_lengths must be non-negative, got {lengths.tolist()}.")
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(lengths.dtype)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_value_rowids(cls, values: Any, value_rowids: Any, nrows: Any = None,
                          name: Any = None, validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Value `j` goes to row `value_rowids[j]` (sorted); `nrows` adds empty trailing rows."""
        t = _splits(value_rowids, "value_rowids")
        ids = _host(t)
        if validate and (np.any(np.diff(ids) < 0) or (ids.size and ids[0] < 0)):
            raise _invalid(f"value_rowids must be sorted and non-negative, got {ids.tolist()}.")
        if validate and ids.size != _nrows_of(_as_values(values)):
            raise _invalid(
                f"value_rowids has {ids.size} entries but values has {_nrows_of(values)} rows."
            )
        n = int(ids[-1]) + 1 if ids.size else 0
        if nrows is not None:
            nrows = int(_host(convert_to_tensor(nrows)))
            if validate and nrows < n:
                raise _invalid(f"nrows ({nrows}) must be greater than the largest row id.")
            n = nrows
        lengths = np.bincount(ids, minlength=n).astype(ids.dtype)
        return cls.from_row_lengths(values, lengths, validate=validate)

    @classmethod
    def from_row_starts(cls, values: Any, row_starts: Any, name: Any = None,
                        validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Row `i` starts at `row_starts[i]` and ends where the next row starts."""
        t = _splits(row_starts, "row_starts")
        starts = _host(t)
        n = _nrows_of(_as_values(values))
        splits = np.concatenate([starts, [n]]).astype(starts.dtype)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_row_limits(cls, values: Any, row_limits: Any, name: Any = None,
                        validate: bool = True) -> RaggedTensor:  # fmt: skip
        """Row `i` ends at `row_limits[i]` and starts where the previous row ends."""
        t = _splits(row_limits, "row_limits")
        limits = _host(t)
        splits = np.concatenate([[0], limits]).astype(limits.dtype)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_uniform_row_length(
        cls,
        values: Any,
        uniform_row_length: Any,
        nrows: Any = None,
        validate: bool = True,
        name: Any = None,
    ) -> RaggedTensor:
        """Rows of `uniform_row_length` values each (that dimension shows in `shape`).

        >>> import layerflow as tf
        >>> tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4], 2).shape
        TensorShape([2, 2])
        """
        values = _as_values(values)
        length = int(_host(convert_to_tensor(uniform_row_length)))
        n_values = _nrows_of(values)
        if length < 0:
            raise _invalid(f"uniform_row_length must be non-negative, got {length}.")
        if nrows is None:
            nrows = n_values // length if length else 0
        nrows = int(_host(convert_to_tensor(nrows)))
        if validate and nrows * length != n_values:
            raise _invalid(
                f"uniform_row_length ({length}) times nrows ({nrows}) must equal the number of "
                f"values ({n_values})."
            )
        splits = np.arange(nrows + 1, dtype=np.int64) * length
        rt = cls.from_row_splits(values, splits, validate=False)
        rt._uniform = length
        return rt

    @classmethod
    def from_nested_row_splits(cls, flat_values: Any, nested_row_splits: Any, name: Any = None,
                               validate: bool = True) -> RaggedTensor:  # fmt: skip
        if isinstance(nested_row_splits, TensorLike):
            raise TypeError("from_nested_row_splits: nested_row_splits must be a list of tensors.")
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

    @classmethod
    def from_nested_value_rowids(cls, flat_values: Any, nested_value_rowids: Any,
                                 nested_nrows: Any = None, name: Any = None,
                                 validate: bool = True) -> RaggedTensor:  # fmt: skip
        ids = list(nested_value_rowids)
        nrows = [None] * len(ids) if nested_nrows is None else list(nested_nrows)
        if len(nrows) != len(ids):
            raise ValueError(
                f"from_nested_value_rowids: {len(ids)} value_rowids but {len(nrows)} nrows."
            )
        result = flat_values
        for rowids, n in reversed(list(zip(ids, nrows, strict=True))):
            result = cls.from_value_rowids(result, rowids, n, validate=validate)
        return result

    @classmethod
    def from_tensor(cls, tensor: Any, lengths: Any = None, padding: Any = None,
                    ragged_rank: int = 1, name: Any = None,
                    row_splits_dtype: Any = "int64") -> RaggedTensor:  # fmt: skip
        """Rows of a dense `tensor`, cut to `lengths` or where trailing `padding` starts.

        >>> import layerflow as tf
        >>> tf.RaggedTensor.from_tensor([[1, 0, 0], [2, 3, 0]], padding=0)
        <tf.RaggedTensor [[1], [2, 3]]>
        """
        from layerflow._src.ops.ragged import ragged_convert

        return ragged_convert.from_tensor(tensor, lengths, padding, ragged_rank, row_splits_dtype)

    @classmethod
    def from_sparse(cls, st_input: Any, name: Any = None,
                    row_splits_dtype: Any = "int64") -> RaggedTensor:  # fmt: skip
        """The rows of a 2-D SparseTensor (indices in row-major order), left-aligned."""
        from layerflow._src.ops.ragged import ragged_convert

        return ragged_convert.from_sparse(st_input, row_splits_dtype)

    # --- structure ------------------------------------------------------------------------------

    @property
    def values(self) -> Any:
        return self._values

    @property
    def row_splits(self) -> Tensor:
        return self._row_splits

    @property
    def uniform_row_length(self) -> Tensor | None:
        if self._uniform is None:
            return None
        return convert_to_tensor(np.asarray(self._uniform, dtype=self._row_splits.dtype.np))

    @property
    def flat_values(self) -> Any:
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
        inner = list(self._values.shape)[1:]
        return TensorShape([self.nrows_int(), self._uniform, *inner])

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def ndim(self) -> int:
        return self.shape.rank

    @property
    def device(self) -> str:
        return self.flat_values.device

    @property
    def _type_spec(self) -> Any:
        from layerflow._src.ops.ragged.ragged_spec import RaggedTensorSpec

        return RaggedTensorSpec.from_value(self)

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
        """The lengths of the rows along ragged `axis` (1: a Tensor; deeper: a RaggedTensor)."""
        rank = self.shape.rank
        if axis < 0:
            axis += rank
        if axis == 0:
            raise ValueError("RaggedTensor.row_lengths: axis=0 is not a ragged axis.")
        if axis == 1:
            return convert_to_tensor(np.diff(_host(self._row_splits)))
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.row_lengths(axis - 1))
        if not 0 <= axis < rank:
            raise ValueError(f"RaggedTensor.row_lengths: axis={axis} is out of range.")
        dim = int(self._values.shape[axis - 1])
        lengths = np.full(int(self._values.shape[0]), dim, self._row_splits.dtype.np)
        return self.with_values(convert_to_tensor(lengths))

    def value_rowids(self, name: Any = None) -> Tensor:
        s = _host(self._row_splits)
        return convert_to_tensor(np.repeat(np.arange(len(s) - 1, dtype=s.dtype), np.diff(s)))

    def nested_value_rowids(self, name: Any = None) -> tuple[Tensor, ...]:
        out = [self.value_rowids()]
        if isinstance(self._values, RaggedTensor):
            out += list(self._values.nested_value_rowids())
        return tuple(out)

    def nested_row_lengths(self, name: Any = None) -> tuple[Tensor, ...]:
        return tuple(convert_to_tensor(np.diff(_host(s))) for s in self.nested_row_splits)

    def with_values(self, new_values: Any) -> RaggedTensor:
        """The same row partition over `new_values` (which must have as many rows)."""
        new_values = _as_values(new_values)
        if _nrows_of(new_values) != _nrows_of(self._values):
            raise ValueError(
                f"RaggedTensor.with_values: new_values has {_nrows_of(new_values)} rows, but "
                f"the partition holds {_nrows_of(self._values)} values."
            )
        splits = self._row_splits
        if isinstance(new_values, RaggedTensor) and new_values.row_splits_dtype != splits.dtype:
            new_values = new_values.with_row_splits_dtype(splits.dtype)
        return RaggedTensor(new_values, splits, internal=True, uniform_row_length=self._uniform)

    def with_flat_values(self, new_values: Any) -> RaggedTensor:
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype: Any) -> RaggedTensor:
        dt = dtypes.as_dtype(dtype)
        if dt not in (dtypes.int32, dtypes.int64):
            raise ValueError(f"with_row_splits_dtype: dtype must be int32 or int64, got {dt}.")
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.with_row_splits_dtype(dt)
        splits = convert_to_tensor(_host(self._row_splits).astype(dt.np))
        return RaggedTensor(values, splits, internal=True, uniform_row_length=self._uniform)

    def bounding_shape(self, axis: Any = None, out_type: Any = None, name: Any = None) -> Tensor:
        """The shape of the smallest dense tensor that holds every row (ragged dims: max)."""
        shape = _bounding(self)
        dt = (self._row_splits.dtype if out_type is None else dtypes.as_dtype(out_type)).np
        arr = np.asarray(shape, dtype=dt)
        return convert_to_tensor(arr if axis is None else arr[axis])

    def merge_dims(self, outer_axis: int, inner_axis: int) -> Any:
        """Merge dimensions `outer_axis..inner_axis` into one (row-major order).

        >>> import layerflow as tf
        >>> tf.ragged.constant([[[1, 2], [3]], [[4]]]).merge_dims(1, 2)
        <tf.RaggedTensor [[1, 2, 3], [4]]>
        """
        from layerflow._src.ops.ragged import ragged_convert

        return ragged_convert.merge_dims(self, outer_axis, inner_axis)

    # --- conversion -----------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """TF's `numpy()`: an object array of row arrays (a regular array if rows are even)."""
        values = self._values.numpy()
        s = _host(self._row_splits)
        rows = [values[s[i] : s[i + 1]] for i in range(len(s) - 1)]
        if not rows:
            return np.zeros((0, 0) + values.shape[1:], dtype=values.dtype)
        if all(len(r) == len(rows[0]) for r in rows):
            return np.array(rows)
        out = np.empty(len(rows), dtype=object)
        for i, r in enumerate(rows):
            out[i] = r
        return out

    def to_list(self) -> list:
        """The rows as nested Python lists (strings stay bytes, as in TF)."""
        if isinstance(self._values, RaggedTensor):
            values = self._values.to_list()
        else:
            values = _host(self._values).tolist()
        s = _host(self._row_splits).tolist()
        return [values[s[i] : s[i + 1]] for i in range(len(s) - 1)]

    def to_tensor(self, default_value: Any = None, name: Any = None, shape: Any = None) -> Tensor:
        """A dense tensor padded with `default_value` (zero / b""), cropped or padded to `shape`.

        Differentiable with respect to `flat_values` (a scatter of the values into place).
        """
        from layerflow._src.ops.ragged import ragged_convert

        return ragged_convert.to_tensor(self, default_value, shape)

    def to_sparse(self, name: Any = None) -> Any:
        from layerflow._src.ops.ragged import ragged_convert

        return ragged_convert.to_sparse(self)

    # --- indexing and printing ------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        from layerflow._src.ops.ragged import ragged_getitem

        return ragged_getitem.getitem(self, key)

    def __len__(self) -> int:
        return self.nrows_int()

    def __iter__(self) -> Any:
        return (self[i] for i in range(self.nrows_int()))

    def __bool__(self) -> bool:
        raise TypeError(
            "The truth value of a RaggedTensor is ambiguous; use tf.reduce_any / tf.reduce_all."
        )

    def __repr__(self) -> str:
        with np.printoptions(formatter={"all": _formatter}):
            text = _formatter(self.numpy())
        return f"<tf.RaggedTensor {text}>"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return (RaggedTensor.from_nested_row_splits, (self.flat_values, self.nested_row_splits))


def _formatter(x: Any) -> str:
    """TF's RaggedTensor printer: NumPy's layout with commas, elements printed with `str`."""
    if isinstance(x, np.ndarray):
        if x.size != 0:
            return np.array2string(x, separator=", ")
        return repr(x.tolist())
    return str(x)


def _bounding(rt: RaggedTensor) -> list[int]:
    """The bounding shape: the longest row at each ragged level, then the inner dims."""
    shape = [rt.nrows_int()]
    v: Any = rt
    while isinstance(v, RaggedTensor):
        lengths = np.diff(_host(v._row_splits))
        shape.append(int(lengths.max()) if lengths.size else 0)
        v = v._values
    return shape + [int(d) for d in list(v.shape)[1:]]


def is_ragged(value: Any) -> bool:
    return isinstance(value, RaggedTensor)


# Last: register the ops' ragged overrides (see the module docstring).
from layerflow._src.ops.ragged import ragged_dispatch as _ragged_dispatch  # noqa: E402, F401
