"""Elementwise math beyond the basics: inverse hyperbolics, atan2, rint, the `*_no_nan` ops,
the `x * log(y)` family, truncated division, nextafter, and small compositions (scalar_mul,
crelu, polyval, ...).

Primitives carry a forward on arrays and a gradient written with layerflow ops beside it; the
rest is composed. Float-only ops reject integer tensors with InvalidArgumentError, as TF does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import concat
from layerflow._src.ops.elementwise_ops import cosh, sinh
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _real_div,
    _unbroadcast,
    add,
    cast,
    divide_no_nan,
    multiply,
    negative,
    not_equal,
    ones_like,
    reduce_sum,
    relu,
    sqrt,
    square,
    subtract,
    zeros_like,
)

_FLOATS = "float16, float32, float64"
_COMPLEX = ", complex64, complex128"


def require_float(a: Any, opname: str, complex_ok: bool = False) -> None:
    """Raise TF's InvalidArgumentError unless array `a` is floating point (or complex)."""
    if a.dtype.kind == "f" or (complex_ok and a.dtype.kind == "c"):
        return
    allowed = _FLOATS + (_COMPLEX if complex_ok else "")
    raise errors.InvalidArgumentError(
        None,
        opname,
        f"{opname}: the input must be one of {allowed}; got "
        f"{dtypes.from_numpy(a.dtype).name}. Cast it first, e.g. tf.cast(x, tf.float32).",
    )


def _unary(name: str, forward: Any, doc: str, complex_ok: bool = False) -> Any:
    def fwd(xp: Any, x: Any) -> Any:
        require_float(x, name, complex_ok)
        return forward(xp, x)

    fwd.__name__ = name
    fwd.__doc__ = doc
    return op(name)(fwd)


def _conj(t: Any) -> Any:
    if t._data.dtype.kind != "c":
        return t
    from layerflow._src.ops.complex_ops import conj

    return conj(t)


# --- inverse hyperbolic functions, atan2 ----------------------------------------------------------

asinh = _unary("asinh", lambda xp, x: xp.arcsinh(x), "Inverse hyperbolic sine.", True)
acosh = _unary("acosh", lambda xp, x: xp.arccosh(x), "Inverse hyperbolic cosine.", True)
atanh = _unary("atanh", lambda xp, x: xp.arctanh(x), "Inverse hyperbolic tangent.", True)


@asinh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, cosh(_conj(out)))


@acosh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, sinh(_conj(out)))


@atanh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, subtract(1, square(_conj(x))))


@op("atan2", 2)
def atan2(xp: Any, y: Any, x: Any) -> Any:
    """The angle of the point (x, y) in (-pi, pi], elementwise with broadcasting.

    >>> import layerflow as tf
    >>> round(float(tf.math.atan2(1.0, -1.0)), 4)
    2.3562
    """
    require_float(y, "atan2")
    return xp.arctan2(y, x)


@atan2.grad
def _(dy: Any, out: Any, y: Any, x: Any) -> Any:
    scale = _real_div(dy, add(square(x), square(y)))
    gy = _unbroadcast(multiply(x, scale), y) if input_needed(0) else None
    gx = _unbroadcast(negative(multiply(y, scale)), x) if input_needed(1) else None
    return gy, gx


# --- rounding and neighbours (no gradient, as in TF) ----------------------------------------------

rint = _unary("rint", lambda xp, x: xp.rint(x), "Round to the nearest integer, half to even.")


@op("nextafter", 2)
def nextafter(xp: Any, x1: Any, x2: Any) -> Any:
    """The next representable value after `x1` in the direction of `x2` (float32/float64).

    >>> import layerflow as tf
    >>> float(tf.math.nextafter(1.0, 2.0)) > 1.0
    True
    """
    if x1.dtype not in (np.float32, np.float64):
        raise errors.InvalidArgumentError(
            None,
            "nextafter",
            f"nextafter: inputs must be float32 or float64, got "
            f"{dtypes.from_numpy(x1.dtype).name}; cast them with tf.cast.",
        )
    return xp.nextafter(x1, x2)


