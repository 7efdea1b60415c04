"""Normalizations of `tf.nn` and `tf.linalg`, composed from layerflow ops (so their gradients,
to any order, come from the parts): l2_normalize, normalize, batch_normalization, the moments
helpers (sufficient_statistics, normalize_moments, weighted_moments) and local response
normalization.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import squeeze, stop_gradient
from layerflow._src.ops.elementwise_ops import rsqrt
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _norm_axis,
    _real_div,
    add,
    cast,
    divide_no_nan,
    maximum,
    multiply,
    negative,
    pow,
    reduce_sum,
    square,
    squared_difference,
    subtract,
    zeros_like,
)


def _float_tensor(x: Any, opname: str, what: str = "x") -> Any:
    t = _as_tensor(x)
    if t._data.dtype.kind != "f":
        raise TypeError(
            f"{opname}: {what} must be a float tensor, got {t.dtype.name}; cast it with "
            "tf.cast(x, tf.float32)."
        )
    return t


def _like(value: Any, t: Any) -> Any:
    """`value` as a tensor; Python numbers and lists take `t`'s dtype."""
    if hasattr(value, "_data"):
        return value
    return cast(value, t.dtype)


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None) -> Any:  # fmt: skip
    """x / sqrt(max(sum(x**2, axis), epsilon)): unit L2 norm along `axis` (all axes when None).

    >>> import layerflow as tf
    >>> tf.math.l2_normalize([3.0, 4.0]).numpy()
    array([0.6, 0.8], dtype=float32)
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("l2_normalize: pass `axis` or its deprecated alias `dim`, not both.")
        axis = dim
    t = _float_tensor(x, "l2_normalize")
    square_sum = reduce_sum(square(t), axis=axis, keepdims=True)
    return multiply(t, rsqrt(maximum(square_sum, epsilon)))


def normalize(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002 - TF's name
              name: str | None = None) -> tuple[Any, Any]:  # fmt: skip
    """(tensor / norm, norm), the norm as `tf.norm(tensor, ord, axis, keepdims=True)`.

    >>> import layerflow as tf
    >>> unit, n = tf.linalg.normalize([3.0, 4.0])
    >>> unit.numpy(), float(n[0])
    (array([0.6, 0.8], dtype=float32), 5.0)
    """
    from layerflow._src.ops.reduce_ops import norm

    t = _float_tensor(tensor, "normalize", "tensor")
    n = norm(t, ord=ord, axis=axis, keepdims=True)
    return _real_div(t, n), n


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None) -> Any:  # fmt: skip
    """(x - mean) / sqrt(variance + variance_epsilon) * scale + offset, broadcasting each
    argument; `offset` and `scale` may be None.

    >>> import layerflow as tf
    >>> tf.nn.batch_normalization([1.0, 3.0], 2.0, 1.0, None, None, 0.0).numpy()
    array([-1.,  1.], dtype=float32)
    """
    t = _float_tensor(x, "batch_normalization")
    inv = rsqrt(add(_like(variance, t), variance_epsilon))
    if scale is not None:
        inv = multiply(inv, scale)
    shift = negative(multiply(_like(mean, t), inv))
    if offset is not None:
        shift = add(shift, offset)
    return add(multiply(t, inv), shift)


def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
                          name: str | None = None) -> tuple[Any, Any, Any, Any]:  # fmt: skip
    """(count, sum of x - shift, sum of (x - shift)**2, shift) over `axes`: what
    `normalize_moments` turns into a mean and variance.

    >>> import layerflow as tf
    >>> n, m, v, _ = tf.nn.sufficient_statistics([1.0, 2.0, 3.0], axes=[0])
    >>> float(n), float(m), float(v)
    (3.0, 6.0, 14.0)
    """
    t = _float_tensor(x, "sufficient_statistics")
    shape = t._data.shape
    axes_t = _norm_axis(axes, len(shape), "sufficient_statistics") or ()
    count = 1
    for a in axes_t:
        count *= shape[a]
    counts = cast(count, t.dtype)
    centered = t if shift is None else subtract(t, shift)
    m_ss = reduce_sum(centered, axis=list(axes_t), keepdims=keepdims)
    v_ss = reduce_sum(square(centered), axis=list(axes_t), keepdims=keepdims)
    return counts, m_ss, v_ss, shift


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any,
                      name: str | None = None) -> tuple[Any, Any]:  # fmt: skip
    """The (mean, variance) from sufficient statistics: mean_ss / counts (+ shift) and
    variance_ss / counts - (mean_ss / counts)**2.

    >>> import layerflow as tf
    >>> mean, var = tf.nn.normalize_moments(3.0, 6.0, 14.0, None)
    >>> float(mean), round(float(var), 5)
    (2.0, 0.66667)
    """
    mean_ss = _as_tensor(mean_ss)
    divisor = _real_div(1.0, _like(counts, mean_ss))
    shifted_mean = multiply(mean_ss, divisor)
    mean = shifted_mean if shift is None else add(shifted_mean, shift)
    variance = subtract(multiply(variance_ss, divisor), square(shifted_mean))
    return mean, variance


def weighted_moments(x: Any, axes: Any, frequency_weights: Any, keepdims: bool = False,
                     name: str | None = None) -> tuple[Any, Any]:  # fmt: skip
    """The frequency-weighted mean and variance of `x` over `axes` (0 where the weights sum
    to 0). As in TF, the variance's gradient does not flow through the mean.

    >>> import layerflow as tf
    >>> m, v = tf.nn.weighted_moments([1.0, 2.0, 4.0], axes=[0], frequency_weights=[1.0, 1.0, 2.0])
    >>> float(m), float(v)
    (2.75, 1.6875)
    """
    t = _float_tensor(x, "weighted_moments")
    w = _like(frequency_weights, t)
    axes_t = list(_norm_axis(axes, t._data.ndim, "weighted_moments") or ())
    weighted_sum = reduce_sum(multiply(w, t), axis=axes_t, keepdims=True)
    weights_sum = reduce_sum(add(w, zeros_like(t)), axis=axes_t, keepdims=True)
    mean = divide_no_nan(weighted_sum, weights_sum)
    dist = reduce_sum(multiply(w, squared_difference(t, stop_gradient(mean))), axis=axes_t,
                      keepdims=True)  # fmt: skip
    variance = divide_no_nan(dist, weights_sum)
    if not keepdims:
        mean, variance = squeeze(mean, axes_t), squeeze(variance, axes_t)
    return mean, variance


def local_response_normalization(input: Any, depth_radius: int = 5, bias: float = 1.0,  # noqa: A002
                                 alpha: float = 1.0, beta: float = 0.5,
                                 name: str | None = None) -> Any:  # fmt: skip
    """Each channel of a 4-D NHWC input divided by (bias + alpha * sum of the squares of the
    channels within `depth_radius` of it) ** beta.

    >>> import layerflow as tf
    >>> x = tf.ones([1, 1, 1, 3])
    >>> tf.nn.local_response_normalization(x, depth_radius=1, bias=0.0).numpy().ravel()
    array([0.70710677, 0.57735026, 0.70710677], dtype=float32)
    """
    t = _float_tensor(input, "local_response_normalization", "input")
    if t._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None,
            "local_response_normalization",
            f"local_response_normalization: input must be 4-dimensional (NHWC), got shape "
            f"{list(t.shape)}.",
        )
    r = int(depth_radius)
    depth = t._data.shape[-1]
    padded = pad(square(t), [[0, 0], [0, 0], [0, 0], [r, r]])
    window = padded[..., 0:depth]
    for k in range(1, 2 * r + 1):
        window = add(window, padded[..., k : k + depth])
    return _real_div(t, pow(add(multiply(window, alpha), bias), beta))


lrn = local_response_normalization


__all__ = [
    "batch_normalization",
    "l2_normalize",
    "local_response_normalization",
    "lrn",
    "normalize",
    "normalize_moments",
    "sufficient_statistics",
    "weighted_moments",
]
