"""`tf.bitwise`: and, or, xor, invert and the shifts on integer tensors, without gradients.

Every op takes the eight integer dtypes (int8..int64, uint8..uint64) and rejects the others
with TF's `InvalidArgumentError`; binary ops broadcast and need both operands of one dtype.
Shift counts follow TF's CPU and GPU kernels: the count is clamped to `[0, bits - 1]`, so a
negative count shifts by 0 and a count of the bit width or more shifts by `bits - 1` (C++
leaves both undefined; TF defines them this way). `left_shift` shifts the unsigned bit
pattern, so it wraps without overflow; `right_shift` is arithmetic for signed dtypes.

>>> import layerflow as tf
>>> tf.bitwise.bitwise_and(tf.constant([12, 10]), 6).numpy()
array([4, 2], dtype=int32)
>>> tf.bitwise.left_shift(tf.constant([1, 1], tf.int8), [7, 100]).numpy()
array([-128, -128], dtype=int8)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]

_ALLOWED = "int8, int16, int32, int64, uint8, uint16, uint32, uint64"


def _check(kernel: str, name: str, x: Any) -> None:
    if x.dtype.kind not in "iu":
        dt = dtypes.from_numpy(x.dtype).name
        raise errors.InvalidArgumentError(
            None,
            name,
            f"Value for attr 'T' of {dt} is not in the list of allowed values: {_ALLOWED} "
            f"[Op:{kernel}]. tf.bitwise.{name} takes integer tensors; cast first, e.g. "
            "tf.cast(x, tf.int32).",
        )


def _binary(kernel: str, name: str, fn: Any, doc: str) -> Any:
    def forward(xp: Any, x: Any, y: Any) -> Any:
        _check(kernel, name, x)
        return fn(xp, x, y)

    forward.__name__ = name
    forward.__doc__ = doc
    return op(name, 2, spec="elementwise")(forward)


def _shift(xp: Any, x: Any, y: Any, left: bool) -> Any:
    bits = x.dtype.itemsize * 8
    x, y = xp.broadcast_arrays(x, y)
    count = xp.clip(y, 0, bits - 1).astype(x.dtype)
    if not left:
        return xp.right_shift(x, count)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    return xp.left_shift(x.view(unsigned), count.view(unsigned)).view(x.dtype)


_bitwise_and = _binary("BitwiseAnd", "bitwise_and", lambda xp, x, y: xp.bitwise_and(x, y), "x & y.")
_bitwise_or = _binary("BitwiseOr", "bitwise_or", lambda xp, x, y: xp.bitwise_or(x, y), "x | y.")
_bitwise_xor = _binary("BitwiseXor", "bitwise_xor", lambda xp, x, y: xp.bitwise_xor(x, y), "x ^ y.")
_left_shift = _binary("LeftShift", "left_shift", lambda xp, x, y: _shift(xp, x, y, True), "x << y.")
_right_shift = _binary(
    "RightShift", "right_shift", lambda xp, x, y: _shift(xp, x, y, False), "x >> y."
)


@op("invert", spec="same")
def _invert(xp: Any, x: Any) -> Any:
    _check("Invert", "invert", x)
    return xp.invert(x)


def bitwise_and(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise `x & y` of integer tensors (broadcasting).

    >>> import layerflow as tf
    >>> tf.bitwise.bitwise_and(tf.constant([0b1100]), tf.constant([0b1010])).numpy()
    array([8], dtype=int32)
    """
    return _bitwise_and(x, y)


def bitwise_or(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise `x | y` of integer tensors (broadcasting).

    >>> import layerflow as tf
    >>> tf.bitwise.bitwise_or(tf.constant([0b1100]), tf.constant([0b1010])).numpy()
    array([14], dtype=int32)
    """
    return _bitwise_or(x, y)


def bitwise_xor(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise `x ^ y` of integer tensors (broadcasting).

    >>> import layerflow as tf
    >>> tf.bitwise.bitwise_xor(tf.constant([0b1100]), tf.constant([0b1010])).numpy()
    array([6], dtype=int32)
    """
    return _bitwise_xor(x, y)


def invert(x: Any, name: str | None = None) -> Any:
    """Elementwise `~x`: every bit flipped (for unsigned dtypes, `max - x`).

    >>> import layerflow as tf
    >>> tf.bitwise.invert(tf.constant([0, 250], tf.uint8)).numpy()
    array([255,   5], dtype=uint8)
    """
    return _invert(x)


def left_shift(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise `x << y`, the count clamped to `[0, bits - 1]` as in TF; bits shifted out
    are dropped (it wraps, never overflows).

    >>> import layerflow as tf
    >>> tf.bitwise.left_shift(tf.constant([1, 3]), tf.constant([4, -1])).numpy()
    array([16,  3], dtype=int32)
    """
    return _left_shift(x, y)


def right_shift(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise `x >> y`, arithmetic (sign-filling) for signed dtypes, the count clamped to
    `[0, bits - 1]` as in TF.

    >>> import layerflow as tf
    >>> tf.bitwise.right_shift(tf.constant([-8, 8]), tf.constant([1, 40])).numpy()
    array([-4,  0], dtype=int32)
    """
    return _right_shift(x, y)
