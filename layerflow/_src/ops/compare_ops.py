"""Comparisons, logic, casts and `*_like` constructors: ops without a gradient of their own.

`cast`'s gradient is a cast back; the others have none (comparisons and logic give bools).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import dispatchable

# --- comparisons and logic (no gradient) ---------------------------------------------------------


def _compare(name: str, fn: Any, accepts: str | None = None) -> Any:
    def forward(xp: Any, x: Any, y: Any) -> Any:
        return fn(x, y)

    forward.__name__ = name
    forward.__doc__ = f"Elementwise `{name}` (a bool tensor)."
    return op(name, 2, accepts=accepts)(forward)


equal = _compare("equal", np.equal)
not_equal = _compare("not_equal", np.not_equal)
less = _compare("less", np.less, "non_string")
less_equal = _compare("less_equal", np.less_equal, "non_string")
greater = _compare("greater", np.greater, "non_string")
greater_equal = _compare("greater_equal", np.greater_equal, "non_string")
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


@op("logical_not")
def logical_not(xp: Any, x: Any) -> Any:
    return xp.logical_not(x)


@op("cast", 1, may_alias=True, quiet=True)  # overflow to inf (float64 -> float16) is silent
def _cast(xp: Any, x: Any, dtype: Any) -> Any:
    # TF has no cast between strings and numbers
    if (x.dtype.kind == "O") != (np.dtype(dtype).kind == "O"):
        src, dst = dtypes.from_numpy(x.dtype).name, dtypes.from_numpy(dtype).name
        raise errors.UnimplementedError(
            None,
            "cast",
            f"Cast {src} to {dst} is not supported. Use tf.strings.to_number to parse strings "
            "and tf.strings.as_string to format numbers.",
        )
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = xp.real(x)  # TF keeps the real part (NumPy would warn)
    if dtype.kind in "iu" and x.dtype.kind == "f":
        return _float_to_int(xp, x, np.dtype(dtype))
    return x.astype(dtype, copy=False)


_UNSIGNED_WIDE = (np.dtype(np.uint32), np.dtype(np.uint64))


def _float_to_int(xp: Any, x: Any, dtype: Any) -> Any:
    """Floats to integers as TF's CPU kernel (C++ truncation on x86), without NumPy's warning.

    The value is truncated toward zero into int32 (int64 for the 4- and 8-byte targets but
    int32); NaN, inf and values out of that range become its minimum (x86's "integer
    indefinite"; for uint32, NaN and inf give 2**31); narrower targets keep the low bits.
    So NaN -> 0 for uint8 and -2**31 for int32, 300.7 -> 44 and -1.5 -> 255 for uint8,
    -3e9 -> 2**64 - 3e9 for uint64. (Out-of-range casts are undefined in C++: TF's vectorized
    loop over long tensors of 1- and 2-byte targets saturates some values instead; use
    tf.saturate_cast for a defined clamp.)

    NumPy's own cast to the signed and 1- or 2-byte targets is that same C conversion on x86,
    value for value (checked against this function on NaN, inf and out-of-range values at
    every array length), and the fastest; uint32 and uint64 (NumPy converts them through
    other instructions) and the other array modules (CUDA saturates) take the rule below.
    """
    if xp is np and dtype not in _UNSIGNED_WIDE:
        return x.astype(dtype)
    wide = np.dtype(np.int32 if dtype.itemsize < 4 or dtype == np.int32 else np.int64)
    bound = float(2 ** (8 * wide.itemsize - 1))
    # The common case, every value finite and in range: C's cast truncates toward zero. Two
    # reductions decide it (NaN propagates through min and max and fails the test).
    if x.size == 0 or (float(x.min()) > -bound - 1 and float(x.max()) < bound):
        return x.astype(wide).astype(dtype, copy=False)
    t = xp.trunc(x.astype(np.float64))
    bad = ~((t >= -bound) & (t < bound))  # also NaN
    if dtype == np.uint64:  # 2**63 <= t < 2**64 fits the unsigned target
        big = (t >= bound) & (t < 2 * bound)
        bad &= ~big
        t = xp.where(big, t - bound, t)
    out = xp.where(bad, 0, t).astype(wide)
    out[bad] = np.iinfo(wide).min
    if dtype == np.uint32:  # NaN and inf (not finite overflow) give 2**31 there
        out[~xp.isfinite(t)] = 2**31
    if dtype == np.uint64:
        return out.astype(dtype) + xp.where(big, np.uint64(2**63), np.uint64(0)).astype(dtype)
    return out.astype(dtype)


@_cast.grad
def _(dy: Any, out: Any, x: Any, dtype: Any) -> Any:
    if x._data.dtype.kind not in "fc":
        return None
    return _cast(dy, x._data.dtype)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    """Convert `x` to `dtype` (floats to ints truncate toward zero, as in TF)."""
    return _cast(x, dtypes.as_dtype(dtype).np)


@op("zeros_like", may_alias=False)
def _zeros_like(xp: Any, x: Any, dtype: Any = None) -> Any:
    if np.dtype(x.dtype if dtype is None else dtype).kind == "O":
        return xp.full(x.shape, b"", dtype=object)  # a string tensor's zero is b"" (TF)
    return xp.zeros_like(x, dtype=dtype)


@op("ones_like", accepts="non_string")
def _ones_like(xp: Any, x: Any, dtype: Any = None) -> Any:
    return xp.ones_like(x, dtype=dtype)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _zeros_like(input, None if dtype is None else dtypes.as_dtype(dtype).np)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _ones_like(input, None if dtype is None else dtypes.as_dtype(dtype).np)
