"""`tf.math.special`: Bessel functions, Dawson's integral, the exponential integral, Fresnel
integrals and Spence's function, each with TF's gradient.

Forwards use SciPy's `special` (optional, imported on first use) in float64; gradients are
written with these ops themselves, so higher derivatives compose.
"""

from __future__ import annotations

import math
from typing import Any

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.ops.elementwise_more_ops import require_float
from layerflow._src.ops.elementwise_ops import cos, sin
from layerflow._src.ops.math_ops import (
    _real_div,
    add,
    equal,
    exp,
    log,
    multiply,
    negative,
    ones_like,
    sign,
    square,
    subtract,
    where,
    zeros_like,
)
from layerflow._src.ops.special_math_ops import _in_float64, _scipy_unary


def _bessel(name: str, scipy_name: str, what: str) -> Any:
    return _scipy_unary(name, scipy_name, what)


bessel_i0 = _bessel("bessel_i0", "i0", "The modified Bessel function of order 0, I0(x).")
bessel_i0e = _bessel("bessel_i0e", "i0e", "exp(-|x|) I0(x), which does not overflow.")
bessel_i1 = _bessel("bessel_i1", "i1", "The modified Bessel function of order 1, I1(x).")
bessel_i1e = _bessel("bessel_i1e", "i1e", "exp(-|x|) I1(x), which does not overflow.")
bessel_k0 = _bessel("bessel_k0", "k0", "The modified Bessel function of the second kind, K0.")
bessel_k0e = _bessel("bessel_k0e", "k0e", "exp(x) K0(x).")
bessel_k1 = _bessel("bessel_k1", "k1", "The modified Bessel function of the second kind, K1.")
bessel_k1e = _bessel("bessel_k1e", "k1e", "exp(x) K1(x).")
bessel_j0 = _bessel("bessel_j0", "j0", "The Bessel function of the first kind of order 0.")
bessel_j1 = _bessel("bessel_j1", "j1", "The Bessel function of the first kind of order 1.")
bessel_y0 = _bessel("bessel_y0", "y0", "The Bessel function of the second kind of order 0.")
bessel_y1 = _bessel("bessel_y1", "y1", "The Bessel function of the second kind of order 1.")


def _over_x(y: Any, x: Any) -> Any:
    """y / x with x = 0 replaced by 1 (the callers pick the limit there)."""
    zero = equal(x, zeros_like(x))
    return _real_div(y, where(zero, ones_like(x), x)), zero


@bessel_i0.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, bessel_i1(x))


@bessel_i0e.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(bessel_i1e(x), multiply(sign(x), out)))


@bessel_i1.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    ratio, zero = _over_x(out, x)  # I1'(x) = I0(x) - I1(x)/x, 1/2 at 0
    return multiply(dy, where(zero, 0.5 + zeros_like(x), subtract(bessel_i0(x), ratio)))


@bessel_i1e.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    ratio, zero = _over_x(out, x)
    d = subtract(bessel_i0e(x), multiply(sign(x), out))
    return multiply(dy, where(zero, 0.5 + zeros_like(x), subtract(d, ratio)))


@bessel_k0.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(multiply(dy, bessel_k1(x)))


@bessel_k0e.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(out, bessel_k1e(x)))


@bessel_k1.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(multiply(dy, add(bessel_k0(x), _real_div(out, x))))


@bessel_k1e.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(subtract(out, bessel_k0e(x)), _real_div(out, x)))


@bessel_j0.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(multiply(dy, bessel_j1(x)))


@bessel_j1.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    ratio, zero = _over_x(out, x)  # J1'(x) = J0(x) - J1(x)/x, 1/2 at 0
    return multiply(dy, where(zero, 0.5 + zeros_like(x), subtract(bessel_j0(x), ratio)))


@bessel_y0.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(multiply(dy, bessel_y1(x)))


@bessel_y1.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(bessel_y0(x), _real_div(out, x)))


# --- integrals ------------------------------------------------------------------------------------

dawsn = _scipy_unary("dawsn", "dawsn", "Dawson's integral exp(-x**2) int_0^x exp(t**2) dt.")
expint = _scipy_unary("expint", "expi", "The exponential integral Ei(x).")
spence = _scipy_unary("spence", "spence", "Spence's function int_1^x log(t) / (1 - t) dt.")


def _fresnel(name: str, index: int, doc: str) -> Any:
    def forward(xp: Any, x: Any) -> Any:
        require_float(x, name)
        fresnel = backend.special_functions(xp).fresnel  # returns (S, C)
        return _in_float64(xp, lambda v: fresnel(v)[index], x)

    forward.__name__ = name
    forward.__doc__ = doc
    return op(name)(forward)


fresnel_sin = _fresnel("fresnel_sin", 0, "The Fresnel sine integral int_0^x sin(pi t**2 / 2) dt.")
fresnel_cos = _fresnel("fresnel_cos", 1, "The Fresnel cosine integral int_0^x cos(pi t**2 / 2) dt.")


@dawsn.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(1.0, multiply(multiply(x, out), 2.0)))


@expint.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, _real_div(exp(x), x))


@fresnel_sin.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, sin(multiply(square(x), math.pi / 2)))


@fresnel_cos.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, cos(multiply(square(x), math.pi / 2)))


@spence.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    one = equal(x, ones_like(x))
    safe = where(one, zeros_like(x) + 2.0, x)
    d = _real_div(log(safe), subtract(1.0, safe))  # log(x) / (1 - x); -1 at x = 1
    return multiply(dy, where(one, negative(ones_like(x)), d))


__all__ = [
    "bessel_i0",
    "bessel_i0e",
    "bessel_i1",
    "bessel_i1e",
    "bessel_j0",
    "bessel_j1",
    "bessel_k0",
    "bessel_k0e",
    "bessel_k1",
    "bessel_k1e",
    "bessel_y0",
    "bessel_y1",
    "dawsn",
    "expint",
    "fresnel_cos",
    "fresnel_sin",
    "spence",
]
