"""Indexing ops: gather, gather_nd, scatter_nd, tensor_scatter_nd_*, embedding_lookup,
boolean_mask, one_hot (tile, pad and reverse are layout ops: `manip_ops`).

Indices are checked as TF's CPU kernels check them: an index out of range is an
InvalidArgumentError naming the op, the index and the valid range, never a silent wrap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.dispatch import public_api
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.convert import as_int
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import _shape_tuple, concat
from layerflow._src.ops.math_ops import _as_tensor, _norm_axis, reshape, zeros_like
from layerflow._src.ops.reduce_ops import clip_by_norm


def _check_index_dtype(idx: Any, opname: str) -> None:
    if idx.dtype.kind not in "iu":
        raise TypeError(
            f"{opname}: indices must be int32 or int64, got {dtypes.from_numpy(idx.dtype).name}."
        )


def _check_range(xp: Any, idx: Any, n: int, opname: str, what: str) -> None:
    if idx.size and (bool(xp.any(idx < 0)) or bool(xp.any(idx >= n))):
        bad = backend.to_host(idx[(idx < 0) | (idx >= n)]).ravel()[0]
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: index {int(bad)} is not in [0, {n}) for {what}."
        )


# --- gather ---------------------------------------------------------------------------------------


@op("gather", 2, same_dtype=False)
def _gather(xp: Any, params: Any, indices: Any, axis: int) -> Any:
    _check_index_dtype(indices, "gather")
    _check_range(xp, indices, params.shape[axis], "gather", f"axis {axis} of shape {params.shape}")
    return xp.take(params, indices, axis=axis)


@_gather.grad
def _(dy: Any, out: Any, params: Any, indices: Any, axis: int) -> Any:
    if not input_needed(0):
        return None, None
    return _gather_grad(dy, indices, tuple(params._data.shape), axis), None


@op("gather_grad", 2, same_dtype=False)
def _gather_grad(xp: Any, dy: Any, indices: Any, shape: tuple[int, ...], axis: int) -> Any:
    # Move the gathered axis first so one add.at sums repeated indices (unsorted segment sum).
    out = xp.zeros((shape[axis],) + shape[:axis] + shape[axis + 1 :], dtype=dy.dtype)
    k = indices.ndim
    moved = xp.moveaxis(dy.reshape(dy.shape[:axis] + (-1,) + dy.shape[axis + k :]), axis, 0)
    xp.add.at(out, indices.reshape(-1), moved)
    return xp.moveaxis(out, 0, axis)


@_gather_grad.grad
def _(ddx: Any, out: Any, dy: Any, indices: Any, shape: Any, axis: int) -> Any:
    return _gather(ddx, indices, axis), None


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def gather(params: Any, indices: Any, validate_indices: Any = None, axis: Any = None,
           batch_dims: int = 0, name: str | None = None) -> Any:  # fmt: skip
    """Slices of `params` along `axis` at `indices`.

    >>> import layerflow as tf
    >>> tf.gather([10, 20, 30], [2, 0]).numpy()
    array([30, 10], dtype=int32)
    """
    p = _as_tensor(params)
    if batch_dims != 0:
        raise NotImplementedError(
            "gather: batch_dims other than 0 is not supported yet; use tf.gather_nd or loop."
        )
    ax = _norm_axis(0 if axis is None else axis, p._data.ndim, "gather")[0]
    return _gather(p, indices, ax)


# --- gather_nd / scatter_nd -----------------------------------------------------------------------


def _nd_key(xp: Any, params_shape: tuple[int, ...], indices: Any, opname: str) -> tuple:
    _check_index_dtype(indices, opname)
    depth = indices.shape[-1]
    if depth > len(params_shape):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: indices have depth {depth} (last dimension) but the tensor has rank "
            f"{len(params_shape)}.",
        )
    for d in range(depth):
        _check_range(
            xp, indices[..., d], params_shape[d], opname, f"dimension {d} of {params_shape}"
        )
    return tuple(indices[..., d] for d in range(depth))


@op("gather_nd", 2, same_dtype=False)
def _gather_nd(xp: Any, params: Any, indices: Any) -> Any:
    return params[_nd_key(xp, params.shape, indices, "gather_nd")]


@_gather_nd.grad
def _(dy: Any, out: Any, params: Any, indices: Any) -> Any:
    return _scatter_nd(indices, dy, tuple(params._data.shape)), None


@op("scatter_nd", 2, same_dtype=False)
def _scatter_nd(xp: Any, indices: Any, updates: Any, shape: tuple[int, ...]) -> Any:
    out = xp.zeros(shape, dtype=updates.dtype)
    xp.add.at(out, _nd_key(xp, shape, indices, "scatter_nd"), updates)
    return out


@_scatter_nd.grad
def _(dy: Any, out: Any, indices: Any, updates: Any, shape: Any) -> Any:
    return None, _gather_nd(dy, indices)


def gather_nd(params: Any, indices: Any, batch_dims: int = 0, name: str | None = None) -> Any:
    """Elements or slices of `params` at the multi-indices in the last axis of `indices`.

    >>> import layerflow as tf
    >>> tf.gather_nd([[1, 2], [3, 4]], [[0, 1], [1, 0]]).numpy()
    array([2, 3], dtype=int32)
    """
    if batch_dims != 0:
        raise NotImplementedError("gather_nd: batch_dims other than 0 is not supported yet.")
    return _gather_nd(_as_tensor(params), indices)


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Any:
    """A zero tensor of `shape` with `updates` added at `indices` (duplicates sum)."""
    return _scatter_nd(indices, _as_tensor(updates), _shape_tuple(shape, "scatter_nd"))


# --- tensor_scatter_nd_update / add / sub -------------------------------------------------------


def _check_updates(tensor: Any, indices: Any, updates: Any, opname: str) -> None:
    """updates.shape must be indices.shape[:-1] + tensor.shape[depth:] (TF's rule)."""
    if indices.ndim == 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: indices must have rank >= 1, got a scalar."
        )
    depth = indices.shape[-1]
    want = tuple(indices.shape[:-1]) + tuple(tensor.shape[depth:])
    if tuple(updates.shape) != want:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: updates must have shape indices.shape[:-1] + tensor.shape[{depth}:] = "
            f"{list(want)} for a tensor of shape {list(tensor.shape)} and indices of shape "
            f"{list(indices.shape)}, got {list(updates.shape)}.",
        )
    if tensor.dtype != updates.dtype:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: tensor and updates must have the same dtype, got "
            f"{dtypes.from_numpy(tensor.dtype).name} and {dtypes.from_numpy(updates.dtype).name}.",
        )


