"""`approx_max_k`, `approx_min_k` and `tf.approx_top_k`: TF's approximate top-k, computed
exactly here (an exact answer meets every `recall_target`), along any axis, with top_k's
gradient."""

from __future__ import annotations

import collections
from typing import Any

from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, _norm_axis, negative
from layerflow._src.ops.reduce_ops import top_k

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
