"""Fast Fourier transforms (`tf.signal.fft*`, `rfft*`, `irfft*`, `fftshift`) with TF's gradients.

Three primitives carry everything: `_fft` (complex to complex over some axes, forward or
inverse), `_rfft` (real to the non-redundant half spectrum) and `_irfft` (its inverse). Each
receives an input already fitted to the transform's lengths (the public functions crop or
zero-pad it with `_fit`, which is composed from slicing and `pad`, so its gradient comes free).

Gradients, in TF's convention (a real loss's gradient for a complex z is dL/dRe z + i dL/dIm z,
i.e. the adjoint A^H g of a linear map A):
- fft: `ifft(g) * N`, ifft: `fft(g) / N` (TF's `_FFTGrad`, `_IFFTGrad`);
- rfft: `Re(N * ifft(g zero-extended to the full spectrum))`, the adjoint of "fft, keep the
  first n//2+1 bins", which is what TF's `_rfft_grad_helper` computes with its extra terms;
- irfft: `rfft(g) * mask / N` with mask [1, 2, ..., 2, (1 if n even)] (TF's
  `_irfft_grad_helper`): the Hermitian bins other than DC and Nyquist appear twice in the output.
TF registers no gradient for rfft3d/irfft3d; layerflow's formulas hold for every rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.array_ops import _getitem
from layerflow._src.ops.complex_ops import real
from layerflow._src.ops.manip_ops import pad, roll
from layerflow._src.ops.math_ops import multiply

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}
_REAL_OF = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


# --- primitives -----------------------------------------------------------------------------------


@op("fft", accepts="float")
def _fft(xp: Any, x: Any, axes: tuple[int, ...], inverse: bool) -> Any:
    fn = xp.fft.ifftn if inverse else xp.fft.fftn
    return fn(x, axes=axes).astype(x.dtype, copy=False)


@_fft.grad
def _(dy: Any, out: Any, x: Any, axes: tuple[int, ...], inverse: bool) -> Any:
    n = _size(dy, axes)
    return _scale(_fft(dy, axes, not inverse), 1.0 / n if inverse else float(n))


@op("rfft", accepts="real_float")
def _rfft(xp: Any, x: Any, axes: tuple[int, ...], lengths: tuple[int, ...]) -> Any:
    return xp.fft.rfftn(x, s=lengths, axes=axes).astype(_COMPLEX_OF[x.dtype], copy=False)


@_rfft.grad
def _(dy: Any, out: Any, x: Any, axes: tuple[int, ...], lengths: tuple[int, ...]) -> Any:
    full = _fit(dy, axes, lengths)  # zero-extends the last axis to the full spectrum
    n = int(np.prod(lengths))
    dx = real(_scale(_fft(full, axes, True), float(n)))
    return _fit(dx, axes, tuple(x._data.shape[a] for a in axes))


@op("irfft", accepts="float")
def _irfft(xp: Any, y: Any, axes: tuple[int, ...], lengths: tuple[int, ...]) -> Any:
    return xp.fft.irfftn(y, s=lengths, axes=axes).astype(_REAL_OF[y.dtype], copy=False)


@_irfft.grad
def _(dy: Any, out: Any, y: Any, axes: tuple[int, ...], lengths: tuple[int, ...]) -> Any:
    n_last = lengths[-1]
    half = n_last // 2 + 1
    mask = np.full(half, 2.0)
    mask[0] = 1.0
    if n_last % 2 == 0:
        mask[-1] = 1.0
    mask /= float(np.prod(lengths))
    shape = [1] * y._data.ndim
    shape[axes[-1]] = half
    weights = backend.to_device(mask.reshape(shape).astype(y._data.dtype), dy._device)
    dy_spec = multiply(_rfft(dy, axes, lengths), _const(weights, dy))
    return _fit(dy_spec, axes, tuple(y._data.shape[a] for a in axes))


# --- helpers --------------------------------------------------------------------------------------


def _const(array: Any, like: Any) -> Any:
    from layerflow._src.framework.tensor import Tensor

    return Tensor(array, like._device)


def _scale(z: Any, factor: float) -> Any:
    if factor == 1.0:
        return z
    xp = z._device.xp
    return multiply(z, _const(xp.asarray(factor, dtype=z._data.dtype), z))


def _size(t: Any, axes: tuple[int, ...]) -> int:
    return int(np.prod([t._data.shape[a] for a in axes]))


def _fit(t: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
    """`t` cropped or zero-padded at the end of each of `axes` to `sizes` (TF's fft_length)."""
    shape = t._data.shape
    key = [slice(None)] * len(shape)
    paddings = [[0, 0] for _ in shape]
    crop = pad_needed = False
    for a, s in zip(axes, sizes):
        if shape[a] > s:
            key[a] = slice(0, s)
            crop = True
        elif shape[a] < s:
            paddings[a][1] = s - shape[a]
            pad_needed = True
    if crop:
        t = _getitem(t, tuple(key))
    if pad_needed:
        t = pad(t, paddings)
    return t


def _complex_input(x: Any, opname: str) -> Any:
    if not isinstance(x, TensorLike):
        wide = isinstance(x, np.ndarray) and x.dtype in (np.float64, np.complex128)
        x = convert_to_tensor(x, np.complex128 if wide else np.complex64)
    if x._data.dtype.kind != "c":
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: expected a complex64 or complex128 tensor, got {x.dtype.name}. Cast it "
            f"first, e.g. tf.cast(x, tf.complex64), or use tf.signal.rfft for real signals.",
        )
    return x


