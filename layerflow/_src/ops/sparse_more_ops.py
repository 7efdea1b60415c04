"""`tf.sparse`, part 2: reductions, softmax, segment reductions over sparse row selections,
`fill_empty_rows`, `bincount`, `maximum`/`minimum`, `to_indicator`, `mask`
and `sampled_addmm`.

All are composed from differentiable ops on the values (segment sums and maxima, gather), with
index bookkeeping on the host (see `sparse_ops.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.indexed_slices import IndexedSlices
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import concat as _concat
from layerflow._src.ops.array_ops import fill
from layerflow._src.ops.array_ops import transpose as _t
from layerflow._src.ops.compare_ops import cast
from layerflow._src.ops.core_ops import reduce_sum as _rsum
from layerflow._src.ops.core_ops import reshape
from layerflow._src.ops.gather_ops import gather
from layerflow._src.ops.math_ops import exp, sqrt
from layerflow._src.ops.math_ops import maximum as _dense_maximum
from layerflow._src.ops.math_ops import minimum as _dense_minimum
from layerflow._src.ops.segment_ops import unsorted_segment_sum
from layerflow._src.ops.segment_reduce_ops import unsorted_segment_max
from layerflow._src.ops.sparse_ops import (
    _err,
    _same_shape,
    as_values,
    check_sparse,
    index_tensor,
    make,
    merge_positions,
    take,
    to_dense,
)


def _axes(axis: Any, rank: int, opname: str) -> list[int]:
    if axis is None:
        return list(range(rank))
    raw = np.asarray(backend.to_host(as_values(axis)._data)).reshape(-1).tolist()
    out = []
    for a in raw:
        if not -rank <= a < rank:
            raise _err(
                opname,
                f"Invalid reduction dimension {a}, for input with {rank} dimensions; axis must "
                f"be in [{-rank}, {rank}).",
            )
        out.append(int(a) % rank)
    return sorted(set(out))


def _grouped(sp: SparseTensor, axis: Any, keepdims: Any, opname: str) -> tuple[Any, ...]:
    """Per entry, the flat position of its output cell; the output shape with and without the
    reduced axes (kept as 1 with keepdims)."""
    shape = sp.host_shape()
    reduced = _axes(axis, len(shape), opname)
    kept = [d for d in range(len(shape)) if d not in reduced]
    out_shape = [shape[d] for d in kept]
    full_shape = [1 if d in reduced else shape[d] for d in range(len(shape))]
    indices = sp.host_indices()
    if kept and indices.shape[0]:
        keys = np.ravel_multi_index(tuple(indices[:, kept].T), out_shape)
    else:
        keys = np.zeros(indices.shape[0], np.int64)
    return keys, out_shape, (full_shape if keepdims else out_shape), kept, reduced


def _sparse_result(keys: Any, reduce: Any, sp: SparseTensor, out_shape: list[int],
                   final: list[int], kept: list[int], keepdims: Any) -> SparseTensor:  # fmt: skip
    present, inverse = np.unique(keys, return_inverse=True)
    vals = reduce(sp.values, index_tensor(inverse.reshape(-1), sp.values), present.size)
    if out_shape:
        idx = np.stack(np.unravel_index(present, out_shape), axis=1)
    else:
        idx = np.zeros((present.size, 0), np.int64)
    if keepdims:
        full = np.zeros((present.size, len(final)), np.int64)
        full[:, kept] = idx
        idx = full
    return make(idx.astype(np.int64), vals, final)


def reduce_sum(sp_input: Any, axis: Any = None, keepdims: Any = None,
               output_is_sparse: bool = False, name: str | None = None) -> Any:  # fmt: skip
    """The sum over `axis` (all by default); dense, or a SparseTensor of the non-empty cells
    with `output_is_sparse`. Duplicate and unordered entries are fine.

    >>> import layerflow as tf
    >>> st = tf.SparseTensor([[0, 0], [1, 2], [0, 2]], [1.0, 2.0, 3.0], [2, 3])
    >>> tf.sparse.reduce_sum(st, axis=1).numpy().tolist()
    [4.0, 2.0]
    """
    sp = check_sparse(sp_input, "reduce_sum")
    keys, out_shape, final, kept, _ = _grouped(sp, axis, keepdims, "SparseReduceSum")
    if output_is_sparse:
        return _sparse_result(keys, unsorted_segment_sum, sp, out_shape, final, kept, keepdims)
    n = int(np.prod(out_shape, dtype=np.int64))
    summed = unsorted_segment_sum(sp.values, index_tensor(keys, sp.values), n)
    return reshape(summed, final)


def reduce_max(sp_input: Any, axis: Any = None, keepdims: Any = None,
               output_is_sparse: bool = False, name: str | None = None) -> Any:  # fmt: skip
    """The maximum of the stored values over `axis` (implicit zeros do not count, as in TF);
    a cell with no entries is 0 in the dense result and absent from the sparse one.

    >>> import layerflow as tf
    >>> st = tf.SparseTensor([[0, 0], [1, 1]], [-1.0, -2.0], [2, 3])
    >>> tf.sparse.reduce_max(st, axis=0).numpy().tolist()
    [-1.0, -2.0, 0.0]
    """
    sp = check_sparse(sp_input, "reduce_max")
    keys, out_shape, final, kept, _ = _grouped(sp, axis, keepdims, "SparseReduceMax")
    result = _sparse_result(keys, unsorted_segment_max, sp, out_shape, out_shape, kept, False)
    if output_is_sparse:
        if keepdims:
            return _sparse_result(keys, unsorted_segment_max, sp, out_shape, final, kept, True)
        return result
    return reshape(to_dense(result), final)


def softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """Softmax over the entries of each innermost row (the last dimension), implicit zeros not
    taking part; the indices and their order are kept.

    >>> import layerflow as tf
    >>> st = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 1.0, 5.0], [2, 3])
    >>> tf.sparse.softmax(st).values.numpy().tolist()
    [0.5, 0.5, 1.0]
    """
    sp = check_sparse(sp_input, "softmax")
    shape = sp.host_shape()
    if len(shape) < 2:
        raise _err("SparseSoftmax", f"sp_input must have rank >= 2, got shape {list(shape)}")
    indices = sp.host_indices()
    rows, groups = np.unique(indices[:, :-1], axis=0, return_inverse=True)
    g = index_tensor(groups.reshape(-1), sp.values)
    n = rows.shape[0]
    top = gather(unsorted_segment_max(sp.values, g, n), g)
    e = exp(sp.values - top)
    out = e / gather(unsorted_segment_sum(e, g, n), g)
    return SparseTensor(sp.indices, out, sp.dense_shape)


# --- segment reductions over selected rows --------------------------------------------------------


def _sparse_segment(data: Any, indices: Any, segment_ids: Any, num_segments: Any,
                    opname: str) -> tuple[Any, Any, Any, int]:  # fmt: skip
    d = as_values(data)
    idx = as_values(indices)
    ids = as_values(segment_ids)
    host_ids = np.asarray(backend.to_host(ids._data)).reshape(-1)
    if host_ids.shape[0] != np.asarray(backend.to_host(idx._data)).reshape(-1).shape[0]:
        raise _err(opname, "segment_ids and indices should have the same size")
    if num_segments is None:
        if host_ids.size and np.any(np.diff(host_ids) < 0):
            raise _err(opname, f"segment ids are not increasing: {host_ids.tolist()}")
        n = int(host_ids[-1]) + 1 if host_ids.size else 0
    else:
        n = int(backend.to_host(as_values(num_segments)._data))
    rows = gather(d, idx)
    return rows, ids, unsorted_segment_sum(rows, ids, n), n


def _counts(rows: Any, ids: Any, n: int) -> Any:
    xp = rows._device.xp
    ones = Tensor(xp.ones(ids._data.shape, dtype=rows._data.dtype), rows._device)
    count = unsorted_segment_sum(ones, ids, n)
    count = _dense_maximum(count, Tensor(xp.ones((), rows._data.dtype), rows._device))
    return reshape(count, [n] + [1] * (rows._data.ndim - 1))


def segment_sum(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                name: str | None = None, sparse_gradient: bool = False) -> Any:  # fmt: skip
    """Sums of the rows `data[indices]` grouped by `segment_ids`.

    >>> import layerflow as tf
    >>> c = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> tf.sparse.segment_sum(c, [0, 1], [0, 0]).numpy().tolist()
    [[4.0, 6.0]]
    """
    return _sparse_segment(data, indices, segment_ids, num_segments, "SparseSegmentSum")[2]


def segment_mean(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                 name: str | None = None, sparse_gradient: bool = False) -> Any:  # fmt: skip
    """Means of the rows `data[indices]` grouped by `segment_ids` (0 for an empty segment)."""
    rows, ids, sums, n = _sparse_segment(data, indices, segment_ids, num_segments,
                                         "SparseSegmentMean")  # fmt: skip
    return sums / _counts(rows, ids, n)


def segment_sqrt_n(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                   name: str | None = None, sparse_gradient: bool = False) -> Any:  # fmt: skip
    """Sums of the rows `data[indices]` per segment divided by sqrt(segment size)."""
    rows, ids, sums, n = _sparse_segment(data, indices, segment_ids, num_segments,
                                         "SparseSegmentSqrtN")  # fmt: skip
    return sums / sqrt(_counts(rows, ids, n))


# --- filling, counting, combining -----------------------------------------------------------------


def fill_empty_rows(sp_input: Any, default_value: Any, name: str | None = None) -> tuple:
    """`(filled, empty_row_indicator)`: an entry `[row, 0, ...] = default_value` added for each
    row with no entries, rows in order; and a bool vector marking those rows.

    >>> import layerflow as tf
    >>> out, empty = tf.sparse.fill_empty_rows(tf.SparseTensor([[1, 0]], [5.0], [3, 2]), -1.0)
    >>> out.values.numpy().tolist(), empty.numpy().tolist()
    ([-1.0, 5.0, -1.0], [True, False, True])
    """
    sp = check_sparse(sp_input, "fill_empty_rows")
    shape = sp.host_shape()
    if not shape:
        raise _err("SparseFillEmptyRows", "sp_input must have rank >= 1")
    indices = sp.host_indices()
    has = np.zeros(shape[0], bool)
    has[indices[:, 0]] = True
    empty = np.flatnonzero(~has)
    extra = np.zeros((empty.size, len(shape)), np.int64)
    extra[:, 0] = empty
    default = as_values(default_value)
    if default.dtype != sp.dtype:
        default = cast(default, sp.dtype)
    fill_vals = fill([empty.size], default)
    all_idx = np.concatenate([indices, extra], axis=0)
    # Stable by row only: entries keep their order within a row, as TF's kernel does.
    order = np.argsort(all_idx[:, 0], kind="stable")
    values = take(_concat([sp.values, fill_vals], 0), order)
    indicator = Tensor(backend.to_device(~has, sp.values._device), sp.values._device)
    return make(all_idx[order], values, shape), indicator


def bincount(values: Any, weights: Any = None, axis: Any = 0, minlength: Any = None,
             maxlength: Any = None, binary_output: bool = False,
             name: str | None = None) -> SparseTensor:  # fmt: skip
    """Counts (or summed `weights`) of each integer in `values` (dense or sparse), as a
    SparseTensor; `axis=-1` counts each row of a rank-2 input separately.

    >>> import layerflow as tf
    >>> tf.sparse.bincount(tf.constant([1, 2, 2])).values.numpy().tolist()
    [1, 2]
    """
    sp_in = isinstance(values, SparseTensor)
    vals = values.values if sp_in else as_values(values)
    if not vals.dtype.is_integer:
        raise TypeError(f"tf.sparse.bincount: values must be integers, got {vals.dtype.name}.")
    host = np.asarray(backend.to_host(vals._data))
    if host.size and host.min() < 0:
        raise _err("SparseBincount", f"values must be non-negative, got {int(host.min())}")
    if axis not in (0, -1, None):
        raise ValueError(f"tf.sparse.bincount: axis must be 0 or -1, got {axis}.")
    per_row = axis == -1
    if per_row:
        rank = len(values.host_shape()) if sp_in else host.ndim
        if rank != 2:
            raise ValueError(f"tf.sparse.bincount: axis=-1 needs a rank-2 input, got rank {rank}.")
        rows = values.host_indices()[:, 0] if sp_in else np.repeat(np.arange(host.shape[0]),
                                                                   host.shape[1])  # fmt: skip
        n_rows = values.host_shape()[0] if sp_in else host.shape[0]
    flat = host.reshape(-1).astype(np.int64)
    w = None
    if weights is not None:
        w = as_values(weights.values if isinstance(weights, SparseTensor) else weights)
        w = reshape(w, [-1])
    keep = np.ones(flat.size, bool)
    if maxlength is not None:
        keep &= flat < int(maxlength)
    width = int(flat[keep].max()) + 1 if keep.any() else 0
    if minlength is not None:
        width = max(width, int(minlength))
    if maxlength is not None:
        width = min(width, int(maxlength))
    keys = (rows * width + flat) if per_row else flat
    kept_pos = np.flatnonzero(keep)
    present, inverse = np.unique(keys[kept_pos], return_inverse=True)
    if w is None or binary_output:
        dt = (w.dtype if w is not None else vals.dtype).np
        src = Tensor(np.ones(kept_pos.size, dt), backend.cpu_device())
    else:
        src = take(w, kept_pos)
    src = Tensor(backend.to_device(src._data, vals._device), vals._device)
    out = unsorted_segment_sum(src, index_tensor(inverse.reshape(-1), src), present.size)
    if binary_output:
        out = Tensor(out._data.dtype.type(1) * (out._data != 0).astype(out._data.dtype),
                     out._device)  # fmt: skip
    if per_row:
        idx = np.stack([present // max(width, 1), present % max(width, 1)], axis=1)
        return make(idx, out, [n_rows, width])
    return make(present.reshape(-1, 1), out, [width])


def _union_pair(a: Any, b: Any, opname: str) -> tuple[Any, Any, Any, Any]:
    a, b = check_sparse(a, opname, "sp_a"), check_sparse(b, opname, "sp_b")
    shape = _same_shape(a, b, opname)
    ia, ib = a.host_indices(), b.host_indices()
    union, inverse = merge_positions([ia, ib], shape)
    n = union.shape[0]
    pa = index_tensor(inverse[: ia.shape[0]], a.values)
    pb = index_tensor(inverse[ia.shape[0] :], b.values)
    return (
        union,
        unsorted_segment_sum(a.values, pa, n),
        unsorted_segment_sum(b.values, pb, n),
        shape,
    )


def maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The elementwise maximum of two SparseTensors of one shape (a missing entry is 0), at
    the union of their indices.

    >>> import layerflow as tf
    >>> a = tf.SparseTensor([[0], [1]], [-1.0, 2.0], [3])
    >>> b = tf.SparseTensor([[1], [2]], [3.0, -4.0], [3])
    >>> tf.sparse.maximum(a, b).values.numpy().tolist()
    [0.0, 3.0, 0.0]
    """
    union, va, vb, shape = _union_pair(sp_a, sp_b, "SparseSparseMaximum")
    return make(union, _dense_maximum(va, vb), shape)


def minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The elementwise minimum of two SparseTensors of one shape (a missing entry is 0)."""
    union, va, vb, shape = _union_pair(sp_a, sp_b, "SparseSparseMinimum")
    return make(union, _dense_minimum(va, vb), shape)


def to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """A dense bool tensor `[..., vocab_size]` that is True at `[..., value]` for each entry
    of the integer SparseTensor `sp_input` (its last dimension is replaced by the vocabulary).

    >>> import layerflow as tf
    >>> st = tf.SparseTensor([[0, 0], [0, 1]], tf.constant([0, 3], tf.int64), [2, 2])
    >>> tf.sparse.to_indicator(st, 4).numpy().tolist()[0]
    [True, False, False, True]
    """
    sp = check_sparse(sp_input, "to_indicator")
    if not sp.dtype.is_integer:
        raise TypeError(f"tf.sparse.to_indicator: values must be integers, got {sp.dtype.name}.")
    shape = sp.host_shape()
    vocab = int(vocab_size)
    ids = np.asarray(backend.to_host(sp.values._data), np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise _err("SparseToDense", f"values must be in [0, {vocab}), got {ids.tolist()}")
    out = np.zeros([*shape[:-1], vocab], bool)
    out[(*sp.host_indices()[:, :-1].T, ids)] = True
    return Tensor(backend.to_device(out, sp.values._device), sp.values._device)


def mask(a: Any, mask_indices: Any, name: str | None = None) -> IndexedSlices:
    """The IndexedSlices `a` without the slices whose index is in `mask_indices`."""
    if not isinstance(a, IndexedSlices):
        raise TypeError(f"tf.sparse.mask: a must be an IndexedSlices, got {type(a).__name__}.")
    idx = np.asarray(backend.to_host(a.indices._data)).reshape(-1)
    drop = np.asarray(backend.to_host(as_values(mask_indices)._data)).reshape(-1)
    keep = np.flatnonzero(~np.isin(idx, drop))
    kept_idx = Tensor(backend.to_device(idx[keep], a.indices._device), a.indices._device)
    return IndexedSlices(take(a.values, keep), kept_idx, a.dense_shape)


def sampled_addmm(indices: Any, values: Any, dense_shape: Any, mat1: Any, mat2: Any,
                  beta: Any = 1.0, alpha: Any = 1.0,
                  output_type: Any = "float32") -> tuple:  # fmt: skip
    """`alpha * (mat1 @ mat2)` sampled at `indices`, plus `beta * values`; returns the
    `(indices, values, dense_shape)` of the result. Only the sampled dot products are computed."""
    idx = as_values(indices)
    host = np.asarray(backend.to_host(idx._data), np.int64)
    m1, m2 = as_values(mat1), as_values(mat2)
    if host.ndim != 2 or host.shape[1] != 2 or m1.shape.rank != 2 or m2.shape.rank != 2:
        raise ValueError(
            "tf.sparse.sampled_addmm: indices must be [N, 2] and mat1, mat2 matrices (batched "
            f"inputs are not supported), got {list(host.shape)}, {m1.shape}, {m2.shape}."
        )
    rows = gather(m1, index_tensor(host[:, 0], m1))
    cols = gather(_t(m2), index_tensor(host[:, 1], m2))
    dt = dtypes.as_dtype(output_type)
    sampled = _rsum(rows * cols, axis=1)
    out = cast(alpha * sampled + beta * as_values(values), dt)
    return idx, out, as_values(dense_shape)
