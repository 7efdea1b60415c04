"""More elementwise math: log1p, rsqrt, trigonometry, rounding, erf, clip_by_value, ...

Each primitive is a one-line forward on arrays and a gradient written with layerflow ops, so
nested tapes give higher derivatives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _real_div,
    _select,
    _unbroadcast,
    add,
    exp,
    greater_equal,
    less,
    less_equal,
    logical_and,
    multiply,
    negative,
    sigmoid,
    sqrt,
    square,
    subtract,
    zeros_like,
)


def _unary(name: str, forward: Any, doc: str, accepts: str | None = "float") -> Any:
    """An elementwise op whose forward is `forward(xp, x)`; its `.grad` is set below.

    `accepts` is the op's dtype family (see `autodiff/op.py`): float and complex by default.
    """

    def fwd(xp: Any, x: Any) -> Any:
        return forward(xp, x)

    fwd.__name__ = name
    fwd.__doc__ = doc
    return op(name, accepts=accepts)(fwd)


def _no_grad(prim_op: Any) -> None:
    """Piecewise-constant ops (floor, round, ...) have zero gradient, as in TF."""

    @prim_op.grad
    def _(dy: Any, out: Any, x: Any) -> Any:
        return zeros_like(x)


# --- exponentials and logarithms ------------------------------------------------------------------

log1p = _unary("log1p", lambda xp, x: xp.log1p(x), "log(1 + x), accurate for small x.")


@log1p.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, add(x, 1))


expm1 = _unary("expm1", lambda xp, x: xp.expm1(x), "exp(x) - 1, accurate for small x.")


@expm1.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, add(out, 1))


rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), "1 / sqrt(x).")


@rsqrt.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _rsqrt_grad(out, dy)


# Like sqrt's (math_ops), TF's RsqrtGrad and ReciprocalGrad are 0 wherever dy is 0.


@op("rsqrt_grad", 2, quiet=True)
def _rsqrt_grad(xp: Any, y: Any, dy: Any) -> Any:
    """-0.5 * dy * y**3 (d/dx x^-1/2 with y = x^-1/2), and 0 where dy == 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        g = (y * y * y) * (-0.5 * dy)
    return xp.where(dy == 0, xp.zeros((), dtype=g.dtype), g)


@_rsqrt_grad.grad
def _(g: Any, out: Any, y: Any, dy: Any) -> Any:
    # TF's RsqrtGradGrad.
    return multiply(multiply(g, dy), multiply(square(y), -1.5)), _rsqrt_grad(y, g)


reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, "1 / x.")


@reciprocal.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _reciprocal_grad(out, dy)


