"""Keras backend activations, cross-entropies and random tensors."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.keras.backend_api.math_api import _t
from layerflow._src.keras.backend_api.session_api import variable
from layerflow._src.keras.engine.backend_config import epsilon, floatx
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    core_ops,
    elementwise_ops,
    math_ops,
    nn_ops,
    normalization_ops,
    random_ops,
    segment_ops,
)

_TF_RNG = {"enabled": False}


def is_tf_random_generator_enabled() -> bool:
    return _TF_RNG["enabled"]


def enable_tf_random_generator() -> None:
    _TF_RNG["enabled"] = True


def disable_tf_random_generator() -> None:
    _TF_RNG["enabled"] = False


def relu(x: Any, alpha: float = 0.0, max_value: Any = None, threshold: float = 0.0) -> Any:
    """Rectified linear unit with Keras's `alpha` (negative slope), `max_value`, `threshold`.

    >>> relu([-1.0, 0.5, 3.0], max_value=1.0).numpy()
    array([0. , 0.5, 1. ], dtype=float32)
    """
    x = _t(x)
    if alpha != 0.0:
        if max_value is None and threshold == 0:
            return nn_ops.leaky_relu(x, alpha=alpha)
        negative_part = math_ops.relu(-x + threshold) if threshold != 0 else math_ops.relu(-x)
    clip_max = max_value is not None
    if threshold != 0:
        x = x * compare_ops.cast(compare_ops.greater(x, threshold), dtype=x.dtype)
    elif max_value == 6:
        x = nn_ops.relu6(x)
        clip_max = False
    else:
        x = math_ops.relu(x)
    if clip_max:
        x = elementwise_ops.clip_by_value(
            x, array_ops.constant(0, dtype=x.dtype), array_ops.constant(max_value, dtype=x.dtype)
        )
    if alpha != 0.0:
        x = x - array_ops.constant(alpha, dtype=x.dtype) * negative_part
    return x


def elu(x: Any, alpha: float = 1.0) -> Any:
    x = _t(x)
    res = nn_ops.elu(x)
    return res if alpha == 1 else math_ops.where(x > 0, res, alpha * res)


def softmax(x: Any, axis: Any = -1) -> Any:
    x = _t(x)
    if x.shape.rank <= 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    if isinstance(axis, int):
        return nn_ops.softmax(x, axis=axis)
    numerator = math_ops.exp(x - core_ops.reduce_max(x, axis=axis, keepdims=True))
    return numerator / core_ops.reduce_sum(numerator, axis=axis, keepdims=True)


def softplus(x: Any) -> Any:
    return nn_ops.softplus(x)


def softsign(x: Any) -> Any:
    return nn_ops.softsign(x)


def sigmoid(x: Any) -> Any:
    return math_ops.sigmoid(x)


def hard_sigmoid(x: Any) -> Any:
    """`clip(0.2 * x + 0.5, 0, 1)` (Keras 2's segment, not TF's `x/6 + 0.5`)."""
    x = _t(x)
    y = x * array_ops.constant(0.2, dtype=x.dtype) + array_ops.constant(0.5, dtype=x.dtype)
    return elementwise_ops.clip_by_value(y, 0.0, 1.0)


def tanh(x: Any) -> Any:
    return math_ops.tanh(x)


def _clip_eps(output: Any) -> Any:
    eps = array_ops.constant(epsilon(), dtype=output.dtype)
    return elementwise_ops.clip_by_value(output, eps, 1.0 - eps)


def _check_compatible(target: Any, output: Any, fn: str) -> None:
    ts, os_ = target.shape, output.shape
    if ts.rank is not None and os_.rank is not None:
        ok = ts.rank == os_.rank and all(
            a is None or b is None or a == b for a, b in zip(ts.as_list(), os_.as_list())
        )
        if not ok:
            raise ValueError(f"{fn}: Shapes {ts} and {os_} are incompatible")


def categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> Any:
    """Cross-entropy of one-hot `target` and probabilities (or logits) `output` along `axis`."""
    target, output = _t(target), _t(output)
    _check_compatible(target, output, "categorical_crossentropy")
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits(labels=target, logits=output, axis=axis)
    output = output / core_ops.reduce_sum(output, axis, True)
    return -core_ops.reduce_sum(target * math_ops.log(_clip_eps(output)), axis)


def categorical_focal_crossentropy(
    target: Any,
    output: Any,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    axis: int = -1,
) -> Any:
    target, output = _t(target), _t(output)
    _check_compatible(target, output, "categorical_focal_crossentropy")
    if from_logits:
        output = nn_ops.softmax(output, axis=axis)
    output = _clip_eps(output / core_ops.reduce_sum(output, axis=axis, keepdims=True))
    cce = -target * math_ops.log(output)
    weight = math_ops.pow(1.0 - output, gamma) * alpha
    return core_ops.reduce_sum(weight * cce, axis=axis)


def sparse_categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1, ignore_class: Any = None
) -> Any:
    """Cross-entropy of integer `target` and probabilities (or logits) `output`."""
    target, output = _t(target), _t(output)
    target = compare_ops.cast(target, "int64")
    if not from_logits:
        output = math_ops.log(_clip_eps(output))
    output_rank = output.shape.rank
    axis %= output_rank
    if axis != output_rank - 1:
        perm = list(itertools.chain(range(axis), range(axis + 1, output_rank), [axis]))
        output = array_ops.transpose(output, perm=perm)
    output_shape = output.shape.as_list()
    update_shape = target.shape.rank != output_rank - 1
    if update_shape:
        target = core_ops.reshape(target, [-1])
        output = core_ops.reshape(output, [-1, output_shape[-1]])
    if ignore_class is not None:
        valid = compare_ops.not_equal(target, compare_ops.cast(ignore_class, target.dtype))
        flat_valid = core_ops.reshape(valid, [-1])
        target = core_ops.reshape(target, [-1])
        output = core_ops.reshape(output, [-1, output_shape[-1]])
        safe = math_ops.where(flat_valid, target, compare_ops.zeros_like(target))
        res = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=safe, logits=output)
        res = math_ops.where(flat_valid, res, compare_ops.zeros_like(res))
        return core_ops.reshape(res, output_shape[:-1])
    res = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)
    if update_shape and output_rank >= 3:
        res = core_ops.reshape(res, output_shape[:-1])
    return res


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Any:
    """Elementwise binary cross-entropy (Keras clips to [eps, 1-eps] and adds eps in the log)."""
    target, output = _t(target), _t(output)
    if from_logits:
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    output = _clip_eps(output)
    bce = target * math_ops.log(output + epsilon())
    bce = bce + (1 - target) * math_ops.log(1 - output + epsilon())
    return -bce


def binary_focal_crossentropy(
    target: Any,
    output: Any,
    apply_class_balancing: bool = False,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
) -> Any:
    target, output = _t(target), _t(output)
    sigmoidal = math_ops.sigmoid(output) if from_logits else output
    p_t = target * sigmoidal + (1 - target) * (1 - sigmoidal)
    focal = math_ops.pow(1.0 - p_t, gamma)
    out = focal * binary_crossentropy(target, output, from_logits=from_logits)
    if apply_class_balancing:
        out = (target * alpha + (1 - target) * (1 - alpha)) * out
    return out


def _seed(seed: Any) -> int:
    return int(np.random.randint(10000000)) if seed is None else seed


def dropout(x: Any, level: float, noise_shape: Any = None, seed: Any = None) -> Any:
    """Inverted dropout: zero a `level` fraction, scale the rest by `1 / (1 - level)`."""
    return nn_ops.dropout(x, rate=level, noise_shape=noise_shape, seed=_seed(seed))


def l2_normalize(x: Any, axis: Any = None) -> Any:
    return normalization_ops.l2_normalize(x, axis=axis)


def in_top_k(predictions: Any, targets: Any, k: int) -> Any:
    return segment_ops.in_top_k(targets, predictions, k)


def random_normal(
    shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None
) -> Any:
    return random_ops.normal(shape, mean=mean, stddev=stddev, dtype=dtype or floatx(),
                             seed=_seed(seed))  # fmt: skip


def random_uniform(
    shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: Any = None
) -> Any:
    return random_ops.uniform(shape, minval=minval, maxval=maxval, dtype=dtype or floatx(),
                              seed=_seed(seed))  # fmt: skip


def random_bernoulli(shape: Any, p: float = 0.0, dtype: Any = None, seed: Any = None) -> Any:
    """1 with probability `p`, else 0."""
    dtype = dtype or floatx()
    u = random_ops.uniform(shape, dtype=dtype, seed=_seed(seed))
    return math_ops.where(u <= p, array_ops.ones(shape, dtype=dtype),
                          array_ops.zeros(shape, dtype=dtype))  # fmt: skip


def random_binomial(shape: Any, p: float = 0.0, dtype: Any = None, seed: Any = None) -> Any:
    warnings.warn(
        "`tf.keras.backend.random_binomial` is deprecated, and will be removed in a future "
        "version.Please use `tf.keras.backend.random_bernoulli` instead.",
        stacklevel=2,
    )
    return random_bernoulli(shape, p, dtype, seed)


def truncated_normal(
    shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None
) -> Any:
    return random_ops.truncated_normal(shape, mean, stddev, dtype=dtype or floatx(),
                                       seed=_seed(seed))  # fmt: skip


def random_uniform_variable(
    shape: Any, low: float, high: float, dtype: Any = None, name: Any = None, seed: Any = None
) -> Any:
    dtype = dtype or floatx()
    value = random_ops.uniform(shape, minval=low, maxval=high, dtype=dtypes.as_dtype(dtype),
                               seed=_seed(seed))  # fmt: skip
    return variable(value, dtype=dtype, name=name)


def random_normal_variable(
    shape: Any, mean: float, scale: float, dtype: Any = None, name: Any = None, seed: Any = None
) -> Any:
    dtype = dtype or floatx()
    value = random_ops.normal(shape, mean=mean, stddev=scale, dtype=dtypes.as_dtype(dtype),
                              seed=_seed(seed))  # fmt: skip
    return variable(value, dtype=dtype, name=name)
