"""Losses of `tf.nn` composed from layerflow ops: weighted sigmoid cross-entropy and the
Poisson log-likelihood loss."""

from __future__ import annotations

import math
from typing import Any

from layerflow._src.ops.elementwise_more_ops import xlogy
from layerflow._src.ops.math_ops import (
    _as_tensor,
    abs,
    add,
    cast,
    exp,
    greater,
    log,
    multiply,
    negative,
    relu,
    subtract,
    where,
    zeros_like,
)


def _pair(labels: Any, logits: Any, opname: str, names: tuple[str, str]) -> tuple[Any, Any]:
    z = _as_tensor(logits)
    if z._data.dtype.kind != "f":
        raise TypeError(f"{opname}: {names[1]} must be a float tensor, got {z.dtype.name}.")
    y = labels if hasattr(labels, "_data") else cast(labels, z.dtype)
    if tuple(y._data.shape) != tuple(z._data.shape):
        raise ValueError(
            f"{opname}: {names[0]} and {names[1]} must have the same shape, got "
            f"{list(y.shape)} and {list(z.shape)}."
        )
    return y, z


def weighted_cross_entropy_with_logits(labels: Any, logits: Any, pos_weight: Any,
                                       name: str | None = None) -> Any:  # fmt: skip
    """Sigmoid cross-entropy whose positive term is weighted by `pos_weight`:
    `labels * -log(sigmoid(logits)) * pos_weight + (1 - labels) * -log(1 - sigmoid(logits))`,
    computed without overflow.

    >>> import layerflow as tf
    >>> loss = tf.nn.weighted_cross_entropy_with_logits([1.0, 0.0], [0.0, 0.0], pos_weight=2.0)
    >>> [round(v, 4) for v in loss.numpy().tolist()]
    [1.3863, 0.6931]
    """
    y, z = _pair(labels, logits, "weighted_cross_entropy_with_logits", ("labels", "logits"))
    q = pos_weight if hasattr(pos_weight, "_data") else cast(pos_weight, z.dtype)
    log_weight = add(multiply(subtract(q, 1.0), y), 1.0)
    softplus_neg = add(_log1p_exp_neg_abs(z), relu(negative(z)))  # log(1 + exp(-z))
    return add(multiply(subtract(1.0, y), z), multiply(log_weight, softplus_neg))


def _log1p_exp_neg_abs(z: Any) -> Any:
    from layerflow._src.ops.elementwise_ops import log1p

    return log1p(exp(negative(abs(z))))


def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: str | None = None) -> Any:  # fmt: skip
    """The negative Poisson log-likelihood `exp(log_input) - log_input * targets`; with
    `compute_full_loss`, plus Stirling's approximation of log(targets!) where targets > 1.

    >>> import layerflow as tf
    >>> round(float(tf.nn.log_poisson_loss(2.0, 0.5)), 4)
    0.6487
    """
    t, c = _pair(targets, log_input, "log_poisson_loss", ("targets", "log_input"))
    result = subtract(exp(c), multiply(c, t))
    if compute_full_loss:
        big = greater(t, 1.0)
        safe = where(big, t, zeros_like(t) + 1.0)
        stirling = add(subtract(xlogy(t, t), t), multiply(log(multiply(safe, 2 * math.pi)), 0.5))
        result = add(result, where(big, stirling, zeros_like(t)))
    return result


__all__ = ["log_poisson_loss", "weighted_cross_entropy_with_logits"]