@nextafter.grad
def _(dy: Any, out: Any, x1: Any, x2: Any) -> Any:
    # As TF: the gradient passes to x1 unchanged (nextafter moves it by one ulp), none to x2.
    return _unbroadcast(dy, x1), _unbroadcast(zeros_like(dy), x2)


def _check_int_divisor(xp: Any, y: Any, opname: str) -> None:
    if y.dtype.kind in "iu" and bool(xp.any(y == 0)):
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: integer division by zero; check the divisor."
        )


@op("truncatediv", 2, quiet=True)
def truncatediv(xp: Any, x: Any, y: Any) -> Any:
    """x / y rounded toward zero (C semantics), unlike floordiv's rounding toward -inf.

    >>> import layerflow as tf
    >>> tf.truncatediv([-7, 7], 2).numpy()
    array([-3,  3], dtype=int32)
    """
    if x.dtype.kind == "b":
        raise errors.InvalidArgumentError(None, "truncatediv", "truncatediv: bool inputs.")
    _check_int_divisor(xp, y, "truncatediv")
    if x.dtype.kind in "iu":
        q = x // y
        fix = (q * y != x) & ((x < 0) != (y < 0))
        return (q + fix.astype(q.dtype)).astype(x.dtype, copy=False)
    return xp.trunc(x / y)


@op("truncatemod", 2, quiet=True)
def truncatemod(xp: Any, x: Any, y: Any) -> Any:
    """The remainder of truncated division: its sign follows `x` (C's fmod).

    >>> import layerflow as tf
    >>> tf.truncatemod([-7, 7], 2).numpy()
    array([-1,  1], dtype=int32)
    """
    if x.dtype.kind == "b":
        raise errors.InvalidArgumentError(None, "truncatemod", "truncatemod: bool inputs.")
    _check_int_divisor(xp, y, "truncatemod")
    return xp.fmod(x, y)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def realdiv(x: Any, y: Any, name: str | None = None) -> Any:
    """x / y for float and complex tensors (TF's RealDiv; integers are refused).

    >>> import layerflow as tf
    >>> tf.realdiv([3.0], [2.0]).numpy()
    array([1.5], dtype=float32)
    """
    x = _as_tensor(x)
    require_float(x._data, "realdiv", complex_ok=True)
    return _real_div(x, y)


# --- saturate_cast --------------------------------------------------------------------------------


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _limits(dt: Any) -> Any:
    return np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Any:
    """Cast `value` to `dtype`, clamping it to the target's range first (NaN becomes 0 for an
    integer target; a complex value keeps its real part for a real target).

    >>> import layerflow as tf
    >>> tf.dtypes.saturate_cast([-300.0, 3.7, 300.0], tf.uint8).numpy()
    array([  0,   3, 255], dtype=uint8)
    """
    from layerflow._src.ops.complex_ops import real
    from layerflow._src.ops.elementwise_ops import clip_by_value, is_nan
    from layerflow._src.ops.math_ops import where

    t = _as_tensor(value)
    target = dtypes.as_dtype(dtype)
    out_np = np.dtype(target.np)
    if t._data.dtype.kind == "c" and out_np.kind != "c":
        t = real(t)
    in_np = t._data.dtype
    if in_np.kind in "iuf" and out_np.kind in "iuf":
        src, dst = _limits(in_np), _limits(out_np)
        # Compared as Python numbers: exact, where NumPy would round the int to the float.
        dmin, dmax = _py(dst.min), _py(dst.max)
        lo, hi = in_np.type(src.min), in_np.type(src.max)
        if _py(src.min) < dmin:
            lo = in_np.type(dst.min)
            if _py(lo) < dmin:  # rounded below the target's minimum: step back inside
                lo = np.nextafter(lo, in_np.type(np.inf))
        if _py(src.max) > dmax:
            hi = in_np.type(dst.max)
            if _py(hi) > dmax:
                hi = np.nextafter(hi, in_np.type(-np.inf))
        if in_np.kind == "f" and out_np.kind in "iu":
            t = where(is_nan(t), zeros_like(t), t)
        if lo != src.min or hi != src.max:
            t = clip_by_value(t, lo, hi)
    return cast(t, target)


