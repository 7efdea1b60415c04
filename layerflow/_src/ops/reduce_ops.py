"""Reductions beyond sum/mean/max/min, scans, norms and clipping by norm, add_n.

Sorting, top_k and unique are in `ordering_ops`."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import expand_dims, squeeze, stop_gradient, transpose
from layerflow._src.ops.elementwise_ops import log1p  # noqa: F401 - re-exported for tf.math
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _norm_axis,
    _real_div,
    _reduce_sum,
    _reduction_grad,
    abs,
    broadcast_to,
    cast,
    exp,
    log,
    maximum,
    minimum,
    multiply,
    ones_like,
    pow,
    reduce_max,
    reduce_mean,
    reduce_sum,
    reshape,
    sqrt,
    square,
    squared_difference,
    subtract,
    where,
)

# --- products and logical reductions --------------------------------------------------------------


@op("reduce_prod", accepts="non_string")
def _reduce_prod(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    dt = x.dtype if x.dtype.kind != "b" else np.int32
    return xp.prod(x, axis=axis, keepdims=keepdims, dtype=dt)


@_reduce_prod.grad
def _(dy: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    g = _reduction_grad(dy, x, axis, keepdims)
    xp = x._device.xp
    if not bool(xp.any(x._data == 0)):
        return multiply(g, _real_div(_reduction_grad(out, x, axis, keepdims), x))
    # With zeros, out / x is wrong: use the product of the other elements instead.
    return multiply(g, _prod_of_others(x, axis))


@op("prod_of_others")
def _prod_of_others(xp: Any, x: Any, axis: Any) -> Any:
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    rest = tuple(i for i in range(x.ndim) if i not in axes)
    moved = xp.transpose(x, rest + axes)
    shape = moved.shape
    flat = moved.reshape(shape[: len(rest)] + (-1,))
    ones = xp.ones(flat.shape[:-1] + (1,), dtype=x.dtype)
    left = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = xp.flip(
        xp.cumprod(xp.concatenate([ones, xp.flip(flat, -1)[..., :-1]], axis=-1), axis=-1), -1
    )
    others = (left * right).reshape(shape)
    return xp.transpose(others, tuple(np.argsort(rest + axes)))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Any:  # fmt: skip
    """Product over `axis` (all axes when None).

    >>> import layerflow as tf
    >>> int(tf.reduce_prod([[1, 2], [3, 4]]))
    24
    """
    x = _as_tensor(input_tensor)
    return _reduce_prod(x, _norm_axis(axis, x._data.ndim, "reduce_prod"), bool(keepdims))


@op("reduce_any")
def _reduce_any(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return xp.any(x, axis=axis, keepdims=keepdims)


@op("reduce_all")
def _reduce_all(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return xp.all(x, axis=axis, keepdims=keepdims)


def _logical_reduce(prim: Any, opname: str, x: Any, axis: Any, keepdims: bool) -> Any:
    x = _as_tensor(x)
    if x._data.dtype.kind != "b":
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname} expects a bool tensor, got {x.dtype.name}. Compare first, e.g. "
            f"tf.{opname}(x > 0), or cast with tf.cast(x, tf.bool).",
        )
    return prim(x, _norm_axis(axis, x._data.ndim, opname), bool(keepdims))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
    """Logical or over `axis` of a bool tensor.

    >>> import layerflow as tf
    >>> bool(tf.reduce_any([False, True]))
    True
    """
    return _logical_reduce(_reduce_any, "reduce_any", input_tensor, axis, keepdims)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
    """Logical and over `axis` of a bool tensor."""
    return _logical_reduce(_reduce_all, "reduce_all", input_tensor, axis, keepdims)


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                     name: str | None = None) -> Any:  # fmt: skip
    """log(sum(exp(x))) over `axis`, without overflow."""
    x = _as_tensor(input_tensor)
    axes = _norm_axis(axis, x._data.ndim, "reduce_logsumexp")
    m = stop_gradient(reduce_max(x, axes, keepdims=True))
    xp = x._device.xp
    m = Tensor(xp.where(xp.isfinite(m._data), m._data, 0).astype(x._data.dtype), x._device)
    out = log(_reduce_sum(exp(subtract(x, m)), axes, True)) + m
    return out if keepdims else reshape(out, _reduced_shape(x._data.shape, axes))


def _reduced_shape(shape: tuple[int, ...], axes: Any) -> list[int]:
    axes = range(len(shape)) if axes is None else axes
    return [d for i, d in enumerate(shape) if i not in axes]


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
    """The population variance over `axis`."""
    x = _as_tensor(input_tensor)
    mean = reduce_mean(x, axis, keepdims=True)
    return reduce_mean(squared_difference(x, mean), axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
    """The population standard deviation over `axis`."""
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def count_nonzero(input: Any, axis: Any = None, keepdims: bool = False, dtype: Any = "int64",  # noqa: A002
                  name: str | None = None) -> Any:  # fmt: skip
    """The number of nonzero elements over `axis`."""
    x = _as_tensor(input)
    nz = Tensor(x._data != 0, x._device)
    return cast(_reduce_sum(nz, _norm_axis(axis, x._data.ndim, "count_nonzero"), keepdims), dtype)


# --- argmax / argmin ------------------------------------------------------------------------------


# TF's CPU kernels (Eigen's ArgMax/ArgMin reducers) start from (index 0, the dtype's lowest
# finite value) and move only to a strictly larger value: NaN never wins, and neither does -inf
# (argmax of [nan, -inf, 2.] is 2, of [nan, nan] or [-inf, -inf] is 0). Clamping the values
# into the finite range first (fmax/fmin drop NaN) gives that rule with NumPy's argmax.


@op("argmax", accepts="non_string")
def _argmax(xp: Any, x: Any, axis: int, out_dtype: Any) -> Any:
    if x.dtype.kind == "f":
        x = xp.fmax(x, np.finfo(x.dtype).min)
    return xp.argmax(x, axis=axis).astype(out_dtype)


@op("argmin", accepts="non_string")
def _argmin(xp: Any, x: Any, axis: int, out_dtype: Any) -> Any:
    if x.dtype.kind == "f":
        x = xp.fmin(x, np.finfo(x.dtype).max)
    return xp.argmin(x, axis=axis).astype(out_dtype)


def _arg_reduce(prim: Any, opname: str, x: Any, axis: Any, output_type: Any) -> Any:
    x = _as_tensor(x)
    if x._data.ndim == 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname} needs a tensor of rank >= 1, got a scalar."
        )
    ax = _norm_axis(0 if axis is None else axis, x._data.ndim, opname)
    if len(ax) != 1:
        raise errors.InvalidArgumentError(None, opname, f"{opname} takes one axis, got {axis}.")
    if x._data.shape[ax[0]] == 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: axis {ax[0]} of shape {x.shape} is empty."
        )
    out = dtypes.as_dtype(output_type)
    if out.name not in ("int32", "int64", "int16", "uint16"):
        raise TypeError(f"{opname}: output_type must be int32 or int64, got {out.name}.")
    return prim(x, ax[0], out.np)


def argmax(input: Any, axis: Any = None, output_type: Any = "int64",  # noqa: A002
           name: str | None = None) -> Any:  # fmt: skip
    """Index of the largest value along `axis` (0 when None, as in TF); int64 by default.

    >>> import layerflow as tf
    >>> tf.argmax([[1, 9], [7, 3]], axis=1).numpy()
    array([1, 0])
    """
    return _arg_reduce(_argmax, "argmax", input, axis, output_type)


def argmin(input: Any, axis: Any = None, output_type: Any = "int64",  # noqa: A002
           name: str | None = None) -> Any:  # fmt: skip
    """Index of the smallest value along `axis` (0 when None); int64 by default."""
    return _arg_reduce(_argmin, "argmin", input, axis, output_type)


# --- scans ----------------------------------------------------------------------------------------


@op("cumsum")
def _cumsum(xp: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    if reverse:
        x = xp.flip(x, axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    return xp.flip(out, axis) if reverse else out


@_cumsum.grad
def _(dy: Any, out: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    return _cumsum(dy, axis, exclusive, not reverse)


def cumsum(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Any:  # fmt: skip
    """Cumulative sum along `axis`.

    >>> import layerflow as tf
    >>> tf.cumsum([1, 2, 3]).numpy()
    array([1, 3, 6], dtype=int32)
    """
    x = _as_tensor(x)
    ax = _norm_axis(axis, x._data.ndim, "cumsum")[0]
    return _cumsum(x, ax, bool(exclusive), bool(reverse))


@op("cumprod")
def _cumprod(xp: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    if reverse:
        x = xp.flip(x, axis)
    out = xp.cumprod(x, axis=axis, dtype=x.dtype)
    if exclusive:  # shift by one: 1, x0, x0*x1, ... (no division, so zeros are fine)
        out = xp.concatenate([xp.ones_like(xp.take(out, [0], axis)), xp.delete(out, -1, axis)],
                             axis)  # fmt: skip
    return xp.flip(out, axis) if reverse else out


@_cumprod.grad
def _(dy: Any, out: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    xp = x._device.xp
    if not bool(xp.any(x._data == 0)):
        # TF's rule: the sum over later outputs of dy * out, divided by x.
        return _real_div(_cumsum(multiply(dy, out), axis, exclusive, not reverse), x)
    return _cumprod_grad_with_zeros(dy, x, axis, exclusive, reverse)


def _cumprod_grad_with_zeros(dy: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    """Exact where x has zeros (out / x is not): d out_j / d x_i is the product of the scanned
    elements other than x_i, i.e. a cumprod of x with x_i replaced by 1, one row per i. This
    costs n times the memory along `axis`, so it runs only when x has a zero."""
    rank = x._data.ndim
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = [perm.index(d) for d in range(rank)]
    xt, dyt = transpose(x, perm), transpose(dy, perm)
    n = x._data.shape[axis]
    eye = np.eye(n, dtype=bool)
    shape = tuple(xt._data.shape[:-1]) + (n, n)
    rows = broadcast_to(expand_dims(xt, -2), shape)  # rows[..., i, k] = x_k
    ones = Tensor(x._device.xp.ones(shape, dtype=x._data.dtype), x._device)
    others = where(Tensor(x._device.xp.asarray(np.broadcast_to(eye, shape)), x._device), ones, rows)
    partial = _cumprod(others, rank, exclusive, reverse)  # [..., i, j]: d out_j / d x_i if i counts
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    counts = i >= j if reverse else i <= j
    if exclusive:
        counts &= ~eye
    mask = Tensor(x._device.xp.asarray(counts.astype(x._data.dtype)), x._device)
    g = reduce_sum(multiply(multiply(partial, mask), expand_dims(dyt, -2)), -1)
    return transpose(g, inverse)


def cumprod(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Any:  # fmt: skip
    """Cumulative product along `axis` (`exclusive`: start from 1; `reverse`: from the end).

    >>> import layerflow as tf
    >>> tf.math.cumprod([1, 2, 3, 4]).numpy()
    array([ 1,  2,  6, 24], dtype=int32)
    >>> tf.math.cumprod([1, 2, 3, 4], exclusive=True, reverse=True).numpy()
    array([24, 12,  4,  1], dtype=int32)
    """
    x = _as_tensor(x)
    ax = _norm_axis(axis, x._data.ndim, "cumprod")[0]
    return _cumprod(x, ax, bool(exclusive), bool(reverse))


# --- norms and clipping by norm -------------------------------------------------------------------


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: bool | None = None,  # noqa: A002
         name: str | None = None) -> Any:  # fmt: skip
    """Vector norms (`ord` in 'euclidean', 1, 2, np.inf, p > 0) and matrix norms ('fro',
    'euclidean', 1, np.inf over a 2-tuple `axis`).

    >>> import layerflow as tf
    >>> float(tf.norm([3.0, 4.0]))
    5.0
    """
    x = _as_tensor(tensor)
    keep = bool(keepdims)
    if isinstance(axis, list | tuple) and len(axis) == 2:
        axes = _norm_axis(axis, x._data.ndim, "norm")
        if ord in ("fro", "euclidean"):
            return sqrt(reduce_sum(square(x), axes, keepdims=keep))
        a, b = axes
        if ord in (1, np.inf):
            # ord=1: the largest column sum; ord=inf: the largest row sum.
            inner, outer = (a, b) if ord == 1 else (b, a)
            r = reduce_max(reduce_sum(abs(x), inner, keepdims=True), outer, keepdims=True)
            return r if keep else squeeze(r, [a, b])
        raise ValueError(f"norm: matrix ord must be 'fro', 'euclidean', 1 or np.inf, got {ord!r}.")
    if ord in ("euclidean", 2, 2.0):
        return sqrt(reduce_sum(square(x), axis, keepdims=keep))
    if ord == "fro":
        raise ValueError("norm: ord='fro' needs a 2-tuple axis (a matrix norm).")
    if ord == 1:
        return reduce_sum(abs(x), axis, keepdims=keep)
    if ord == np.inf:
        return reduce_max(abs(x), axis, keepdims=keep)
    if isinstance(ord, int | float) and ord > 0:
        p = float(ord)
        return pow(reduce_sum(pow(abs(x), p), axis, keepdims=keep), 1.0 / p)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2, np.inf or p > 0, got {ord!r}.")


def global_norm(t_list: Any, name: str | None = None) -> Any:
    """sqrt(sum of squares of every element of every tensor); None entries are skipped."""
    ts = [_as_tensor(t) for t in t_list if t is not None]
    if not ts:
        raise ValueError("global_norm needs at least one tensor.")
    total = reduce_sum(square(ts[0]))
    for t in ts[1:]:
        total = total + reduce_sum(square(t))
    return sqrt(total)


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """Scale `t` so its L2 norm over `axes` is at most `clip_norm`.

    >>> import layerflow as tf
    >>> tf.clip_by_norm([3.0, 4.0], 1.0).numpy()
    array([0.6, 0.8], dtype=float32)
    """
    t = _as_tensor(t)
    l2sum = reduce_sum(square(t), axes, keepdims=True)
    pred = l2sum > 0
    # sqrt at zero has an infinite gradient: take it of 1 there (TF's trick).
    l2norm = where(pred, sqrt(where(pred, l2sum, ones_like(l2sum))), l2sum)
    return _real_div(multiply(t, clip_norm), maximum(l2norm, clip_norm))


def clip_by_global_norm(t_list: Any, clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list[Any], Any]:  # fmt: skip
    """Scale every tensor by clip_norm / max(global_norm, clip_norm); returns (list, norm).

    >>> import layerflow as tf
    >>> clipped, n = tf.clip_by_global_norm([[3.0], [4.0]], 1.0)
    >>> float(n)
    5.0
    """
    if isinstance(t_list, TensorLike) or not isinstance(t_list, list | tuple):
        raise TypeError("clip_by_global_norm expects a list of tensors (t_list).")
    gn = global_norm(t_list) if use_norm is None else _as_tensor(use_norm)
    scale = multiply(clip_norm, minimum(_real_div(1.0, gn), 1.0 / float(clip_norm)))
    out = [None if t is None else multiply(_as_tensor(t), cast(scale, _as_tensor(t).dtype))
           for t in t_list]  # fmt: skip
    return out, gn


# --- add_n ----------------------------------------------------------------------------------------


@op("add_n", list_input=True)
def _add_n(xp: Any, values: list[Any]) -> Any:
    out = values[0].copy()
    for v in values[1:]:
        if v.shape != out.shape:
            raise ValueError(
                f"add_n: all inputs must have the same shape, got {v.shape} and {out.shape}."
            )
        out += v
    return out


@_add_n.grad
def _(dy: Any, out: Any, values: list[Any]) -> Any:
    return [dy for _ in values]


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def add_n(inputs: Any, name: str | None = None) -> Any:
    """The elementwise sum of a list of tensors of the same shape and dtype.

    >>> import layerflow as tf
    >>> tf.add_n([[1, 2], [3, 4], [5, 6]]).numpy()
    array([ 9, 12], dtype=int32)
    """
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n needs a non-empty list of tensors.")
    return _add_n(inputs)