@op("reciprocal_grad", 2, quiet=True)
def _reciprocal_grad(xp: Any, y: Any, dy: Any) -> Any:
    """-dy * y**2 (d/dx 1/x with y = 1/x), and 0 where dy == 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        g = (y * y) * -dy
    return xp.where(dy == 0, xp.zeros((), dtype=g.dtype), g)


@_reciprocal_grad.grad
def _(g: Any, out: Any, y: Any, dy: Any) -> Any:
    # TF's ReciprocalGradGrad.
    return multiply(multiply(g, dy), multiply(y, -2.0)), _reciprocal_grad(y, g)


log_sigmoid = _unary(
    "log_sigmoid",
    lambda xp, x: xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))),
    "log(sigmoid(x)) = -softplus(-x), without overflow.",
)


@log_sigmoid.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, sigmoid(negative(x)))


# --- trigonometry ---------------------------------------------------------------------------------

sin = _unary("sin", lambda xp, x: xp.sin(x), "Elementwise sine.")
cos = _unary("cos", lambda xp, x: xp.cos(x), "Elementwise cosine.")
tan = _unary("tan", lambda xp, x: xp.tan(x), "Elementwise tangent.")


@sin.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, cos(x))


@cos.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(multiply(dy, sin(x)))


@tan.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, add(square(out), 1))


asin = _unary("asin", lambda xp, x: xp.arcsin(x), "Elementwise arcsine.")
acos = _unary("acos", lambda xp, x: xp.arccos(x), "Elementwise arccosine.")
atan = _unary("atan", lambda xp, x: xp.arctan(x), "Elementwise arctangent.")
sinh = _unary("sinh", lambda xp, x: xp.sinh(x), "Elementwise hyperbolic sine.")
cosh = _unary("cosh", lambda xp, x: xp.cosh(x), "Elementwise hyperbolic cosine.")


@asin.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, sqrt(subtract(1, square(x))))


@acos.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(_real_div(dy, sqrt(subtract(1, square(x)))))


@atan.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, add(square(x), 1))


@sinh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, cosh(x))


@cosh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, sinh(x))


# --- rounding and tests (no gradient, or zero) ----------------------------------------------------

_floor_doc = "Largest integer not greater than x."
floor = _unary("floor", lambda xp, x: xp.floor(x), _floor_doc, "real_float")
ceil = _unary("ceil", lambda xp, x: xp.ceil(x), "Smallest integer not less than x.", "real_float")
# TF rounds half to even, as NumPy does, and rounds integers to themselves.
round = _unary("round", lambda xp, x: xp.round(x), "Round to nearest, half to even.", None)  # noqa: A001
for _prim in (floor, ceil, round):
    _no_grad(_prim)

is_nan = _unary("is_nan", lambda xp, x: xp.isnan(x), "Elementwise NaN test.", "real_float")
is_inf = _unary("is_inf", lambda xp, x: xp.isinf(x), "Elementwise infinity test.", "real_float")
is_finite = _unary("is_finite", lambda xp, x: xp.isfinite(x), "Finiteness test.", "real_float")


# --- erf (no SciPy: a series near 0 and a continued fraction in the tails) ------------------------

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_array(xp: Any, x: Any) -> Any:
    """erf in float64 to about 1e-14, then cast back.

    NumPy has no erf, and SciPy is not a dependency.
    """
    z = x.astype(np.float64)
    a = xp.abs(z)
    out = xp.empty_like(z)
    small = a <= 2.2
    if bool(small.any()):
        s = z[small]
        s2 = s * s
        # Maclaurin series: erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
        term = s.copy()
        total = s.copy()
        for n in range(1, 40):
            term = term * (-s2) / n
            total = total + term / (2 * n + 1)
        out[small] = _TWO_OVER_SQRT_PI * total
    big = ~small
    if bool(big.any()):
        b = a[big]
        # Laplace's continued fraction for erfc, evaluated backwards:
        # erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        frac = b.copy()
        for k in range(60, 0, -1):
            frac = b + (k / 2.0) / frac
        erfc = xp.exp(-b * b) / math.sqrt(math.pi) / frac
        out[big] = xp.sign(z[big]) * (1.0 - erfc)
    return out.astype(x.dtype, copy=False)


erf = _unary("erf", _erf_array, "The error function.", "real_float")


@erf.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, multiply(exp(negative(square(x))), _TWO_OVER_SQRT_PI))


# --- clipping -------------------------------------------------------------------------------------


@op("clip_by_value", 3)
def _clip(xp: Any, t: Any, lo: Any, hi: Any) -> Any:
    return xp.minimum(xp.maximum(t, lo), hi)


@_clip.grad
def _(dy: Any, out: Any, t: Any, lo: Any, hi: Any) -> Any:
    # The gradient passes where lo <= t <= hi, as TF's clip_by_value does.
    inside = logical_and(greater_equal(t, lo), less_equal(t, hi))
    zero = zeros_like(dy)
    g_t = _select(inside, dy, zero)
    g_lo = _select(less(t, lo), dy, zero)
    g_hi = _select(less(hi, t), dy, zero)
    return _unbroadcast(g_t, t), _unbroadcast(g_lo, lo), _unbroadcast(g_hi, hi)


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> Any:  # fmt: skip
    """Clamp `t` to [clip_value_min, clip_value_max] elementwise.

    >>> import layerflow as tf
    >>> tf.clip_by_value([-2.0, 0.5, 3.0], -1.0, 1.0).numpy()
    array([-1. ,  0.5,  1. ], dtype=float32)
    """
    t = _as_tensor(t)
    if not isinstance(clip_value_min, TensorLike) and not isinstance(clip_value_max, TensorLike):
        if np.any(np.asarray(clip_value_min) > np.asarray(clip_value_max)):
            raise errors.InvalidArgumentError(
                None,
                "clip_by_value",
                f"clip_by_value: clip_value_min {clip_value_min} is greater than clip_value_max "
                f"{clip_value_max}.",
            )
    return _clip(t, clip_value_min, clip_value_max)
