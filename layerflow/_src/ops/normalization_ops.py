"""Normalizations of `tf.nn` and `tf.linalg`, composed from layerflow ops (so their gradients,
to any order, come from the parts): l2_normalize, normalize, batch_normalization, the moments
helpers (sufficient_statistics, normalize_moments, weighted_moments) and local response
normalization. One fused primitive: `fused_batch_norm_train`, the training-mode batch norm of
`keras.layers.BatchNormalization` over a trailing channel axis, in a few passes with a
hand-written gradient (composed from ops when an outer tape records it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op, recording
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.backend import jit
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import norm_jit
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
    reduce_mean,
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


# --- fused batch normalization (training) ---------------------------------------------------------
#
# The composed form ((x - mean) / sqrt(var + eps) * scale + offset, its moments and their
# gradients) reads and writes the full activation about a dozen times forward and twenty
# backward. Fused: forward = mean, centre (into the output), variance by a sum of products (no
# squared temporary), scale and shift in place; backward = one normalized temporary, two
# per-channel sums, the input gradient built in that temporary. Both work on the channel rows
# of the array as it lies in memory (a conv output is channels-first behind an NHWC view), and
# the output keeps that layout, so the next convolution reads it without a transpose.


def _channel_rows(xp: Any, a: Any) -> tuple[Any, int]:
    """(2-D view of `a`'s values by channel, channel axis of that view): (C, rest) without a
    copy when `a` (channels last) is channels-first in memory, else (rest, C)."""
    c = a.shape[-1]
    if a.ndim > 2:
        t = a.transpose(a.ndim - 1, *range(a.ndim - 1))
        if t.flags.c_contiguous:
            return t.reshape(c, -1), 0
    return xp.ascontiguousarray(a).reshape(-1, c), 1


def _rows_like(xp: Any, a: Any, ax: int) -> Any:
    """`a` (channels last) as channel rows with channel axis `ax` (a copy only if needed)."""
    r, got = _channel_rows(xp, a)
    if got == ax:
        return r
    if ax == 1:
        return xp.ascontiguousarray(a).reshape(-1, a.shape[-1])
    return xp.ascontiguousarray(a.transpose(a.ndim - 1, *range(a.ndim - 1))).reshape(
        a.shape[-1], -1
    )


def _unrows(r: Any, ax: int, shape: tuple) -> Any:
    """Channel rows back to the channels-last `shape` (a view)."""
    if ax == 1:
        return r.reshape(shape)
    return r.reshape(shape[-1], *shape[:-1]).transpose(*range(1, len(shape)), 0)


def _col(v: Any, ax: int) -> Any:
    return v.reshape(-1, 1) if ax == 0 else v


def _compiled(xp: Any, r: Any, ax: int) -> bool:
    """Whether the compiled kernels (`norm_jit`) take channel rows `r` (channel axis `ax`):
    NumPy float32/64, rows of at least `norm_jit.MIN_ROW` values when channels-first."""
    if xp is not np or r.size == 0 or r.dtype not in _KERNEL_DTYPES:
        return False
    return (ax == 1 or r.shape[1] >= norm_jit.MIN_ROW) and jit.enabled()


_KERNEL_DTYPES = (np.float32, np.float64)


def _dot_rows(xp: Any, a: Any, b: Any, ax: int) -> Any:
    """Per-channel sums of a * b without a full-size product."""
    return xp.einsum("ij,ij->i" if ax == 0 else "ij,ij->j", a, b)


@op("fused_batch_norm_train", 3, multi_out=True, saves=True, grad_uses_out=False)
def _fused_bn_train(xp: Any, x: Any, scale: Any, offset: Any, epsilon: float) -> Any:
    r, ax = _channel_rows(xp, x)
    if _compiled(xp, r, ax):
        y, mean, var, inv = norm_jit.bn_forward(r, ax, scale, offset, epsilon)
        saved = (mean, inv) if recording() else None
        return (_unrows(y, ax, x.shape), mean, var), saved
    count = r.shape[1 - ax]
    mean = r.mean(axis=1 - ax)
    y = xp.empty_like(r)
    xp.subtract(r, _col(mean, ax), out=y)
    var = _dot_rows(xp, y, y, ax) / y.dtype.type(max(count, 1))
    inv = (1 / xp.sqrt(var + y.dtype.type(epsilon))).astype(y.dtype, copy=False)
    y *= _col(inv * scale, ax)
    y += _col(offset, ax)
    saved = (mean, inv) if recording() else None
    return (_unrows(y, ax, x.shape), mean, var), saved


@_fused_bn_train.spec
def _(x: Any, scale: Any, offset: Any, epsilon: float) -> Any:
    c = ArraySpec((x.shape[-1],), x.dtype)
    return ArraySpec(x.shape, x.dtype), c, ArraySpec((x.shape[-1],), x.dtype)


@_fused_bn_train.grad
def _(dys: Any, outs: Any, x: Any, scale: Any, offset: Any, epsilon: float,
      saved: Any = None) -> Any:  # fmt: skip
    dy, dmean, dvar = dys
    xp = x._device.xp
    stats_flow = bool(xp.any(dmean._data)) or bool(xp.any(dvar._data))
    if recording() or stats_flow or saved is None:
        return _bn_grad_ops(dy, dmean, dvar, x, scale, epsilon)
    mean, inv = saved
    r, ax = _channel_rows(xp, x._data)
    d = _rows_like(xp, dy._data, ax)
    dev = x._device
    if _compiled(xp, r, ax):
        t, dxh, dsum = norm_jit.bn_backward(r, d, ax, mean, inv, scale._data)
        return (Tensor(_unrows(t, ax, x._data.shape), dev), Tensor(dxh, dev), Tensor(dsum, dev))
    n = r.shape[1 - ax]
    t = xp.empty_like(r)  # x normalized, then the input gradient
    xp.subtract(r, _col(mean, ax), out=t)
    t *= _col(inv, ax)
    dsum = d.sum(axis=1 - ax)
    dxh = _dot_rows(xp, d, t, ax)
    t *= _col(-dxh / r.dtype.type(n), ax)
    t += d
    t -= _col(dsum / r.dtype.type(n), ax)
    t *= _col(scale._data * inv, ax)
    return (Tensor(_unrows(t, ax, x._data.shape), dev), Tensor(dxh, dev), Tensor(dsum, dev))


def _bn_grad_ops(dy: Any, dmean: Any, dvar: Any, x: Any, scale: Any, epsilon: float) -> tuple:
    """The gradient written with ops (mean and variance recomputed from x), for an outer tape
    and for gradients that reach the batch statistics themselves."""
    axes = list(range(x._data.ndim - 1))
    n = 1
    for a in axes:
        n *= x._data.shape[a]
    mean = reduce_mean(x, axes)
    centered = subtract(x, mean)
    inv = rsqrt(add(reduce_mean(square(centered), axes), epsilon))
    xhat = multiply(centered, inv)
    dsum, dxh = reduce_sum(dy, axes), reduce_sum(multiply(dy, xhat), axes)
    inner = subtract(
        subtract(dy, _real_div(dsum, float(n))), multiply(xhat, _real_div(dxh, float(n)))
    )
    dx = multiply(inner, multiply(scale, inv))
    dx = add(dx, add(_real_div(dmean, float(n)), multiply(centered, multiply(dvar, 2.0 / n))))
    return dx, dxh, dsum


def fused_batch_norm_train(x: Any, scale: Any, offset: Any, epsilon: float) -> tuple:
    """(y, batch mean, biased batch variance) of training-mode batch normalization over every
    axis but the last: y = (x - mean) / sqrt(variance + epsilon) * scale + offset.

    >>> import layerflow as tf
    >>> from layerflow._src.ops.normalization_ops import fused_batch_norm_train
    >>> y, m, v = fused_batch_norm_train(tf.constant([[1.0], [3.0]]), tf.ones(1), tf.zeros(1), 0.0)
    >>> y.numpy().ravel(), float(m[0]), float(v[0])
    (array([-1.,  1.], dtype=float32), 2.0, 1.0)
    """
    t = _float_tensor(x, "fused_batch_norm_train")
    return _fused_bn_train(t, scale, offset, float(epsilon))


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
