"""Special functions of `tf.math`: the gamma family (lgamma, digamma, polygamma, zeta, igamma,
igammac, betainc, lbeta) and the error-function family (erfc, erfinv, erfcinv, ndtri).

`erfc` is pure NumPy/CuPy. The others use SciPy's `special` (an optional dependency, imported
on first use through `backend.special_functions`), always in float64, the result cast back to
the input's dtype. Gradients are written with layerflow ops beside each forward; where TF has
no gradient for an argument (polygamma's order, zeta's x, betainc's a and b) there is none here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.ops.elementwise_more_ops import require_float, xlog1py, xlogy
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _unbroadcast,
    add,
    exp,
    multiply,
    negative,
    ones_like,
    reduce_sum,
    square,
    subtract,
)


def _in_float64(xp: Any, fn: Any, *arrays: Any) -> Any:
    """fn on float64 copies of `arrays`, cast back to the first one's dtype."""
    dt = arrays[0].dtype
    with np.errstate(all="ignore"):  # poles and domain edges give inf/NaN, as in TF
        out = fn(*(a.astype(np.float64, copy=False) for a in arrays))
    return xp.asarray(out).astype(dt, copy=False)


def _scipy_unary(name: str, scipy_name: str, doc: str) -> Any:
    def forward(xp: Any, x: Any) -> Any:
        require_float(x, name)
        return _in_float64(xp, getattr(backend.special_functions(xp), scipy_name), x)

    forward.__name__ = name
    forward.__doc__ = doc
    return op(name)(forward)


def _grad_x(g: Any, dy: Any, x: Any) -> Any:
    return _unbroadcast(multiply(dy, g), x)


# --- the gamma family -----------------------------------------------------------------------------

lgamma = _scipy_unary("lgamma", "gammaln", "log(|Gamma(x)|), elementwise.")
digamma = _scipy_unary("digamma", "psi", "The digamma function psi(x) = d/dx lgamma(x).")


@lgamma.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, digamma(x))


@digamma.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, _polygamma(ones_like(x), x))


def _polygamma_array(sp: Any, xp: Any, a: Any, x: Any) -> Any:
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1; NaN for a non-integer or negative order.
    valid = (a == xp.floor(a)) & (a >= 0)
    n = xp.where(valid, a, 0.0)
    sign = xp.where(xp.fmod(n, 2) == 0, -1.0, 1.0)
    higher = sign * xp.exp(sp.gammaln(n + 1)) * sp.zeta(n + 1, x)
    out = xp.where(n == 0, sp.psi(x), higher)
    return xp.where(valid, out, np.nan)


@op("polygamma", 2)
def _polygamma(xp: Any, a: Any, x: Any) -> Any:
    require_float(a, "polygamma")
    sp = backend.special_functions(xp)
    return _in_float64(xp, lambda a, x: _polygamma_array(sp, xp, a, x), a, x)


@_polygamma.grad
def _(dy: Any, out: Any, a: Any, x: Any) -> Any:
    return None, _grad_x(_polygamma(add(a, 1), x), dy, x) if input_needed(1) else None


def polygamma(a: Any, x: Any, name: str | None = None) -> Any:
    """The polygamma function psi^(a)(x), the a-th derivative of digamma; `a` is a
    non-negative whole number of x's float dtype (other orders give NaN).

    >>> import layerflow as tf
    >>> round(float(tf.math.polygamma(1.0, 1.0)), 6)  # pi**2 / 6
    1.644934
    """
    return _polygamma(a, x)


@op("zeta", 2)
def _zeta(xp: Any, x: Any, q: Any) -> Any:
    require_float(x, "zeta")
    return _in_float64(xp, backend.special_functions(xp).zeta, x, q)


@_zeta.grad
def _(dy: Any, out: Any, x: Any, q: Any) -> Any:
    if not input_needed(1):
        return None, None
    return None, _grad_x(negative(multiply(x, _zeta(add(x, 1), q))), dy, q)