def _real_input(x: Any, opname: str) -> Any:
    if not isinstance(x, TensorLike):
        wide = isinstance(x, np.ndarray) and x.dtype == np.float64
        x = convert_to_tensor(x, np.float64 if wide else np.float32)
    if x._data.dtype not in _COMPLEX_OF:
        raise ValueError(
            f"{opname} requires tf.float32 or tf.float64 inputs, got {x.dtype.name}. Cast it "
            "first, e.g. tf.cast(x, tf.float32)."
        )
    return x


def _inner_axes(x: Any, rank: int, opname: str) -> tuple[int, ...]:
    ndim = x._data.ndim
    if ndim < rank:
        raise ValueError(
            f"{opname}: the input must have rank at least {rank}, got shape {tuple(x._data.shape)}."
        )
    return tuple(range(ndim - rank, ndim))


def _lengths(fft_length: Any, count: int, opname: str) -> tuple[int, ...]:
    if isinstance(fft_length, TensorLike):
        fft_length = backend.to_host(fft_length._data)
    arr = np.asarray(fft_length).reshape(-1)
    if arr.dtype.kind not in "iu" or arr.size != count:
        raise ValueError(
            f"{opname}: fft_length must be {count} integer(s), got {np.asarray(fft_length)!r}."
        )
    if (arr <= 0).any():
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: fft_length must be positive, got {arr.tolist()}."
        )
    return tuple(int(v) for v in arr)


def _nd_axes(x: Any, axes: Any, opname: str) -> tuple[int, ...]:
    ndim = x._data.ndim
    if axes is None:
        return tuple(range(ndim))
    out = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -ndim <= a < ndim:
            raise ValueError(f"{opname}: axis {a} is out of range for a rank-{ndim} input.")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{opname}: axes must be distinct, got {list(axes)}.")
    return tuple(out)


def _norm_factor(lengths: tuple[int, ...], norm: Any, inverse: bool, opname: str) -> float:
    """The factor TF's nd wrappers apply to the input ("backward": none)."""
    if norm is None or norm == "backward":
        return 1.0
    n = float(np.prod(lengths))
    if norm == "forward":
        return n if inverse else 1.0 / n
    if norm == "ortho":
        return float(np.sqrt(n)) if inverse else 1.0 / float(np.sqrt(n))
    raise ValueError(f"{opname}: norm must be 'backward', 'forward' or 'ortho', got {norm!r}.")


# --- complex transforms ---------------------------------------------------------------------------


