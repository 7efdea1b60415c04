"""Complex numbers: `complex`, `real`, `imag`, `conj`, `angle`, with TF's gradients.

TF's convention for a real loss L of a complex z = x + iy: the gradient is dL/dx + i dL/dy.
So `real`'s gradient is `complex(dy, 0)`, `imag`'s `complex(0, dy)`, `complex`'s is the
(real, imag) pair of the incoming gradient, and `conj`'s is `conj(dy)`.
On real tensors `real` and `conj` are the identity, `imag` is zeros, `angle` is 0 or pi.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.ops.core_ops import _conj  # multiply's complex gradient needs it there
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _unbroadcast,
    add,
    less,
    negative,
    where,
    zeros_like,
)

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


@op("complex", 2)
def _complex(xp: Any, re: Any, im: Any) -> Any:
    out = xp.empty(xp.broadcast_shapes(re.shape, im.shape), dtype=_COMPLEX_OF[re.dtype])
    out.real = re
    out.imag = im
    return out


@_complex.grad
def _(dy: Any, out: Any, re: Any, im: Any) -> Any:
    g_re = _unbroadcast(real(dy), re) if input_needed(0) else None
    g_im = _unbroadcast(imag(dy), im) if input_needed(1) else None
    return g_re, g_im


def complex(real: Any, imag: Any, name: str | None = None) -> Any:  # noqa: A001 - TF's name
    """`real + imag * 1j` elementwise, with broadcasting: float32 parts give complex64,
    float64 parts complex128.

    >>> import layerflow as tf
    >>> tf.complex([2.25, 3.25], [4.75, 5.75]).numpy()
    array([2.25+4.75j, 3.25+5.75j], dtype=complex64)
    """
    from layerflow._src.autodiff.op import _convert_inputs  # same layer: the shared converter

    (re, im), _ = _convert_inputs(_complex.prim, [real, imag])
    a, b = re._data.dtype, im._data.dtype
    if a != b or a not in _COMPLEX_OF:
        raise TypeError(
            f"The `real` and `imag` components have incorrect types: {re.dtype.name} "
            f"{im.dtype.name}. They must be consistent, and one of [tf.float32, tf.float64]."
        )
    return _complex(re, im)


@op("real")
def _real(xp: Any, z: Any) -> Any:
    return xp.real(z).copy()


@_real.grad
def _(dy: Any, out: Any, z: Any) -> Any:
    return _complex(dy, zeros_like(dy))


@op("imag")
def _imag(xp: Any, z: Any) -> Any:
    return xp.imag(z).copy()


@_imag.grad
def _(dy: Any, out: Any, z: Any) -> Any:
    return _complex(zeros_like(dy), dy)


def _numeric(x: Any, opname: str) -> Any:
    t = _as_tensor(x)
    if t._data.dtype.kind not in "iufc":
        raise TypeError(f"{opname}: expected a numeric tensor, got dtype {t.dtype!r}.")
    return t


def real(input: Any, name: str | None = None) -> Any:  # noqa: A002 - TF's name
    """The real part of a complex tensor (float32 for complex64, float64 for complex128);
    a real tensor is returned as it is.

    >>> import layerflow as tf
    >>> tf.math.real(tf.constant([-2.25 + 4.75j])).numpy()
    array([-2.25])
    """
    t = _numeric(input, "real")
    return _real(t) if t._data.dtype.kind == "c" else t


def imag(input: Any, name: str | None = None) -> Any:  # noqa: A002 - TF's name
    """The imaginary part of a complex tensor; zeros for a real tensor.

    >>> import layerflow as tf
    >>> tf.math.imag(tf.constant([-2.25 + 4.75j])).numpy()
    array([4.75])
    """
    t = _numeric(input, "imag")
    return _imag(t) if t._data.dtype.kind == "c" else zeros_like(t)


def conj(x: Any, name: str | None = None) -> Any:
    """The complex conjugate; a real tensor is returned as it is.

    >>> import layerflow as tf
    >>> tf.math.conj(tf.constant([1 + 2j])).numpy()
    array([1.-2.j])
    """
    t = _numeric(x, "conj")
    return _conj(t) if t._data.dtype.kind == "c" else t


@op("angle")
def _angle(xp: Any, z: Any) -> Any:
    return xp.angle(z)


@_angle.grad
def _(dy: Any, out: Any, z: Any) -> Any:
    # TF's AngleGrad: -complex(dy, 0) / complex(imag(z), real(z)).
    from layerflow._src.ops.math_ops import _real_div

    return negative(_real_div(_complex(dy, zeros_like(dy)), _complex(_imag(z), _real(z))))


def angle(input: Any, name: str | None = None) -> Any:  # noqa: A002 - TF's name
    """The argument of each complex element, in (-pi, pi]; for a real tensor, pi where it is
    negative and 0 elsewhere.

    >>> import layerflow as tf
    >>> round(float(tf.math.angle(tf.constant(-1.0 + 0.0j))), 4)
    3.1416
    """
    t = _numeric(input, "angle")
    if t._data.dtype.kind == "c":
        return _angle(t)
    if t._data.dtype.kind != "f":
        raise TypeError(
            f"angle: cannot take the angle of a {t.dtype.name} tensor; cast it to a float or "
            "complex dtype."
        )
    zero = zeros_like(t)
    return where(less(t, zero), add(zero, np.pi), zero)


__all__ = ["angle", "complex", "conj", "imag", "real"]
