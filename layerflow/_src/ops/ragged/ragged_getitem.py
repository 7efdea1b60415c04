"""`RaggedTensor.__getitem__` with TF's rules (`tensorflow/python/ops/ragged/ragged_getitem.py`).

- The first index picks rows: an integer gives one row (a Tensor, or a RaggedTensor of lower
  rank), a slice (any step) gives a RaggedTensor of those rows.
- Later indices apply within every row: a slice crops each row (clipped to its length, as
  Python slices are); an integer on a ragged dimension raises "Cannot index into an inner
  ragged dimension." (rows may be too short), on a uniform dimension it picks that entry.
- `...` stands for as many `:` as needed; `tf.newaxis` is supported on the row dimension.

Values move by `gather` and slicing of the values, so gradients reach `flat_values`.

>>> import layerflow as tf
>>> rt = tf.ragged.constant([[1, 2, 3], [4]])
>>> rt[0].numpy(), rt[:, :2]
(array([1, 2, 3], dtype=int32), <tf.RaggedTensor [[1, 2], [4]]>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import gather_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _host


def _index(key: Any) -> int | None:
    if isinstance(key, bool):
        return None
    if isinstance(key, TensorLike):
        arr = _host(key)
        if arr.ndim == 0 and arr.dtype.kind in "iu":
            return int(arr)
        return None
    if hasattr(key, "__index__"):
        return int(key.__index__())
    return None


def _slice_value(key: Any) -> slice:
    def v(x: Any) -> Any:
        return None if x is None else int(_host(x)) if isinstance(x, TensorLike) else int(x)

    return slice(v(key.start), v(key.stop), v(key.step))


def gather_rows(x: Any, idx: np.ndarray) -> Any:
    """Rows `idx` of `x` (a Tensor or a RaggedTensor), differentiable in the values."""
    idx = np.asarray(idx, dtype=np.int64)
    if not isinstance(x, RaggedTensor):
        return gather_ops.gather(x, idx)
    s = _host(x.row_splits).astype(np.int64)
    starts, lengths = s[idx], s[idx + 1] - s[idx]
    inner = _ranges(starts, lengths)
    values = gather_rows(x.values, inner)
    return RaggedTensor.from_row_lengths(values, lengths.astype(x.row_splits_dtype.np),
                                         validate=False)  # fmt: skip


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of `range(starts[i], starts[i] + lengths[i])`."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(total, dtype=np.int64) + offsets


def _expand_ellipsis(key: tuple, rank: int) -> tuple:
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise ValueError("RaggedTensor indexing: an index can only have one ellipsis (...).")
    if n_ell == 0:
        return key
    i = next(j for j, k in enumerate(key) if k is Ellipsis)
    used = sum(1 for k in key if k is not Ellipsis and k is not None)
    return key[:i] + (slice(None),) * max(rank - used, 0) + key[i + 1 :]


def getitem(rt: RaggedTensor, key: Any) -> Any:
    if not isinstance(key, tuple):
        key = (key,)
    key = _expand_ellipsis(key, rt.shape.rank)
    if not key:
        return rt
    if len([k for k in key if k is not None]) > rt.shape.rank:
        raise ValueError(
            f"RaggedTensor indexing: too many indices ({len(key)}) for a RaggedTensor of rank "
            f"{rt.shape.rank}."
        )
    first, rest = key[0], key[1:]
    if first is None:  # tf.newaxis on the rows: one row holding every row
        outer = RaggedTensor.from_uniform_row_length(rt, rt.nrows_int(), nrows=1)
        return _inner(outer, rest) if rest else outer
    i = _index(first)
    if i is not None:
        n = rt.nrows_int()
        if not -n <= i < n:
            raise IndexError(f"RaggedTensor row index {i} is out of bounds (it has {n} rows).")
        i %= n
        s = _host(rt.row_splits)
        row = rt.values[int(s[i]) : int(s[i + 1])]
        if not rest:
            return row
        return row[rest]
    if isinstance(first, slice):
        rows = _slice_rows(rt, _slice_value(first))
        return _inner(rows, rest) if rest else rows
    raise TypeError(
        f"RaggedTensor indices must be integers, slices, Ellipsis or tf.newaxis, got "
        f"{first!r} of type {type(first).__name__}."
    )


def _slice_rows(rt: RaggedTensor, sl: slice) -> RaggedTensor:
    idx = range(rt.nrows_int())[sl]
    if sl.step in (None, 1):
        s = _host(rt.row_splits)
        lengths = np.diff(s)[idx.start : idx.stop] if len(idx) else np.zeros(0, s.dtype)
        start = int(s[idx.start]) if len(idx) else 0
        values = rt.values[start : start + int(lengths.sum())]
        out = RaggedTensor.from_row_lengths(values, lengths.astype(s.dtype), validate=False)
    else:
        out = gather_rows(rt, np.asarray(list(idx), np.int64))
    if rt._uniform is not None:
        out._uniform = rt._uniform
    return out


def _inner(x: Any, keys: tuple) -> Any:
    """Apply `keys` to the dimensions after the first of `x` (a RaggedTensor or a Tensor)."""
    if not keys:
        return x
    if not isinstance(x, RaggedTensor):
        return x[(slice(None),) + tuple(keys)]
    k, rest = keys[0], keys[1:]
    if k is None:
        raise NotImplementedError(
            "RaggedTensor indexing: tf.newaxis is supported on the row dimension only."
        )
    if isinstance(k, slice) and k == slice(None):
        return x.with_values(_inner(x.values, rest))
    s = _host(x.row_splits).astype(np.int64)
    starts, lengths = s[:-1], np.diff(s)
    i = _index(k)
    if i is not None:
        if x._uniform is None:
            raise ValueError("Cannot index into an inner ragged dimension.")
        n = x._uniform
        if not -n <= i < n:
            raise IndexError(f"RaggedTensor index {i} is out of range for a dimension of {n}.")
        picked = gather_rows(x.values, starts + (i % n) if n else starts)
        return _inner(picked, rest)
    if not isinstance(k, slice):
        raise TypeError(f"RaggedTensor indices must be integers or slices, got {k!r}.")
    sl = _slice_value(k)
    pos = [np.arange(n, dtype=np.int64)[sl] for n in lengths.tolist()]
    new_lengths = np.asarray([len(p) for p in pos], np.int64)
    flat = np.concatenate([st + p for st, p in zip(starts.tolist(), pos, strict=True)] or [[]])
    values = gather_rows(x.values, flat.astype(np.int64))
    out = RaggedTensor.from_row_lengths(values, new_lengths.astype(x.row_splits_dtype.np),
                                        validate=False)  # fmt: skip
    if x._uniform is not None and len(set(new_lengths.tolist())) <= 1:
        out._uniform = len(range(x._uniform)[sl])
    return out.with_values(_inner(out.values, rest)) if rest else out