def zeta(x: Any, q: Any, name: str | None = None) -> Any:
    """The Hurwitz zeta function sum_n (n + q)**-x (NaN for x < 1, inf at x = 1).

    >>> import layerflow as tf
    >>> round(float(tf.math.zeta(2.0, 1.0)), 6)
    1.644934
    """
    return _zeta(x, q)


@op("igamma", 2)
def _igamma(xp: Any, a: Any, x: Any) -> Any:
    require_float(a, "igamma")
    return _in_float64(xp, backend.special_functions(xp).gammainc, a, x)


@op("igammac", 2)
def _igammac(xp: Any, a: Any, x: Any) -> Any:
    require_float(a, "igammac")
    return _in_float64(xp, backend.special_functions(xp).gammaincc, a, x)


def _igamma_dx(a: Any, x: Any) -> Any:
    """d/dx P(a, x) = exp(-x) x**(a-1) / Gamma(a)."""
    return exp(subtract(xlogy(subtract(a, 1), x), add(x, lgamma(a))))


@op("igamma_grad_a", 2)
def _igamma_grad_a(xp: Any, a: Any, x: Any) -> Any:
    """d/da P(a, x) from the series P = sum_n exp((a+n) log x - x - lgamma(a+n+1)), each term
    differentiated: t_n (log x - digamma(a+n+1))."""
    sp = backend.special_functions(xp)

    def series(a: Any, x: Any) -> Any:
        a, x = xp.broadcast_arrays(a, x)
        pos = x > 0
        xs = xp.where(pos, x, 1.0)
        logx = xp.log(xs)
        lg = sp.gammaln(a + 1)
        psi = sp.psi(a + 1)
        total = xp.zeros_like(xs)
        top = float(xp.max(xs)) if xs.size else 0.0
        for n in range(int(min(top + 12 * math.sqrt(top) + 40, 5000))):
            if n:
                lg = lg + xp.log(a + n)
                psi = psi + 1.0 / (a + n)
            total = total + xp.exp((a + n) * logx - xs - lg) * (logx - psi)
        return xp.where(pos, total, 0.0)

    return _in_float64(xp, series, a, x)


@_igamma.grad
def _(dy: Any, out: Any, a: Any, x: Any) -> Any:
    ga = _grad_x(_igamma_grad_a(a, x), dy, a) if input_needed(0) else None
    gx = _grad_x(_igamma_dx(a, x), dy, x) if input_needed(1) else None
    return ga, gx


@_igammac.grad
def _(dy: Any, out: Any, a: Any, x: Any) -> Any:
    ga = _grad_x(negative(_igamma_grad_a(a, x)), dy, a) if input_needed(0) else None
    gx = _grad_x(negative(_igamma_dx(a, x)), dy, x) if input_needed(1) else None
    return ga, gx


def igamma(a: Any, x: Any, name: str | None = None) -> Any:
    """The lower regularized incomplete gamma function P(a, x) (NaN for a <= 0 or x < 0).

    >>> import layerflow as tf
    >>> round(float(tf.math.igamma(1.0, 0.5)), 6)  # 1 - exp(-0.5)
    0.393469
    """
    return _igamma(a, x)


def igammac(a: Any, x: Any, name: str | None = None) -> Any:
    """The upper regularized incomplete gamma function Q(a, x) = 1 - P(a, x).

    >>> import layerflow as tf
    >>> round(float(tf.math.igammac(1.0, 0.5)), 6)  # exp(-0.5)
    0.606531
    """
    return _igammac(a, x)


@op("betainc", 3)
def _betainc(xp: Any, a: Any, b: Any, x: Any) -> Any:
    require_float(a, "betainc")
    return _in_float64(xp, backend.special_functions(xp).betainc, a, b, x)


