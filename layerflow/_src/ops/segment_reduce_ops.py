"""Segment reductions beyond the sum: max, min, prod, mean and sqrt_n, sorted and unsorted, and
`confusion_matrix` (a segment sum of weights).

Two primitives, unsorted segment max/min and unsorted segment prod, carry TF's gradients (ties
share the gradient of a max; a product's gradient handles zeros); everything else is composed
from them and from `segment_ops`' unsorted_segment_sum and its gather.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.elementwise_more_ops import truncatediv
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _real_div,
    cast,
    equal,
    greater,
    maximum,
    multiply,
    ones_like,
    reshape,
    sqrt,
    where,
    zeros_like,
)
from layerflow._src.ops.segment_ops import (
    _int_ids,
    _scalar_int,
    _segment_gather,
    _segment_sum,
)


def _rows(xp: Any, data: Any, ids: Any, num_segments: int, opname: str) -> tuple[Any, Any]:
    """The kept segment ids (flat) and their rows of `data`, after TF's checks."""
    k = ids.ndim
    if tuple(data.shape[:k]) != tuple(ids.shape):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: segment_ids shape {list(ids.shape)} must be a prefix of the data shape "
            f"{list(data.shape)}.",
        )
    flat = ids.reshape(-1)
    if flat.size and bool(xp.any(flat >= num_segments)):
        bad = int(backend.to_host(flat[flat >= num_segments])[0])
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: segment id {bad} is out of range [0, {num_segments}); raise "
            "num_segments or fix the ids.",
        )
    rows = data.reshape((flat.size,) + data.shape[k:])
    keep = flat >= 0  # negative ids are dropped, as in TF
    return flat[keep], rows[keep]


def _lowest(dt: Any) -> Any:
    return np.finfo(dt).min if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt: Any) -> Any:
    return np.finfo(dt).max if dt.kind == "f" else np.iinfo(dt).max


def _extremum(name: str, ufunc: str, fill: Any) -> Any:
    @op(name, 2, same_dtype=False)
    def forward(xp: Any, data: Any, ids: Any, num_segments: int) -> Any:
        if data.dtype.kind not in "iuf":
            raise errors.InvalidArgumentError(
                None, name, f"{name}: data must be a real number tensor, got {data.dtype}."
            )
        flat, rows = _rows(xp, data, ids, num_segments, name)
        out = xp.full((num_segments,) + data.shape[ids.ndim :], fill(data.dtype), data.dtype)
        getattr(xp, ufunc).at(out, flat, rows)
        return out

    @forward.grad
    def _(dy: Any, out: Any, data: Any, ids: Any, num_segments: int) -> Any:
        # TF's UnsortedSegmentMinOrMaxGrad: the elements equal to their segment's extremum
        # share its gradient equally.
        kept = _ids_kept(ids, data)
        chosen = cast(equal(data, _segment_gather(out, ids)), data._data.dtype)
        chosen = multiply(chosen, kept)
        count = _segment_sum(chosen, ids, num_segments)
        share = _real_div(dy, maximum(count, ones_like(count)))
        return multiply(chosen, _segment_gather(share, ids)), None

    return forward


def _ids_kept(ids: Any, data: Any) -> Any:
    """1.0 where an element's id is kept (>= 0), broadcast over data's trailing axes."""
    a = ids._data
    kept = (a >= 0).astype(data._data.dtype).reshape(a.shape + (1,) * (data._data.ndim - a.ndim))
    return Tensor(kept, ids._device)


_unsorted_max = _extremum("unsorted_segment_max", "maximum", _lowest)
_unsorted_min = _extremum("unsorted_segment_min", "minimum", _highest)


@op("unsorted_segment_prod", 2, same_dtype=False)
def _unsorted_prod(xp: Any, data: Any, ids: Any, num_segments: int) -> Any:
    flat, rows = _rows(xp, data, ids, num_segments, "unsorted_segment_prod")
    out = xp.ones((num_segments,) + data.shape[ids.ndim :], data.dtype)
    xp.multiply.at(out, flat, rows)
    return out


@_unsorted_prod.grad
def _(dy: Any, out: Any, data: Any, ids: Any, num_segments: int) -> Any:
    # TF's UnsortedSegmentProdGrad: d prod / d x_i = prod / x_i, except where x_i is the one
    # zero of its segment (the product of the others); two zeros make every derivative 0.
    zero = equal(data, zeros_like(data))
    num_zeros = _segment_sum(cast(zero, data._data.dtype), ids, num_segments)
    dy = where(greater(num_zeros, 1.0), zeros_like(dy), dy)
    nonzero_data = where(zero, ones_like(data), data)
    nonzero_prod = _unsorted_prod(nonzero_data, ids, num_segments)
    by_element = _real_div(_segment_gather(out, ids), nonzero_data)
    partial = where(zero, _segment_gather(nonzero_prod, ids), by_element)
    return multiply(_segment_gather(dy, ids), partial), None