# --- *_no_nan -------------------------------------------------------------------------------------


@op("mul_no_nan", 2)
def _mul_no_nan(xp: Any, x: Any, y: Any) -> Any:
    require_float(x, "multiply_no_nan", complex_ok=True)
    zero = xp.zeros((), dtype=x.dtype)
    return xp.where(y == 0, zero, x) * y  # x is replaced first: inf * 0 never happens


@_mul_no_nan.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    gx = _unbroadcast(_mul_no_nan(dy, y), x) if input_needed(0) else None
    gy = _unbroadcast(_mul_no_nan(x, dy), y) if input_needed(1) else None
    return gx, gy


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Any:
    """x * y, but 0 wherever y is 0, even where x is inf or NaN (float and complex tensors).

    >>> import layerflow as tf
    >>> tf.math.multiply_no_nan([float("inf"), 2.0], [0.0, 3.0]).numpy()
    array([0., 6.], dtype=float32)
    """
    return _mul_no_nan(x, y)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Any:
    """1 / x, but 0 where x is 0.

    >>> import layerflow as tf
    >>> tf.math.reciprocal_no_nan([0.0, 2.0]).numpy()
    array([0. , 0.5], dtype=float32)
    """
    t = _as_tensor(x)
    require_float(t._data, "reciprocal_no_nan")
    return divide_no_nan(ones_like(t), t)


# --- x * log(y) and x / y, 0 where x is 0 ---------------------------------------------------------


def _xop(name: str, fn: Any) -> Any:
    @op(name, 2)
    def forward(xp: Any, x: Any, y: Any) -> Any:
        require_float(x, name, complex_ok=True)
        zero = x == 0
        safe_y = xp.where(zero, xp.ones((), dtype=y.dtype), y)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where(zero, xp.zeros((), dtype=x.dtype), fn(xp, x, safe_y))

    forward.__name__ = name
    return forward


xlogy = _xop("xlogy", lambda xp, x, y: x * xp.log(y))
xlog1py = _xop("xlog1py", lambda xp, x, y: x * xp.log1p(y))
xdivy = _xop("xdivy", lambda xp, x, y: x / y)
xlogy.__doc__ = "x * log(y), and 0 where x is 0 (whatever y is)."
xlog1py.__doc__ = "x * log1p(y), and 0 where x is 0 (whatever y is)."
xdivy.__doc__ = "x / y, and 0 where x is 0 (whatever y is)."


def _nonzero(x: Any) -> Any:
    return cast(not_equal(x, zeros_like(x)), x._data.dtype)


@xlogy.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    gx = multiply(dy, xlogy(_nonzero(x), y)) if input_needed(0) else None
    gy = multiply(dy, xdivy(x, y)) if input_needed(1) else None
    return _maybe_unbroadcast(gx, x), _maybe_unbroadcast(gy, y)


@xlog1py.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    gx = multiply(dy, xlog1py(_nonzero(x), y)) if input_needed(0) else None
    gy = multiply(dy, xdivy(x, add(y, 1))) if input_needed(1) else None
    return _maybe_unbroadcast(gx, x), _maybe_unbroadcast(gy, y)


@xdivy.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    gx = multiply(dy, xdivy(_nonzero(x), y)) if input_needed(0) else None
    gy = multiply(dy, xdivy(negative(x), square(y))) if input_needed(1) else None
    return _maybe_unbroadcast(gx, x), _maybe_unbroadcast(gy, y)


def _maybe_unbroadcast(g: Any, x: Any) -> Any:
    return None if g is None else _unbroadcast(g, x)


