"""Segments, bins and searches: segment sums, bincount, searchsorted and in_top_k.

`unsorted_segment_sum` and its transpose (a gather that gives zeros for dropped ids) are the two
primitives here; each is the other's gradient, so `segment_sum` and weighted `bincount` get their
gradients, to any order, by composition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.math_ops import _as_tensor, cast, reshape

# --- segment sums ---------------------------------------------------------------------------------


def _int_ids(ids: Any, opname: str, what: str = "segment_ids") -> Any:
    t = _as_tensor(ids)
    if t._data.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be int32 or int64, got {t.dtype.name}.")
    return t


def _scalar_int(value: Any, opname: str, what: str) -> int:
    v = backend.to_host(value._data) if isinstance(value, TensorLike) else np.asarray(value)
    if v.ndim != 0 or v.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be an integer scalar, got {value!r}.")
    return int(v)


@op("unsorted_segment_sum", 2, same_dtype=False)
def _segment_sum(xp: Any, data: Any, ids: Any, num_segments: int) -> Any:
    k = ids.ndim
    if tuple(data.shape[:k]) != tuple(ids.shape):
        raise errors.InvalidArgumentError(
            None,
            "unsorted_segment_sum",
            f"unsorted_segment_sum: segment_ids shape {list(ids.shape)} must be a prefix of the "
            f"data shape {list(data.shape)}.",
        )
    flat_ids = ids.reshape(-1)
    if flat_ids.size and bool(xp.any(flat_ids >= num_segments)):
        bad = int(backend.to_host(flat_ids[flat_ids >= num_segments])[0])
        raise errors.InvalidArgumentError(
            None,
            "unsorted_segment_sum",
            f"unsorted_segment_sum: segment id {bad} is out of range [0, {num_segments}); "
            "raise num_segments or fix the ids.",
        )
    rows = data.reshape((flat_ids.size,) + data.shape[k:])
    keep = flat_ids >= 0  # negative ids are dropped, as in TF
    if not bool(xp.all(keep)):
        flat_ids, rows = flat_ids[keep], rows[keep]
    out = xp.zeros((num_segments,) + data.shape[k:], dtype=data.dtype)
    xp.add.at(out, flat_ids, rows)
    return out


@_segment_sum.grad
def _(dy: Any, out: Any, data: Any, ids: Any, num_segments: int) -> Any:
    return _segment_gather(dy, ids), None


@op("segment_gather", 2, same_dtype=False)
def _segment_gather(xp: Any, dy: Any, ids: Any) -> Any:
    """dy[ids] along axis 0, with zeros where an id is negative (a dropped element)."""
    out = xp.take(dy, xp.maximum(ids, 0), axis=0)
    dropped = ids < 0
    if bool(xp.any(dropped)):
        out[dropped] = 0
    return out


@_segment_gather.grad
def _(g: Any, out: Any, dy: Any, ids: Any) -> Any:
    return _segment_sum(g, ids, int(dy._data.shape[0])), None


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Any:  # fmt: skip
    """Sums of the slices of `data` that share a segment id; shape
    `[num_segments] + data.shape[segment_ids.ndim:]`. Negative ids are dropped.

    >>> import layerflow as tf
    >>> tf.math.unsorted_segment_sum([1, 2, 3, 4], [1, 0, 1, -1], num_segments=3).numpy()
    array([2, 4, 0], dtype=int32)
    """
    d = _as_tensor(data)
    ids = _int_ids(segment_ids, "unsorted_segment_sum")
    n = _scalar_int(num_segments, "unsorted_segment_sum", "num_segments")
    if n < 0:
        raise errors.InvalidArgumentError(
            None, "unsorted_segment_sum", f"unsorted_segment_sum: num_segments={n} is negative."
        )
    return _segment_sum(d, ids, n)


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """Sums of the rows of `data` that share a segment id; `segment_ids` is a sorted 1-D
    tensor with one id per row, and the output has `segment_ids[-1] + 1` rows (empty ones 0).

    >>> import layerflow as tf
    >>> tf.math.segment_sum([[1, 2], [3, 4], [5, 6]], [0, 0, 2]).numpy()
    array([[4, 6],
           [0, 0],
           [5, 6]], dtype=int32)
    """
    d = _as_tensor(data)
    ids = _int_ids(segment_ids, "segment_sum")
    host = backend.to_host(ids._data)
    rows = d._data.shape[0] if d._data.ndim else None
    if host.ndim != 1 or host.shape[0] != rows:
        raise errors.InvalidArgumentError(
            None,
            "segment_sum",
            f"segment_sum: segment_ids must be a vector with one id per row of data (shape "
            f"{list(d.shape)}), got shape {list(host.shape)}.",
        )
    if host.size and (host[0] < 0 or bool(np.any(np.diff(host) < 0))):
        raise errors.InvalidArgumentError(
            None,
            "segment_sum",
            f"segment_sum: segment ids must be non-negative and sorted, got {host.tolist()}; "
            "use tf.math.unsorted_segment_sum for ids in any order.",
        )
    return _segment_sum(d, ids, int(host[-1]) + 1 if host.size else 0)


# --- bincount -------------------------------------------------------------------------------------


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = "int32", name: str | None = None, axis: Any = None,
             binary_output: bool = False) -> Any:  # fmt: skip
    """How often each value 0, 1, ... occurs in the non-negative integers `arr` (or the sum of
    their `weights`). The length is `max(arr) + 1`, at least `minlength`; values at or above
    `maxlength` are skipped. `axis=-1` counts each row of a 2-D `arr` separately.

    >>> import layerflow as tf
    >>> tf.math.bincount([1, 1, 2, 3, 2, 4, 4, 5]).numpy()
    array([0, 2, 2, 1, 2, 1], dtype=int32)
    """
    a = _int_ids(arr, "bincount", "arr")
    host = backend.to_host(a._data)
    if host.size and int(host.min()) < 0:
        raise errors.InvalidArgumentError(
            None, "bincount", f"bincount: arr must be non-negative, got {int(host.min())}."
        )
    if weights is not None and binary_output:
        raise ValueError("bincount: binary_output and weights are mutually exclusive.")
    if axis is None or axis == 0:
        flat = host.reshape(-1)
        rows = None
    elif axis == -1 and host.ndim == 2:
        flat = host
        rows = host.shape[0]
    else:
        raise ValueError(
            f"bincount: axis must be None, 0, or -1 with a 2-D arr; got axis={axis!r} for "
            f"shape {list(host.shape)}."
        )
    length = int(flat.max()) + 1 if flat.size else 0
    if minlength is not None:
        length = max(length, int(minlength))
    if maxlength is not None:
        length = min(length, int(maxlength))
    # Each value becomes a segment id: its row's block plus the value; skipped values drop (-1).
    ids = np.where(flat < length, flat, -1).astype(np.int64)
    if rows is not None:
        ids = np.where(ids >= 0, ids + length * np.arange(rows)[:, None], -1)
    segments = length * (rows if rows is not None else 1)
    shape = [length] if rows is None else [rows, length]
    ids_t = Tensor(a._device.xp.asarray(ids.reshape(-1)), a._device)
    if weights is not None:
        w = reshape(_as_tensor(weights), [-1])
        if tuple(w._data.shape) != (flat.size,):
            raise errors.InvalidArgumentError(
                None,
                "bincount",
                f"bincount: weights must have the shape of arr {list(host.shape)}, got "
                f"{list(_as_tensor(weights).shape)}.",
            )
        return reshape(_segment_sum(w, ids_t, segments), shape)
    ones = Tensor(a._device.xp.ones(flat.size, dtype=dtypes.as_dtype(dtype).np), a._device)
    counts = reshape(_segment_sum(ones, ids_t, segments), shape)
    return cast(cast(counts, "bool"), dtype) if binary_output else counts


# --- searches -------------------------------------------------------------------------------------


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = "int32",
                 name: str | None = None) -> Any:  # fmt: skip
    """For each value, the index in the last axis of `sorted_sequence` where it would be
    inserted to keep it sorted (`side='left'`: before equal entries, `'right'`: after).
    Both tensors have the same leading dimensions.

    >>> import layerflow as tf
    >>> tf.searchsorted([0.0, 1.0, 2.0, 3.0], [2.0, 0.5, 9.0]).numpy()
    array([2, 1, 4], dtype=int32)
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}.")
    seq = _as_tensor(sorted_sequence)
    vals = _as_tensor(values)
    s, v = seq._data, vals._data
    if s.ndim == 0 or v.ndim == 0 or s.shape[:-1] != v.shape[:-1]:
        raise errors.InvalidArgumentError(
            None,
            "searchsorted",
            f"searchsorted: sorted_sequence {list(seq.shape)} and values {list(vals.shape)} "
            "must both have rank >= 1 and the same leading dimensions.",
        )
    if s.dtype != v.dtype:
        raise errors.InvalidArgumentError(
            None,
            "searchsorted",
            f"searchsorted: sorted_sequence and values must have the same dtype, got "
            f"{seq.dtype.name} and {vals.dtype.name}.",
        )
    xp = seq._device.xp
    dt = dtypes.as_dtype(out_type).np
    s2, v2 = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
    out = xp.empty(v2.shape, dtype=dt)
    for i in range(s2.shape[0]):  # one binary search per row: rows are few, searches are long
        out[i] = xp.searchsorted(s2[i], v2[i], side=side)
    return Tensor(out.reshape(v.shape), seq._device)