def _complex_transform(rank: int, inverse: bool, opname: str) -> Any:
    def transform(input: Any, name: str | None = None) -> Any:  # noqa: A002 - TF's name
        x = _complex_input(input, opname)
        if x._data.ndim < rank:
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: input must have rank of at least {rank} but got shape "
                f"{tuple(x._data.shape)}.",
            )
        return _fft(x, _inner_axes(x, rank, opname), inverse)

    what = "inverse " if inverse else ""
    transform.__name__ = transform.__qualname__ = opname
    transform.__doc__ = (
        f"The {what}{rank}-D discrete Fourier transform over the innermost {rank} axis(es) of a "
        "complex64/complex128 tensor (unnormalized forward, 1/N inverse, as TF)."
    )
    return transform


fft = _complex_transform(1, False, "fft")
ifft = _complex_transform(1, True, "ifft")
fft2d = _complex_transform(2, False, "fft2d")
ifft2d = _complex_transform(2, True, "ifft2d")
fft3d = _complex_transform(3, False, "fft3d")
ifft3d = _complex_transform(3, True, "ifft3d")
fft.__doc__ += """

    >>> import layerflow as tf
    >>> tf.signal.fft(tf.constant([1 + 0j, 0j, 0j, 0j], tf.complex64)).numpy()
    array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """


def _nd_complex(x: Any, fft_length: Any, axes: Any, norm: Any, inverse: bool, opname: str) -> Any:
    x = _complex_input(x, opname)
    ax = _nd_axes(x, axes, opname)
    shape = x._data.shape
    lengths = (
        tuple(shape[a] for a in ax) if fft_length is None else _lengths(fft_length, len(ax), opname)
    )
    x = _scale(_fit(x, ax, lengths), _norm_factor(lengths, norm, inverse, opname))
    return _fft(x, ax, inverse)


def fftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: Any = None,
          name: str | None = None) -> Any:  # fmt: skip
    """The N-D FFT over `axes` (default: all), the input cropped or zero-padded to `fft_length`
    along them; `norm` is 'backward' (default), 'forward' or 'ortho', as NumPy's.

    >>> import layerflow as tf
    >>> tf.signal.fftnd(tf.ones([2, 2], tf.complex64)).numpy().real
    array([[4., 0.],
           [0., 0.]], dtype=float32)
    """
    return _nd_complex(input_tensor, fft_length, axes, norm, False, "fftnd")


def ifftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: Any = None,
           name: str | None = None) -> Any:  # fmt: skip
    """The inverse of `fftnd` (same arguments)."""
    return _nd_complex(input_tensor, fft_length, axes, norm, True, "ifftnd")


# --- real transforms ------------------------------------------------------------------------------


def _real_forward(x: Any, ax: tuple[int, ...], lengths: tuple[int, ...], norm: Any,
                  opname: str) -> Any:  # fmt: skip
    x = _scale(_fit(x, ax, lengths), _norm_factor(lengths, norm, False, opname))
    return _rfft(x, ax, lengths)