@_betainc.grad
def _(dy: Any, out: Any, a: Any, b: Any, x: Any) -> Any:
    if not input_needed(2):
        return None, None, None
    log_beta = subtract(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    dx = exp(subtract(add(xlog1py(subtract(b, 1), negative(x)), xlogy(subtract(a, 1), x)),
                      log_beta))  # fmt: skip
    return None, None, _grad_x(dx, dy, x)


def betainc(a: Any, b: Any, x: Any, name: str | None = None) -> Any:
    """The regularized incomplete beta function I_x(a, b) (NaN outside 0 <= x <= 1).
    The gradient flows to `x` only, as in TF.

    >>> import layerflow as tf
    >>> float(tf.math.betainc(1.0, 2.0, 0.5))
    0.75
    """
    return _betainc(a, b, x)


def lbeta(x: Any, name: str | None = None) -> Any:
    """log(|Beta(x)|) over the last axis: sum(lgamma(x)) - lgamma(sum(x)); -inf for an empty
    last axis, as in TF.

    >>> import layerflow as tf
    >>> round(float(tf.math.lbeta([1.0, 2.0])), 6)  # log(1/2)
    -0.693147
    """
    from layerflow._src.framework import errors

    t = _as_tensor(x)
    if t._data.ndim == 0:
        raise errors.InvalidArgumentError(
            None, "lbeta", "lbeta: x must have rank >= 1 (the Beta function's arguments are the "
            "last axis); got a scalar.",
        )  # fmt: skip
    return subtract(reduce_sum(lgamma(t), axis=-1), lgamma(reduce_sum(t, axis=-1)))


# --- the error-function family --------------------------------------------------------------------

_SQRT_PI = math.sqrt(math.pi)


def _erfc_array(xp: Any, x: Any) -> Any:
    """erfc in float64: 1 - erf near 0, Laplace's continued fraction in the tails (as `erf`),
    so that erfc(x) for large x keeps its relative precision instead of becoming 1 - 1."""
    from layerflow._src.ops.elementwise_ops import _erf_array

    require_float(x, "erfc")
    z = x.astype(np.float64)
    a = xp.abs(z)
    out = xp.array(1.0 - _erf_array(xp, z), dtype=np.float64)  # an array even at rank 0
    big = a > 2.2
    if bool(big.any()):
        b = a[big]
        frac = b.copy()
        for k in range(60, 0, -1):
            frac = b + (k / 2.0) / frac
        tail = xp.exp(-b * b) / _SQRT_PI / frac
        out[big] = xp.where(z[big] > 0, tail, 2.0 - tail)
    return out.astype(x.dtype, copy=False)


erfc = op("erfc")(_erfc_array)
erfc.__doc__ = "The complementary error function 1 - erf(x), accurate in the right tail."


@erfc.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, multiply(exp(negative(square(x))), -2.0 / _SQRT_PI))


erfinv = _scipy_unary("erfinv", "erfinv", "The inverse of erf on (-1, 1) (+-inf at +-1).")
ndtri = _scipy_unary("ndtri", "ndtri", "The inverse of the standard normal CDF on (0, 1).")


@erfinv.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, multiply(exp(square(out)), _SQRT_PI / 2))


@ndtri.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, multiply(exp(multiply(square(out), 0.5)), math.sqrt(2 * math.pi)))


def erfcinv(x: Any, name: str | None = None) -> Any:
    """The inverse of erfc on (0, 2): -ndtri(x / 2) / sqrt(2), as TF computes it.

    >>> import layerflow as tf
    >>> round(float(tf.math.erfcinv(0.5)), 5)
    0.47694
    """
    return multiply(ndtri(multiply(_as_tensor(x), 0.5)), -1.0 / math.sqrt(2.0))


__all__ = [
    "betainc",
    "digamma",
    "erfc",
    "erfcinv",
    "erfinv",
    "igamma",
    "igammac",
    "lbeta",
    "lgamma",
    "ndtri",
    "polygamma",
    "zeta",
]