def _unsorted_args(data: Any, segment_ids: Any, num_segments: Any, opname: str) -> Any:
    d = _as_tensor(data)
    ids = _int_ids(segment_ids, opname)
    n = _scalar_int(num_segments, opname, "num_segments")
    if n < 0:
        raise errors.InvalidArgumentError(None, opname, f"{opname}: num_segments={n} < 0.")
    return d, ids, n


def _sorted_args(data: Any, segment_ids: Any, opname: str) -> Any:
    """data, ids, the number of segments and a host mask of the non-empty ones."""
    d = _as_tensor(data)
    ids = _int_ids(segment_ids, opname)
    host = backend.to_host(ids._data)
    rows = d._data.shape[0] if d._data.ndim else None
    if host.ndim != 1 or host.shape[0] != rows:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: segment_ids must be a vector with one id per row of data (shape "
            f"{list(d.shape)}), got shape {list(host.shape)}.",
        )
    if host.size and (host[0] < 0 or bool(np.any(np.diff(host) < 0))):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: segment ids must be non-negative and sorted (increasing), got "
            f"{host.tolist()}; use tf.math.unsorted_{opname} for ids in any order.",
        )
    n = int(host[-1]) + 1 if host.size else 0
    return d, ids, n, np.bincount(host, minlength=n) > 0


def _zero_empty(out: Any, nonempty: Any) -> Any:
    """Empty segments of a sorted segment max/min are 0 in TF (not the dtype's extreme)."""
    if bool(nonempty.all()):
        return out
    shape = (nonempty.size,) + (1,) * (out._data.ndim - 1)
    mask = Tensor(backend.to_device(nonempty.reshape(shape), out._device), out._device)
    return where(mask, out, zeros_like(out))