def _real_inverse(y: Any, ax: tuple[int, ...], lengths: tuple[int, ...], norm: Any,
                  opname: str) -> Any:  # fmt: skip
    half = lengths[:-1] + (lengths[-1] // 2 + 1,)
    y = _scale(_fit(y, ax, half), _norm_factor(lengths, norm, True, opname))
    return _irfft(y, ax, lengths)


def _rfft_transform(rank: int, opname: str) -> Any:
    def transform(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
        x = _real_input(input_tensor, opname)
        ax = _inner_axes(x, rank, opname)
        lengths = (
            tuple(x._data.shape[a] for a in ax)
            if fft_length is None
            else _lengths(fft_length, rank, opname)
        )
        return _real_forward(x, ax, lengths, None, opname)

    transform.__name__ = transform.__qualname__ = opname
    transform.__doc__ = (
        f"The {rank}-D FFT of a real float32/float64 signal over its innermost {rank} axis(es): "
        "the fft_length[-1] // 2 + 1 unique bins of the innermost axis (complex64/complex128). "
        "The input is cropped or zero-padded to `fft_length` (default: its own shape)."
    )
    return transform


def _irfft_transform(rank: int, opname: str) -> Any:
    def transform(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
        y = _complex_input(input_tensor, opname)
        ax = _inner_axes(y, rank, opname)
        if fft_length is None:
            lengths = tuple(y._data.shape[a] for a in ax)
            lengths = lengths[:-1] + (max(0, 2 * (lengths[-1] - 1)),)
        else:
            lengths = _lengths(fft_length, rank, opname)
        return _real_inverse(y, ax, lengths, None, opname)

    transform.__name__ = transform.__qualname__ = opname
    transform.__doc__ = (
        f"The inverse of `rfft{'' if rank == 1 else f'{rank}d'}`: a real signal of shape "
        f"`fft_length` over the innermost {rank} axis(es) (default: 2 * (inner - 1) for the "
        "innermost). The input is cropped or zero-padded to fft_length[:-1] + "
        "[fft_length[-1] // 2 + 1]."
    )
    return transform


rfft = _rfft_transform(1, "rfft")
irfft = _irfft_transform(1, "irfft")
rfft2d = _rfft_transform(2, "rfft2d")
irfft2d = _irfft_transform(2, "irfft2d")
rfft3d = _rfft_transform(3, "rfft3d")
irfft3d = _irfft_transform(3, "irfft3d")
rfft.__doc__ += """

    >>> import layerflow as tf
    >>> tf.signal.rfft([1.0, 2.0, 3.0, 4.0]).numpy()
    array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """


def rfftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: Any = None,
           name: str | None = None) -> Any:  # fmt: skip
    """The N-D real FFT over `axes` (default: all; the last of them is halved), with
    `fft_length` cropping or padding and NumPy's `norm`."""
    x = _real_input(input_tensor, "rfftnd")
    ax = _nd_axes(x, axes, "rfftnd")
    lengths = (
        tuple(x._data.shape[a] for a in ax)
        if fft_length is None
        else _lengths(fft_length, len(ax), "rfftnd")
    )
    return _real_forward(x, ax, lengths, norm, "rfftnd")


def irfftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: Any = None,
            name: str | None = None) -> Any:  # fmt: skip
    """The inverse of `rfftnd` (default fft_length: the input's shape on `axes` with the last
    one 2 * (n - 1))."""
    y = _complex_input(input_tensor, "irfftnd")
    ax = _nd_axes(y, axes, "irfftnd")
    if fft_length is None:
        lengths = tuple(y._data.shape[a] for a in ax)
        lengths = lengths[:-1] + (max(0, 2 * (lengths[-1] - 1)),)
    else:
        lengths = _lengths(fft_length, len(ax), "irfftnd")
    return _real_inverse(y, ax, lengths, norm, "irfftnd")


# --- shifts ---------------------------------------------------------------------------------------


def _shift(x: Any, axes: Any, sign: int) -> Any:
    if not isinstance(x, TensorLike):
        x = convert_to_tensor(x)
    shape = x._data.shape
    if axes is None:
        axes = tuple(range(len(shape)))
    ax = [int(a) for a in np.asarray(axes).reshape(-1)]
    if not ax:
        return x
    return roll(x, [sign * (shape[a] // 2) for a in ax], ax)


def fftshift(x: Any, axes: Any = None, name: str | None = None) -> Any:
    """Move the zero-frequency bin to the centre of `axes` (default: all), as NumPy's.

    >>> import layerflow as tf
    >>> tf.signal.fftshift([0.0, 1.0, 2.0, 3.0, 4.0, -5.0, -4.0, -3.0, -2.0, -1.0]).numpy()
    array([-5., -4., -3., -2., -1.,  0.,  1.,  2.,  3.,  4.], dtype=float32)
    """
    return _shift(x, axes, 1)


def ifftshift(x: Any, axes: Any = None, name: str | None = None) -> Any:
    """The inverse of `fftshift` (they differ by one sample along odd-length axes)."""
    return _shift(x, axes, -1)


__all__ = [
    "fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "fftnd", "ifftnd",
    "rfft", "irfft", "rfft2d", "irfft2d", "rfft3d", "irfft3d", "rfftnd", "irfftnd",
    "fftshift", "ifftshift",
]  # fmt: skip