# --- small compositions ---------------------------------------------------------------------------


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Any:
    """`scalar * x`, where `scalar` must be 0-D.

    >>> import layerflow as tf
    >>> tf.math.scalar_mul(2.0, [1.0, 2.0]).numpy()
    array([2., 4.], dtype=float32)
    """
    shape = tuple(_as_tensor(scalar)._data.shape) if not isinstance(scalar, int | float) else ()
    if shape != ():
        raise ValueError(f"The input scalar must be a 0-D value. Received shape {shape}.")
    return multiply(scalar, x)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Any:
    """Concatenated ReLU: `concat([relu(x), relu(-x)], axis)`, twice as deep on `axis`.

    >>> import layerflow as tf
    >>> tf.nn.crelu([[1.0, -2.0]]).numpy()
    array([[1., 0., 0., 2.]], dtype=float32)
    """
    x = _as_tensor(features)
    return concat([relu(x), relu(negative(x))], axis)


def polyval(coeffs: Any, x: Any, name: str | None = None) -> Any:
    """The polynomial `coeffs[0] * x**(n-1) + ... + coeffs[n-1]` at `x` (Horner's scheme).

    >>> import layerflow as tf
    >>> float(tf.math.polyval([1.0, 2.0, 3.0], 2.0))
    11.0
    """
    if not isinstance(coeffs, list | tuple):
        raise ValueError(
            f"polyval: coeffs must be a list of tensors (highest degree first), got "
            f"{type(coeffs).__name__}."
        )
    x = _as_tensor(x)
    if not coeffs:
        return zeros_like(x)
    from layerflow._src.framework.convert import convert_to_tensor

    def coeff(c: Any) -> Any:  # Python numbers take x's dtype
        return c if isinstance(c, Tensor) else convert_to_tensor(c, dtype=x.dtype)

    result = coeff(coeffs[0])
    for c in coeffs[1:]:
        result = add(coeff(c), multiply(result, x))
    return result


def accumulate_n(inputs: Any, shape: Any = None, tensor_dtype: Any = None,
                 name: str | None = None) -> Any:  # fmt: skip
    """The elementwise sum of a list of tensors of one shape and dtype (TF's name for add_n).

    >>> import layerflow as tf
    >>> tf.math.accumulate_n([tf.constant([1.0]), tf.constant([2.0])]).numpy()
    array([3.], dtype=float32)
    """
    from layerflow._src.ops.reduce_ops import add_n

    if not isinstance(inputs, list | tuple) or not inputs:
        raise ValueError(
            "accumulate_n: inputs must be a non-empty list of tensors of one shape and dtype."
        )
    tensors = [_as_tensor(t) for t in inputs]
    first = tuple(tensors[0]._data.shape)
    for t in tensors[1:]:
        if tuple(t._data.shape) != first:
            raise ValueError(f"Shapes {first} and {tuple(t._data.shape)} are not compatible")
    if shape is not None and tuple(int(d) for d in shape) != first:
        raise ValueError(f"Shapes {tuple(shape)} and {first} are not compatible")
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) != tensors[0].dtype:
        raise TypeError(
            f"accumulate_n: tensor_dtype {dtypes.as_dtype(tensor_dtype).name} does not match "
            f"the inputs' {tensors[0].dtype.name}."
        )
    return add_n(tensors)


def zero_fraction(value: Any, name: str | None = None) -> Any:
    """The fraction of zeros in `value`, as a float32 scalar (NaN for an empty tensor).

    >>> import layerflow as tf
    >>> float(tf.math.zero_fraction([0, 1, 0, 2]))
    0.5
    """
    t = _as_tensor(value)
    a = t._data
    xp = t._device.xp
    if a.size == 0:
        return Tensor(xp.asarray(np.nan, dtype=np.float32), t._device)
    zeros = xp.count_nonzero(a == 0)
    return Tensor(xp.asarray(zeros / a.size, dtype=np.float32), t._device)