def _counts(d: Any, ids: Any, n: int) -> Any:
    """How many rows each segment has, shaped to broadcast against a segment reduction."""
    ones = Tensor(d._device.xp.ones(ids._data.shape, dtype=d._data.dtype), d._device)
    count = _segment_sum(ones, ids, n)
    return reshape(count, [n] + [1] * (d._data.ndim - ids._data.ndim))


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Any:  # fmt: skip
    """The maximum of the slices of `data` that share a segment id; an empty segment holds the
    dtype's lowest value. Negative ids are dropped.

    >>> import layerflow as tf
    >>> tf.math.unsorted_segment_max([1, 5, 3], [0, 0, 2], num_segments=3).numpy()
    array([          5, -2147483648,           3], dtype=int32)
    """
    return _unsorted_max(*_unsorted_args(data, segment_ids, num_segments, "unsorted_segment_max"))


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Any:  # fmt: skip
    """The minimum per segment; an empty segment holds the dtype's largest value."""
    return _unsorted_min(*_unsorted_args(data, segment_ids, num_segments, "unsorted_segment_min"))


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Any:  # fmt: skip
    """The product per segment; an empty segment holds 1.

    >>> import layerflow as tf
    >>> tf.math.unsorted_segment_prod([2.0, 3.0, 4.0], [1, 1, 0], num_segments=3).numpy()
    array([4., 6., 1.], dtype=float32)
    """
    return _unsorted_prod(*_unsorted_args(data, segment_ids, num_segments, "unsorted_segment_prod"))


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Any:  # fmt: skip
    """The mean per segment (0 for an empty one). Integer data gives float64 means, as TF's
    sum-then-divide does.

    >>> import layerflow as tf
    >>> tf.math.unsorted_segment_mean([1.0, 2.0, 3.0], [0, 0, 2], num_segments=3).numpy()
    array([1.5, 0. , 3. ], dtype=float32)
    """
    d, ids, n = _unsorted_args(data, segment_ids, num_segments, "unsorted_segment_mean")
    if d._data.dtype.kind in "iu":
        d = cast(d, "float64")
    count = _counts(d, ids, n)
    return _real_div(_segment_sum(d, ids, n), maximum(count, ones_like(count)))


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: str | None = None) -> Any:  # fmt: skip
    """The sum per segment divided by the square root of its size (0 for an empty one);
    float and complex data only.

    >>> import layerflow as tf
    >>> tf.math.unsorted_segment_sqrt_n([1.0, 3.0], [0, 0], num_segments=1).numpy()
    array([2.828427], dtype=float32)
    """
    d, ids, n = _unsorted_args(data, segment_ids, num_segments, "unsorted_segment_sqrt_n")
    if d._data.dtype.kind not in "fc":
        raise errors.InvalidArgumentError(
            None,
            "unsorted_segment_sqrt_n",
            f"unsorted_segment_sqrt_n: data must be a float tensor, got {d.dtype.name}; cast "
            "it with tf.cast.",
        )
    count = _counts(d, ids, n)
    return _real_div(_segment_sum(d, ids, n), sqrt(maximum(count, ones_like(count))))


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """The maximum of the rows of `data` that share a (sorted) segment id; empty segments 0.

    >>> import layerflow as tf
    >>> tf.math.segment_max([1.0, 2.0], [0, 2]).numpy()
    array([1., 0., 2.], dtype=float32)
    """
    d, ids, n, nonempty = _sorted_args(data, segment_ids, "segment_max")
    return _zero_empty(_unsorted_max(d, ids, n), nonempty)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """The minimum of the rows that share a (sorted) segment id; empty segments 0."""
    d, ids, n, nonempty = _sorted_args(data, segment_ids, "segment_min")
    return _zero_empty(_unsorted_min(d, ids, n), nonempty)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """The product of the rows that share a (sorted) segment id; empty segments 1."""
    d, ids, n, _ = _sorted_args(data, segment_ids, "segment_prod")
    return _unsorted_prod(d, ids, n)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """The mean of the rows that share a (sorted) segment id; empty segments 0. Integer data
    keeps its dtype (the mean is truncated toward zero).

    >>> import layerflow as tf
    >>> tf.math.segment_mean([1, 2, 4], [0, 0, 2]).numpy()
    array([1, 0, 4], dtype=int32)
    """
    d, ids, n, _ = _sorted_args(data, segment_ids, "segment_mean")
    count = _counts(d, ids, n)
    total = _segment_sum(d, ids, n)
    safe = maximum(count, ones_like(count))
    if d._data.dtype.kind in "iu":
        return truncatediv(total, safe)
    return _real_div(total, safe)


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, weights: Any = None,
                     dtype: Any = "int32", name: str | None = None) -> Any:  # fmt: skip
    """The [num_classes, num_classes] matrix whose entry [i, j] counts (or sums the weights of)
    the examples with label i predicted as j. `num_classes` defaults to the largest label or
    prediction + 1.

    >>> import layerflow as tf
    >>> tf.math.confusion_matrix([1, 2, 2], [2, 2, 0], num_classes=3).numpy()
    array([[0, 0, 0],
           [0, 0, 1],
           [1, 0, 1]], dtype=int32)
    """
    lab = _int_ids(labels, "confusion_matrix", "labels")
    pred = _int_ids(predictions, "confusion_matrix", "predictions")
    lh, ph = (
        backend.to_host(lab._data).astype(np.int64),
        backend.to_host(pred._data).astype(np.int64),
    )
    if lh.ndim != 1 or lh.shape != ph.shape:
        raise ValueError(
            f"confusion_matrix: labels and predictions must be vectors of one length, got "
            f"shapes {list(lh.shape)} and {list(ph.shape)}."
        )
    for what, h in (("labels", lh), ("predictions", ph)):
        if h.size and int(h.min()) < 0:
            raise errors.InvalidArgumentError(
                None, "confusion_matrix", f"`{what}` contains negative values."
            )
    if num_classes is None:
        n = int(max(lh.max(initial=-1), ph.max(initial=-1))) + 1
    else:
        n = _scalar_int(_as_tensor(num_classes), "confusion_matrix", "num_classes")
        for what, h in (("labels", lh), ("predictions", ph)):
            if h.size and int(h.max()) >= n:
                raise errors.InvalidArgumentError(
                    None,
                    "confusion_matrix",
                    f"`{what}` out of bound: the largest is {int(h.max())}, but num_classes is "
                    f"{n}.",
                )
    dt = dtypes.as_dtype(dtype)
    ids = Tensor(backend.to_device(lh * n + ph, lab._device), lab._device)
    if weights is None:
        values = Tensor(lab._device.xp.ones(lh.shape, dtype=dt.np), lab._device)
    else:
        values = cast(_as_tensor(weights), dt)
        if tuple(values._data.shape) != lh.shape:
            raise ValueError(
                f"confusion_matrix: weights must have the shape of predictions {list(lh.shape)}, "
                f"got {list(values.shape)}."
            )
    return reshape(_segment_sum(values, ids, n * n), [n, n])


__all__ = [
    "confusion_matrix",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_prod",
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_sqrt_n",
]
