"""`tf.math.cumulative_logsumexp`: a running log-sum-exp along an axis, with TF's gradient
(computed in log space, so large inputs do not overflow)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.ops.elementwise_more_ops import require_float
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _norm_axis,
    add,
    equal,
    exp,
    greater,
    less,
    log,
    negative,
    subtract,
    where,
    zeros_like,
)


@op("cumulative_logsumexp")
def _cumulative_logsumexp(xp: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    require_float(x, "cumulative_logsumexp")
    if reverse:
        x = xp.flip(x, axis)
    out = xp.logaddexp.accumulate(x, axis=axis)
    if exclusive:  # shift by one along the axis; the first entry is log(0) = -inf
        out = xp.roll(out, 1, axis=axis)
        first = [slice(None)] * x.ndim
        first[axis] = 0
        out[tuple(first)] = -np.inf
    if reverse:
        out = xp.flip(out, axis)
    return xp.ascontiguousarray(out)


@_cumulative_logsumexp.grad
def _(dy: Any, out: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    # TF's CumulativeLogsumexpGrad: split dy by sign so both parts can be summed in log space,
    # each a cumulative logsumexp in the opposite direction.
    ninf = zeros_like(dy) - np.inf
    zero = zeros_like(dy)
    log_pos = where(greater(dy, zero), log(where(greater(dy, zero), dy, zero + 1.0)), ninf)
    log_neg = where(less(dy, zero), log(where(less(dy, zero), negative(dy), zero + 1.0)), ninf)
    # An exclusive sum's empty first entry (out = -inf) depends on no x: -out is taken as -inf
    # there, so that its term vanishes instead of becoming -inf - (-inf) = NaN.
    neg_out = where(equal(out, ninf), ninf, negative(out))
    pos = exp(add(_cumulative_logsumexp(add(log_pos, neg_out), axis, exclusive, not reverse), x))
    neg = exp(add(_cumulative_logsumexp(add(log_neg, neg_out), axis, exclusive, not reverse), x))
    return subtract(pos, neg)


def cumulative_logsumexp(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None) -> Any:  # fmt: skip
    """log(cumsum(exp(x))) along `axis`, without overflow; `exclusive` leaves out each
    element itself (the first is -inf), `reverse` runs from the end.

    >>> import layerflow as tf
    >>> tf.math.cumulative_logsumexp([0.0, 0.0]).numpy()
    array([0.       , 0.6931472], dtype=float32)
    """
    t = _as_tensor(x)
    ax = _norm_axis(axis, t._data.ndim, "cumulative_logsumexp")[0]
    return _cumulative_logsumexp(t, ax, bool(exclusive), bool(reverse))


__all__ = ["cumulative_logsumexp"]