@op("tensor_scatter_nd_update", 3, same_dtype=False)
def _tensor_scatter_update(xp: Any, tensor: Any, indices: Any, updates: Any) -> Any:
    _check_updates(tensor, indices, updates, "tensor_scatter_nd_update")
    out = tensor.copy()
    out[_nd_key(xp, tensor.shape, indices, "tensor_scatter_nd_update")] = updates
    return out


@_tensor_scatter_update.grad
def _(dy: Any, out: Any, tensor: Any, indices: Any, updates: Any) -> Any:
    # TF's rule: the overwritten places get no gradient; each update gets dy at its index.
    gt = _tensor_scatter_update(dy, indices, zeros_like(updates)) if input_needed(0) else None
    return gt, None, _gather_nd(dy, indices) if input_needed(2) else None


@op("tensor_scatter_nd_add", 3, same_dtype=False)
def _tensor_scatter_add(xp: Any, tensor: Any, indices: Any, updates: Any) -> Any:
    _check_updates(tensor, indices, updates, "tensor_scatter_nd_add")
    out = tensor.copy()
    xp.add.at(out, _nd_key(xp, tensor.shape, indices, "tensor_scatter_nd_add"), updates)
    return out


@_tensor_scatter_add.grad
def _(dy: Any, out: Any, tensor: Any, indices: Any, updates: Any) -> Any:
    return dy, None, _gather_nd(dy, indices) if input_needed(2) else None


def _scatter_args(tensor: Any, updates: Any) -> tuple[Any, Any]:
    t = _as_tensor(tensor)
    if not isinstance(updates, TensorLike):  # a Python value takes the tensor's dtype, as in TF
        updates = Tensor(t._device.xp.asarray(np.asarray(updates), dtype=t._data.dtype), t._device)
    return t, updates


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any,
                             name: str | None = None) -> Any:  # fmt: skip
    """A copy of `tensor` with the slices at `indices` replaced by `updates`.

    >>> import layerflow as tf
    >>> tf.tensor_scatter_nd_update([1, 2, 3, 4], [[1], [3]], [9, 7]).numpy()
    array([1, 9, 3, 7], dtype=int32)
    """
    t, u = _scatter_args(tensor, updates)
    return _tensor_scatter_update(t, indices, u)


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Any:  # fmt: skip
    """A copy of `tensor` with `updates` added at `indices` (repeated indices add up).

    >>> import layerflow as tf
    >>> tf.tensor_scatter_nd_add([1, 2, 3], [[0], [0], [2]], [10, 10, 5]).numpy()
    array([21,  2,  8], dtype=int32)
    """
    t, u = _scatter_args(tensor, updates)
    return _tensor_scatter_add(t, indices, u)


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Any:  # fmt: skip
    """A copy of `tensor` with `updates` subtracted at `indices`.

    >>> import layerflow as tf
    >>> tf.tensor_scatter_nd_sub([5, 5], [[1]], [2]).numpy()
    array([5, 3], dtype=int32)
    """
    t, u = _scatter_args(tensor, updates)
    return _tensor_scatter_add(t, indices, -u)


# --- embedding_lookup -------------------------------------------------------------------------