def _numeric(value: Any, opname: str) -> Any:
    t = _as_tensor(value)
    if t._data.dtype.kind not in "biufc":
        raise TypeError(f"Expected x to be numeric, instead found: {t!r} ({opname})")
    return t


def is_non_decreasing(x: Any, name: str | None = None) -> Any:
    """True when the elements of `x`, in row-major order, never decrease (a bool scalar).

    >>> import layerflow as tf
    >>> bool(tf.math.is_non_decreasing([1, 2, 2]))
    True
    """
    t = _numeric(x, "is_non_decreasing")
    flat = t._data.reshape(-1)
    return Tensor(t._device.xp.asarray(bool((flat[1:] >= flat[:-1]).all())), t._device)


def is_strictly_increasing(x: Any, name: str | None = None) -> Any:
    """True when the elements of `x`, in row-major order, always increase (a bool scalar).

    >>> import layerflow as tf
    >>> bool(tf.math.is_strictly_increasing([1, 2, 2]))
    False
    """
    t = _numeric(x, "is_strictly_increasing")
    flat = t._data.reshape(-1)
    return Tensor(t._device.xp.asarray(bool((flat[1:] > flat[:-1]).all())), t._device)


def invert_permutation(x: Any, name: str | None = None) -> Any:
    """The inverse permutation `y` of the 1-D permutation `x`: `y[x[i]] = i`.

    >>> import layerflow as tf
    >>> tf.math.invert_permutation([3, 4, 0, 2, 1]).numpy()
    array([2, 4, 3, 0, 1], dtype=int32)
    """
    t = _as_tensor(x)
    a = backend.to_host(t._data)
    if a.dtype.kind not in "iu" or a.ndim != 1:
        raise errors.InvalidArgumentError(
            None,
            "invert_permutation",
            f"invert_permutation: x must be a 1-D int32 or int64 tensor, got "
            f"{t.dtype.name} of shape {list(a.shape)}.",
        )
    n = a.size
    seen = np.zeros(n, dtype=bool)
    for v in a.tolist():
        if not 0 <= v < n:
            raise errors.InvalidArgumentError(
                None, "invert_permutation", f"invert_permutation: {v} is not between 0 and {n}."
            )
        if seen[v]:
            raise errors.InvalidArgumentError(
                None, "invert_permutation", f"invert_permutation: {v} is duplicated in the input."
            )
        seen[v] = True
    out = np.empty_like(a)
    out[a] = np.arange(n, dtype=a.dtype)
    return Tensor(backend.to_device(out, t._device), t._device)


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Any:  # fmt: skip
    """sqrt(sum(x**2)) over `axis`; integer tensors give the truncated integer norm, as in TF.

    >>> import layerflow as tf
    >>> int(tf.math.reduce_euclidean_norm([[1, 2, 3], [1, 1, 1]]))
    4
    """
    x = _as_tensor(input_tensor)
    kind = x._data.dtype.kind
    if kind in "iu":
        as_float = cast(x, "float64")
        norm = sqrt(reduce_sum(square(as_float), axis=axis, keepdims=keepdims))
        return cast(norm, x.dtype)
    if kind != "f":
        raise TypeError(
            f"reduce_euclidean_norm: expected a real tensor, got {x.dtype.name}; take tf.abs "
            "of a complex tensor first."
        )
    return sqrt(reduce_sum(square(x), axis=axis, keepdims=keepdims))


__all__ = [
    "accumulate_n",
    "acosh",
    "asinh",
    "atan2",
    "atanh",
    "crelu",
    "invert_permutation",
    "is_non_decreasing",
    "is_strictly_increasing",
    "multiply_no_nan",
    "nextafter",
    "polyval",
    "realdiv",
    "reciprocal_no_nan",
    "reduce_euclidean_norm",
    "require_float",
    "rint",
    "saturate_cast",
    "scalar_mul",
    "truncatediv",
    "truncatemod",
    "xdivy",
    "xlog1py",
    "xlogy",
    "zero_fraction",
]