def in_top_k(targets: Any, predictions: Any, k: Any, name: str | None = None) -> Any:
    """Whether each target class is among the `k` largest predictions of its row. Ties at the
    boundary count as in (unlike `top_k`); a non-finite prediction or an out-of-range target
    gives False.

    >>> import layerflow as tf
    >>> pred = [[1.2, -0.3, 2.8, 5.2], [0.1, 0.0, 0.0, 0.0], [0.0, 0.5, 0.3, 0.3]]
    >>> tf.math.in_top_k([0, 1, 3], pred, 2).numpy()
    array([False,  True,  True])
    """
    t = _int_ids(targets, "in_top_k", "targets")
    p = _as_tensor(predictions)
    pa, ta = p._data, t._data
    if pa.ndim != 2 or ta.ndim != 1 or ta.shape[0] != pa.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            "in_top_k",
            f"in_top_k: predictions must be [batch, classes] and targets [batch], got shapes "
            f"{list(p.shape)} and {list(t.shape)}.",
        )
    k = _scalar_int(k, "in_top_k", "k")
    xp = p._device.xp
    valid = (ta >= 0) & (ta < pa.shape[1])
    rows = xp.arange(pa.shape[0])
    target = pa[rows, xp.where(valid, ta, 0)]
    better = xp.sum(pa > target[:, None], axis=1)
    return Tensor(valid & xp.isfinite(target) & (better < k), p._device)


__all__ = [
    "bincount",
    "in_top_k",
    "searchsorted",
    "segment_sum",
    "unsorted_segment_sum",
]
