"""TF 2.21's top-level raw N-D FFT ops: `tf.fftnd`, `tf.ifftnd`, `tf.rfftnd`, `tf.irfftnd`.

These are TF's `FFTND`/`IFFTND`/`RFFTND`/`IRFFTND` ops as `tf.raw_ops` exposes them: `fft_length`
and `axes` are required (one length per axis; the input is cropped or zero-padded to them, for
`irfftnd` to `fft_length[:-1] + [fft_length[-1] // 2 + 1]`), there is no `norm`, and
`rfftnd`/`irfftnd` take the output dtype (`Tcomplex`/`Treal`). In TF 2.21 they have GPU kernels
only and no registered gradients; layerflow runs them on every device, through the same
primitives as `tf.signal.fftnd` & co. (`fft_ops.py`), so they carry the gradients of TF's
`fft`/`rfft`/`irfft` family (adjoints in TF's complex convention).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import fft_ops

_PAIRS = {"float32": "complex64", "float64": "complex128"}


def _ints(value: Any, what: str, opname: str) -> list[int]:
    if isinstance(value, TensorLike):
        value = backend.to_host(value._data)
    arr = np.asarray(value)
    if arr.ndim > 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what} must be a 1-D int32 tensor, got {value!r}."
        )
    return [int(v) for v in arr.reshape(-1)]


def _args(x: Any, fft_length: Any, axes: Any, opname: str) -> tuple[list[int], list[int]]:
    lengths = _ints(fft_length, "fft_length", opname)
    ax = _ints(axes, "axes", opname)
    if len(lengths) != len(ax):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: fft_length and axes must have the same length, got fft_length="
            f"{lengths} and axes={ax}.",
        )
    if not ax:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: axes must name at least one axis to transform."
        )
    return lengths, ax


def fftnd(input: Any, fft_length: Any, axes: Any, name: str | None = None) -> Any:  # noqa: A002
    """The N-D FFT of a complex tensor over `axes`, cropped/padded to `fft_length` (TF's raw op).

    >>> import layerflow as tf
    >>> tf.fftnd(tf.ones([2, 2], tf.complex64), fft_length=[2, 2], axes=[0, 1]).numpy().real
    array([[4., 0.],
           [0., 0.]], dtype=float32)
    """
    lengths, ax = _args(input, fft_length, axes, "FFTND")
    return fft_ops._nd_complex(input, lengths, ax, None, False, "FFTND")


def ifftnd(input: Any, fft_length: Any, axes: Any, name: str | None = None) -> Any:  # noqa: A002
    """The inverse N-D FFT (1/N scaled) of a complex tensor over `axes` (TF's raw op)."""
    lengths, ax = _args(input, fft_length, axes, "IFFTND")
    return fft_ops._nd_complex(input, lengths, ax, None, True, "IFFTND")


def _check_pair(real: Any, cplx: Any, opname: str) -> None:
    if _PAIRS.get(real.name) != cplx.name:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: a {real.name} signal pairs with {_PAIRS.get(real.name, 'no complex type')}"
            f" spectra, got {cplx.name}. Use float32 with complex64 or float64 with complex128.",
        )


def rfftnd(input: Any, fft_length: Any, axes: Any, Tcomplex: Any = dtypes.complex64,  # noqa: A002, N803
           name: str | None = None) -> Any:  # fmt: skip
    """The N-D FFT of a real tensor over `axes`; the last of them keeps fft_length[-1]//2 + 1
    bins (TF's raw op; `Tcomplex` is complex64 for float32 input, complex128 for float64).

    >>> import layerflow as tf
    >>> tf.rfftnd(tf.ones([2, 4]), fft_length=[2, 4], axes=[0, 1]).shape
    TensorShape([2, 3])
    """
    lengths, ax = _args(input, fft_length, axes, "RFFTND")
    x = fft_ops._real_input(input, "RFFTND")
    _check_pair(x.dtype, dtypes.as_dtype(Tcomplex), "RFFTND")
    return fft_ops.rfftnd(x, lengths, ax)


def irfftnd(input: Any, fft_length: Any, axes: Any, Treal: Any = dtypes.float32,  # noqa: A002, N803
            name: str | None = None) -> Any:  # fmt: skip
    """The inverse of `rfftnd`: a real tensor of `fft_length` over `axes` (TF's raw op; `Treal`
    is float32 for complex64 input, float64 for complex128)."""
    lengths, ax = _args(input, fft_length, axes, "IRFFTND")
    y = fft_ops._complex_input(input, "IRFFTND")
    _check_pair(dtypes.as_dtype(Treal), y.dtype, "IRFFTND")
    return fft_ops.irfftnd(y, lengths, ax)


__all__ = ["fftnd", "ifftnd", "irfftnd", "rfftnd"]
