"""`tf.nn.embedding_lookup_sparse` and `tf.nn.safe_embedding_lookup_sparse`: the combined
embeddings of each row of a SparseTensor of ids (optionally weighted).

Composed from `embedding_lookup` (a gather) and segment sums. The gradient with respect to
the embedding table is therefore a dense tensor (the gather's gradient, duplicate ids added
up), which every optimizer applies as any other gradient; TF hands an `IndexedSlices` there,
whose dense value is the same, so training matches TF's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.compare_ops import cast
from layerflow._src.ops.core_ops import reshape
from layerflow._src.ops.gather_ops import embedding_lookup
from layerflow._src.ops.math_ops import sqrt, where
from layerflow._src.ops.segment_ops import unsorted_segment_sum
from layerflow._src.ops.sparse_more_ops import fill_empty_rows
from layerflow._src.ops.sparse_ops import _err, check_sparse, index_tensor, retain
from layerflow._src.ops.sparse_ops import reshape as sparse_reshape

_COMBINERS = ("sum", "mean", "sqrtn")


def _expand(x: Any, rank: int) -> Any:
    return reshape(x, [-1] + [1] * (rank - 1))


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any, combiner: Any = None,
                            max_norm: Any = None, name: str | None = None,
                            allow_fast_lookup: bool = False) -> Any:  # fmt: skip
    """Per row `r` of `sp_ids`, the `combiner` ("sum", "mean" (default), "sqrtn") of the
    embeddings `params[id]` of the row's ids, weighted by `sp_weights` (same indices) when
    given. The output has `max(row) + 1` rows (rows with no ids are zero), as in TF.

    >>> import layerflow as tf
    >>> table = tf.constant([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    >>> ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([0, 2, 1], tf.int64), [2, 2])
    >>> tf.nn.embedding_lookup_sparse(table, ids, None, combiner="sum").numpy().tolist()
    [[3.0, 2.0], [0.0, 1.0]]
    """
    combiner = "mean" if combiner is None else combiner
    if combiner not in _COMBINERS:
        raise ValueError(
            f"embedding_lookup_sparse: combiner must be one of {_COMBINERS}, got {combiner!r}."
        )
    sp_ids = check_sparse(sp_ids, "embedding_lookup_sparse", "sp_ids")
    if not sp_ids.dtype.is_integer:
        raise TypeError(
            f"embedding_lookup_sparse: sp_ids must hold integer ids, got {sp_ids.dtype.name}."
        )
    indices = sp_ids.host_indices()
    rows = indices[:, 0] if indices.shape[1] else np.zeros(indices.shape[0], np.int64)
    if rows.size and np.any(np.diff(rows) < 0):
        raise _err(
            "SparseSegmentSum",
            "segment ids are not increasing: sp_ids must be in row-major order; use "
            "tf.sparse.reorder(sp_ids) first.",
        )
    n = int(rows[-1]) + 1 if rows.size else 0
    emb = embedding_lookup(params, sp_ids.values, max_norm=max_norm)
    seg = index_tensor(rows, emb)
    rank = emb.shape.rank
    if sp_weights is None:
        total = unsorted_segment_sum(emb, seg, n)
        if combiner == "sum":
            return total
        ones = cast(index_tensor(np.ones(rows.size, np.int64), emb), emb.dtype)
        count = unsorted_segment_sum(ones, seg, n)
        denom = count if combiner == "mean" else sqrt(count)
        return total / _expand(_safe(denom), rank)
    sp_weights = check_sparse(sp_weights, "embedding_lookup_sparse", "sp_weights")
    if sp_weights.host_shape() != sp_ids.host_shape() or not np.array_equal(
        sp_weights.host_indices(), indices
    ):
        raise ValueError(
            "embedding_lookup_sparse: sp_weights must have the same indices and dense_shape as "
            f"sp_ids, got shapes {sp_weights.shape} and {sp_ids.shape}."
        )
    w = sp_weights.values
    if w.dtype != emb.dtype:
        w = cast(w, emb.dtype)
    total = unsorted_segment_sum(emb * _expand(w, rank), seg, n)
    if combiner == "sum":
        return total
    wsum = unsorted_segment_sum(w if combiner == "mean" else w * w, seg, n)
    denom = wsum if combiner == "mean" else sqrt(wsum)
    return total / _expand(_safe(denom), rank)


def _safe(denom: Any) -> Any:
    """1 where a row has no ids (its sum is 0 anyway), so empty rows give 0 and not NaN."""
    xp = denom._device.xp
    one = xp.ones((), denom._data.dtype)
    return where(denom == 0, Tensor(one, denom._device), denom)


def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any,
                                 sparse_weights: Any = None, combiner: str = "mean",
                                 default_id: Any = None, max_norm: Any = None,
                                 name: str | None = None,
                                 allow_fast_lookup: bool = False) -> Any:  # fmt: skip
    """`embedding_lookup_sparse` that tolerates invalid ids (< 0, dropped), non-positive
    weights (dropped) and empty rows (zero, or the `default_id` embedding), for ids of any
    rank >= 2: the output has shape `sparse_ids.dense_shape[:-1] + [embedding dim]`.

    >>> import layerflow as tf
    >>> table = tf.constant([[1.0, 0.0], [0.0, 1.0]])
    >>> ids = tf.SparseTensor([[0, 0], [2, 0]], tf.constant([1, -1], tf.int64), [3, 2])
    >>> tf.nn.safe_embedding_lookup_sparse(table, ids).numpy().tolist()
    [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    """
    if combiner not in _COMBINERS:
        raise ValueError(
            f"safe_embedding_lookup_sparse: combiner must be one of {_COMBINERS}, got {combiner!r}."
        )
    ids = check_sparse(sparse_ids, "safe_embedding_lookup_sparse", "sparse_ids")
    shape = ids.host_shape()
    if len(shape) < 2:
        raise ValueError(
            f"safe_embedding_lookup_sparse: sparse_ids must have rank >= 2, got shape {shape}."
        )
    batch = list(shape[:-1])
    flat_rows = int(np.prod(batch, dtype=np.int64))
    weights = None
    if sparse_weights is not None:
        weights = check_sparse(sparse_weights, "safe_embedding_lookup_sparse", "sparse_weights")
    if len(shape) > 2:
        ids = sparse_reshape(ids, [flat_rows, shape[-1]])
        if weights is not None:
            weights = sparse_reshape(weights, [flat_rows, shape[-1]])
    keep = np.asarray(backend.to_host(ids.values._data)) >= 0
    if weights is not None:
        keep &= np.asarray(backend.to_host(weights.values._data)) > 0
    ids = retain(ids, keep)
    if weights is not None:
        weights = retain(weights, keep)
    ids, empty = fill_empty_rows(ids, 0 if default_id is None else int(default_id))
    if weights is not None:
        weights, _ = fill_empty_rows(weights, 1.0)
    out = embedding_lookup_sparse(embedding_weights, ids, weights, combiner=combiner,
                                  max_norm=max_norm)  # fmt: skip
    if default_id is None:
        zero = cast(empty, out.dtype)
        out = out * _expand(1 - zero, out.shape.rank)
    return reshape(out, batch + out.shape.as_list()[1:])


__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]
