"""Ops that order elements: `sort`, `argsort`, `top_k`, `unique`, and `approx_max_k`,
`approx_min_k` and `tf.approx_top_k` (TF's approximate top-k, computed exactly here: an exact
answer meets every `recall_target`, along any axis, with top_k's gradient)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import as_int
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, _norm_axis, cast, negative

# --- sorting --------------------------------------------------------------------------------------


@op("take_along_axis", 2, same_dtype=False)
def _take_along(xp: Any, x: Any, idx: Any, axis: int) -> Any:
    return xp.take_along_axis(x, idx, axis=axis)


@_take_along.grad
def _(dy: Any, out: Any, x: Any, idx: Any, axis: int) -> Any:
    return _put_along(dy, idx, tuple(x._data.shape), axis), None


@op("put_along_axis", 2, same_dtype=False)
def _put_along(xp: Any, dy: Any, idx: Any, shape: tuple[int, ...], axis: int) -> Any:
    out = xp.zeros(shape, dtype=dy.dtype)
    # Indices along `axis` are unique per row (they come from a sort), so plain assignment sums.
    xp.put_along_axis(out, idx, dy, axis=axis)
    return out


@_put_along.grad
def _(ddx: Any, out: Any, dy: Any, idx: Any, shape: Any, axis: int) -> Any:
    return _take_along(ddx, idx, axis), None


@op("argsort")
def _argsort(xp: Any, x: Any, axis: int, descending: bool) -> Any:
    if x.dtype.kind not in "iufV":
        # TF sorts real numbers only (its sort negates, then runs TopKV2): strings, bools and
        # complex numbers are refused rather than ordered by NumPy's rules.
        name = dtypes.from_numpy(x.dtype).name
        raise errors.InvalidArgumentError(
            None,
            "argsort",
            f"sort/argsort: a tensor of dtype {name} is not allowed; only integer and real "
            "float tensors can be sorted. For strings, sort on the host (sorted(x.numpy())) or "
            "map them to numbers first (e.g. tf.strings.to_hash_bucket_fast).",
        )
    if descending:
        # Negate rather than reverse, so equal values keep ascending index order (TF's rule);
        # integers by bitwise not (~x = -x - 1), which cannot overflow at the dtype's minimum.
        key = ~x if x.dtype.kind in "iub" else -x
    else:
        key = x
    return xp.argsort(key, axis=axis, kind="stable").astype(np.int32)


def _direction(direction: str, opname: str) -> bool:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(
            f"{opname}: direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}."
        )
    return direction == "DESCENDING"


def argsort(values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Any:  # fmt: skip
    """Indices (int32) that sort `values` along `axis`; ties keep their order.

    >>> import layerflow as tf
    >>> tf.argsort([3, 1, 2]).numpy()
    array([1, 2, 0], dtype=int32)
    """
    x = _as_tensor(values)
    ax = _norm_axis(axis, x._data.ndim, "argsort")[0]
    return _argsort(x, ax, _direction(direction, "argsort"))


def sort(values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None) -> Any:
    """`values` sorted along `axis` (differentiable: the gradient follows each element).

    >>> import layerflow as tf
    >>> tf.sort([3.0, 1.0, 2.0], direction="DESCENDING").numpy()
    array([3., 2., 1.], dtype=float32)
    """
    x = _as_tensor(values)
    ax = _norm_axis(axis, x._data.ndim, "sort")[0]
    idx = _argsort(x, ax, _direction(direction, "sort"))
    return _take_along(x, idx, ax)


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input: Any, k: int = 1, sorted: bool = True, index_type: Any = "int32",  # noqa: A002
          name: str | None = None) -> TopKV2:  # fmt: skip
    """The `k` largest entries of the last axis and their indices (lower index first on ties).

    NaN ranks below every number, -inf included. With k=1 that is TF's result; for k > 1, TF's
    order of NaN entries depends on k and on their positions (its sort has no order for NaN),
    so layerflow keeps this one rule.

    >>> import layerflow as tf
    >>> tf.math.top_k([1.0, 5.0, 3.0], k=2).indices.numpy()
    array([1, 2], dtype=int32)
    """
    x = _as_tensor(input)
    if x._data.ndim == 0:
        raise errors.InvalidArgumentError(None, "top_k", "top_k needs a tensor of rank >= 1.")
    n = x._data.shape[-1]
    k = as_int(k, "k", "top_k")
    if not 0 <= k <= n:
        raise errors.InvalidArgumentError(
            None, "top_k", f"top_k: k={k} must be in [0, {n}] for a last axis of size {n}."
        )
    order = _argsort(x, x._data.ndim - 1, True)
    idx = Tensor(order._data[..., :k], order._device)
    values = _take_along(x, idx, x._data.ndim - 1)
    return TopKV2(values, cast(idx, index_type))


UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])


def unique(x: Any, out_idx: Any = "int32", name: str | None = None) -> UniqueOutput:
    """The distinct values of a 1-D tensor in order of first appearance, and for each element
    the index of its value in that list.

    >>> import layerflow as tf
    >>> y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    >>> y.numpy(), idx.numpy()
    (array([1, 2, 4, 7, 8], dtype=int32), array([0, 0, 1, 2, 2, 2, 3, 4, 4], dtype=int32))
    """
    t = _as_tensor(x)
    if t._data.ndim != 1:
        raise errors.InvalidArgumentError(
            None, "unique", f"unique expects a 1-D tensor, got shape {t.shape}."
        )
    xp = t._device.xp
    vals, first, inverse = xp.unique(t._data, return_index=True, return_inverse=True)
    order = xp.argsort(first, kind="stable")  # sorted unique values -> first-appearance order
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.size)
    dt = dtypes.as_dtype(out_idx).np
    y = Tensor(vals[order], t._device)
    return UniqueOutput(y, Tensor(rank[inverse.reshape(-1)].astype(dt), t._device))


ApproxTopK = collections.namedtuple("ApproxTopK", ["values", "indices"])


def approx_top_k(input: Any, k: int, reduction_dimension: int = -1,  # noqa: A002 - TF's name
                 recall_target: float = 0.95, is_max_k: bool = True,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
                 name: str | None = None) -> ApproxTopK:  # fmt: skip
    """The `k` largest (`is_max_k`) or smallest entries along `reduction_dimension`, sorted,
    and their int32 indices.

    >>> import layerflow as tf
    >>> tf.approx_top_k([[1.0, 5.0, 3.0]], 2).values.numpy()
    array([[5., 3.]], dtype=float32)
    """
    if not 0 < float(recall_target) <= 1:
        raise ValueError(f"approx_top_k: recall_target must be in (0, 1], got {recall_target}.")
    x = _as_tensor(input)
    rank = x._data.ndim
    if rank == 0:
        raise errors.InvalidArgumentError(
            None, "approx_top_k", "approx_top_k needs an operand of rank >= 1."
        )
    axis = _norm_axis(reduction_dimension, rank, "approx_top_k")[0]
    perm = [i for i in range(rank) if i != axis] + [axis]
    moved = x if axis == rank - 1 else transpose(x, perm)
    values, indices = top_k(moved if is_max_k else negative(moved), k=k)
    if not is_max_k:
        values = negative(values)
    if axis != rank - 1:
        back = [0] * rank
        for i, p in enumerate(perm):
            back[p] = i
        values, indices = transpose(values, back), transpose(indices, back)
    return ApproxTopK(values, indices)


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
                 name: str | None = None) -> ApproxTopK:  # fmt: skip
    """The `k` largest entries along `reduction_dimension` and their indices.

    >>> import layerflow as tf
    >>> tf.math.approx_max_k([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], 2).indices.numpy()
    array([[1, 2],
           [2, 0]], dtype=int32)
    """
    return approx_top_k(operand, k, reduction_dimension, recall_target, True)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
                 name: str | None = None) -> ApproxTopK:  # fmt: skip
    """The `k` smallest entries along `reduction_dimension` (ascending) and their indices.

    >>> import layerflow as tf
    >>> x = [[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]]
    >>> tf.math.approx_min_k(x, 1, reduction_dimension=0).values.numpy()
    array([[1., 2., 3.]], dtype=float32)
    """
    return approx_top_k(operand, k, reduction_dimension, recall_target, False)


__all__ = ["approx_max_k", "approx_min_k", "approx_top_k"]