def embedding_lookup(params: Any, ids: Any, max_norm: Any = None, name: str | None = None) -> Any:
    """Rows of `params` at `ids` (a gather on axis 0); output shape ids.shape + params.shape[1:].

    `params` may be a list of shards split along axis 0 by TF's "div" strategy (contiguous ids,
    the first `(max_id + 1) % len(params)` shards one row longer). With `max_norm`, each looked-up
    embedding whose L2 norm exceeds it is scaled down to that norm.

    A Python list is a list of shards, as in TF; pass one table as a tensor:

    >>> import layerflow as tf
    >>> table = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> tf.nn.embedding_lookup(table, [2, 0]).numpy()
    array([[5., 6.],
           [1., 2.]], dtype=float32)
    """
    if isinstance(params, list | tuple):
        shards = [_as_tensor(p) for p in params]
        if not shards:
            raise ValueError("embedding_lookup: params is an empty list; pass at least one tensor.")
        sizes = [int(p._data.shape[0]) if p._data.ndim else -1 for p in shards]
        total, n = sum(sizes), len(shards)
        expected = [total // n + (1 if i < total % n else 0) for i in range(n)]
        if sizes != expected:
            raise ValueError(
                f"embedding_lookup: shards of sizes {sizes} along axis 0 do not follow the 'div' "
                f"partition strategy, which splits {total} ids as {expected}."
            )
        table = shards[0] if n == 1 else concat(shards, axis=0)
    else:
        table = _as_tensor(params)
    if table._data.ndim == 0:
        raise ValueError("embedding_lookup: params must have rank >= 1, got a scalar.")
    out = _gather(table, ids, 0)
    if max_norm is None:
        return out
    rank_ids = out._data.ndim - (table._data.ndim - 1)
    axes = list(range(rank_ids, out._data.ndim))
    return clip_by_norm(out, max_norm, axes=axes) if axes else out


# --- boolean_mask ---------------------------------------------------------------------------------


def boolean_mask(tensor: Any, mask: Any, axis: Any = None, name: str | None = None) -> Any:
    """The elements (or slices) of `tensor` where the bool `mask` is True.

    >>> import layerflow as tf
    >>> tf.boolean_mask([1, 2, 3, 4], [True, False, True, False]).numpy()
    array([1, 3], dtype=int32)
    """
    t = _as_tensor(tensor)
    m = _as_tensor(mask)
    if m._data.dtype.kind != "b":
        raise TypeError(f"boolean_mask: mask must be a bool tensor, got {m.dtype.name}.")
    k = m._data.ndim
    ax = 0 if axis is None else _norm_axis(axis, t._data.ndim, "boolean_mask")[0]
    shape = tuple(t._data.shape)
    if k == 0 or shape[ax : ax + k] != tuple(m._data.shape):
        raise errors.InvalidArgumentError(
            None,
            "boolean_mask",
            f"boolean_mask: the mask's shape {tuple(m._data.shape)} must match dimensions "
            f"{ax}..{ax + k - 1} of the tensor's shape {shape}.",
        )
    flat = reshape(t, shape[:ax] + (-1,) + shape[ax + k :])
    xp = m._device.xp
    idx = Tensor(xp.nonzero(m._data.reshape(-1))[0].astype(np.int64), m._device)
    return _gather(flat, idx, ax)


# --- one_hot --------------------------------------------------------------------------------------


def _one_hot_spec(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
                  axis: Any = None, dtype: Any = None, name: Any = None) -> ArraySpec:  # fmt: skip
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
    elif hasattr(on_value, "dtype"):
        dt = dtypes.as_dtype(on_value.dtype)
    else:
        is_int = isinstance(on_value, int) and not isinstance(on_value, bool)
        dt = dtypes.int32 if is_int else dtypes.float32
    shape = list(indices.shape)
    ax = -1 if axis is None else as_int(axis, "axis", "one_hot")
    shape.insert(len(shape) if ax == -1 else ax, as_int(depth, "depth", "one_hot"))
    return ArraySpec(shape, dt.np)


@public_api("one_hot", spec=_one_hot_spec)
def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
            axis: Any = None, dtype: Any = None, name: str | None = None) -> Tensor:  # fmt: skip
    """One-hot vectors (float32 unless `dtype` or the on/off values say otherwise); indices
    outside [0, depth) give all-off rows, as in TF.

    >>> import layerflow as tf
    >>> tf.one_hot([0, 2], 3).numpy()
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    idx = _as_tensor(indices)
    _check_index_dtype(idx._data, "one_hot")
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
    elif isinstance(on_value, TensorLike):
        dt = on_value.dtype
    elif isinstance(on_value, int) and not isinstance(on_value, bool):
        dt = dtypes.int32
    else:
        dt = dtypes.float32
    xp = idx._device.xp
    on = 1 if on_value is None else _host_value(on_value)
    off = 0 if off_value is None else _host_value(off_value)
    depth = as_int(depth, "depth", "one_hot")
    hot = idx._data[..., None] == xp.arange(depth)
    out = xp.where(hot, xp.asarray(on, dtype=dt.np), xp.asarray(off, dtype=dt.np))
    if axis is not None and as_int(axis, "axis", "one_hot") != -1:
        out = xp.moveaxis(out, -1, _norm_axis(axis, out.ndim, "one_hot")[0])
    return Tensor(out, idx._device)


def _host_value(v: Any) -> Any:
    return backend.to_host(v._data) if isinstance(v, TensorLike) else v
