"""`tf.signal` spectral ops, composed from FFTs, framing and windows as TF composes them
(so every gradient comes from the primitives): `stft`, `inverse_stft`,
`inverse_stft_window_fn`, `dct`/`idct` (types I-IV), `mdct`/`inverse_mdct`,
`linear_to_mel_weight_matrix` (the HTK mel scale, 1127 ln(1 + f / 700)) and
`mfccs_from_log_mel_spectrograms`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import concat, constant
from layerflow._src.ops.complex_ops import complex as _complex
from layerflow._src.ops.complex_ops import real
from layerflow._src.ops.fft_ops import _fit, irfft, rfft
from layerflow._src.ops.math_ops import multiply
from layerflow._src.ops.signal_ops import (
    _int_scalar,
    _tensor,
    frame,
    hann_window,
    overlap_and_add,
    vorbis_window,
)

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def _like(values: np.ndarray, t: Any) -> Any:
    """A constant with `t`'s dtype (or the complex dtype of a real `t`) on `t`'s device."""
    return Tensor(backend.to_device(np.ascontiguousarray(values), t._device), t._device)


def _float_input(x: Any, opname: str) -> Any:
    t = _tensor(x)
    if t._data.dtype not in _COMPLEX_OF:
        raise ValueError(
            f"{opname}: expected a float32 or float64 tensor, got {t.dtype.name}. Cast it "
            "first, e.g. tf.cast(x, tf.float32)."
        )
    return t


# --- DCT ------------------------------------------------------------------------------------------


def _validate_dct(x: Any, dct_type: Any, n: Any, axis: Any, norm: Any, opname: str) -> None:
    if axis != -1:
        raise NotImplementedError(f"{opname}: axis must be -1, got {axis}.")
    if n is not None and (not isinstance(n, int | np.integer) or n < 1):
        raise ValueError(f"{opname}: n should be a positive integer or None, got {n!r}.")
    if dct_type not in (1, 2, 3, 4):
        raise ValueError(f"{opname}: types I, II, III and IV are supported, got type={dct_type}.")
    if norm not in (None, "ortho"):
        raise ValueError(
            f"{opname}: unknown normalization, expected None or 'ortho', got {norm!r}."
        )
    if dct_type == 1:
        if norm == "ortho":
            raise ValueError(f"{opname}: normalization is not supported for the type-I DCT.")
        if x._data.ndim and x._data.shape[-1] < 2:
            raise ValueError(f"{opname}: the type-I DCT needs an innermost dimension above one.")


def _dct(x: Any, dct_type: int, n: int | None, norm: str | None) -> Any:
    if n is not None:
        x = _fit(x, (x._data.ndim - 1,), (n,))
    dim = x._data.shape[-1]
    real_np = x._data.dtype
    if dct_type == 1:
        return real(rfft(concat([x, x[..., -2:0:-1]], axis=-1)))
    if dct_type == 2:
        k = np.arange(dim)
        scale = (2.0 * np.exp(-1j * k * np.pi * 0.5 / dim)).astype(_COMPLEX_OF[real_np])
        out = real(multiply(rfft(x, [2 * dim])[..., :dim], _like(scale, x)))
        if norm == "ortho":
            w = np.full(dim, math.sqrt(2.0) * 0.5 / math.sqrt(dim))
            w[0] = 0.5 / math.sqrt(dim)
            out = multiply(out, _like(w.astype(real_np), x))
        return out
    if dct_type == 3:
        if norm == "ortho":
            w = np.full(dim, math.sqrt(dim) * math.sqrt(0.5))
            w[0] = math.sqrt(dim)
        else:
            w = np.full(dim, float(dim))
        x = multiply(x, _like(w.astype(real_np), x))
        k = np.arange(dim)
        scale = (2.0 * np.exp(1j * k * np.pi * 0.5 / dim)).astype(_COMPLEX_OF[real_np])
        spec = multiply(_like(scale, x), _complex(x, x * 0))
        return irfft(spec, [2 * dim])[..., :dim]
    out = _dct(x, 2, 2 * dim, None)[..., 1::2]
    if norm == "ortho":
        out = multiply(out, _like(np.asarray(math.sqrt(0.5) / math.sqrt(dim), real_np), x))
    return out


def dct(input: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None, name: str | None = None) -> Any:  # fmt: skip
    """The discrete cosine transform of types I-IV over the innermost axis (SciPy's
    definitions; `norm='ortho'` for types II-IV), the input cropped or zero-padded to `n`.

    >>> import layerflow as tf
    >>> tf.signal.dct([1.0, 3.0], norm="ortho").numpy().round(4)
    array([ 2.8284, -1.4142], dtype=float32)
    """
    x = _float_input(input, "dct")
    _validate_dct(x, type, n, axis, norm, "dct")
    return _dct(x, type, n, norm)


def idct(input: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None, name: str | None = None) -> Any:  # fmt: skip
    """The inverse DCT: `dct` of the inverse type (I->I, II->III, III->II, IV->IV); with
    `norm='ortho'` it inverts `dct` exactly, without it up to a factor 2N (2(N-1) for type I)."""
    x = _float_input(input, "idct")
    _validate_dct(x, type, n, axis, norm, "idct")
    return _dct(x, {1: 1, 2: 3, 3: 2, 4: 4}[type], n, norm)


# --- STFT -----------------------------------------------------------------------------------------


def _enclosing_power_of_two(value: int) -> int:
    return int(2 ** np.ceil(np.log(value) / np.log(2.0)))


def stft(signals: Any, frame_length: Any, frame_step: Any, fft_length: Any = None,
         window_fn: Any = hann_window, pad_end: bool = False,
         name: str | None = None) -> Any:  # fmt: skip
    """The short-time Fourier transform of `[..., samples]` real signals:
    `[..., frames, fft_length // 2 + 1]` complex bins (fft_length default: the smallest power
    of two >= frame_length; each frame multiplied by `window_fn(frame_length, dtype=...)`).

    >>> import layerflow as tf
    >>> tf.signal.stft(tf.ones([8]), frame_length=4, frame_step=2).shape
    TensorShape([3, 3])
    """
    x = _float_input(signals, "stft")
    length = _int_scalar(frame_length, "stft", "frame_length")
    step = _int_scalar(frame_step, "stft", "frame_step")
    n_fft = (
        _enclosing_power_of_two(length)
        if fft_length is None
        else _int_scalar(fft_length, "stft", "fft_length")
    )
    framed = frame(x, length, step, pad_end=pad_end)
    if window_fn is not None:
        framed = multiply(framed, window_fn(length, dtype=framed.dtype))
    return rfft(framed, [n_fft])


def inverse_stft_window_fn(frame_step: Any, forward_window_fn: Any = hann_window,
                           name: str | None = None) -> Any:  # fmt: skip
    """A window_fn for `inverse_stft` that makes it invert `stft` made with
    `forward_window_fn`: the forward window divided by the overlapped sum of its squares."""
    step = _int_scalar(frame_step, "inverse_stft_window_fn", "frame_step")

    def inverse_stft_window_fn_inner(frame_length: Any, dtype: Any) -> Any:
        length = _int_scalar(frame_length, "inverse_stft_window_fn", "frame_length")
        forward = np.asarray(forward_window_fn(length, dtype=dtype), dtype=np.float64)
        overlaps = -(-length // step)
        denom = np.pad(forward**2, (0, overlaps * step - length)).reshape(overlaps, step)
        denom = np.tile(denom.sum(0, keepdims=True), (overlaps, 1)).reshape(-1)[:length]
        safe = np.where(denom == 0.0, 1.0, denom)
        window = np.where(denom == 0.0, 0.0, forward / safe)
        return constant(window.astype(dtypes.as_dtype(dtype).np))

    return inverse_stft_window_fn_inner


def inverse_stft(stfts: Any, frame_length: Any, frame_step: Any, fft_length: Any = None,
                 window_fn: Any = hann_window, name: str | None = None) -> Any:  # fmt: skip
    """The inverse of `stft`: inverse real FFTs of `[..., frames, bins]`, cropped or padded to
    frame_length, windowed with `window_fn` and overlap-added. Perfect reconstruction needs
    `window_fn=tf.signal.inverse_stft_window_fn(frame_step)`."""
    s = _tensor(stfts)
    if s._data.dtype.kind != "c":
        raise ValueError(
            f"inverse_stft: expected complex64 or complex128 stfts, got {s.dtype.name}."
        )
    if s._data.ndim < 2:
        raise ValueError(
            f"inverse_stft: stfts must have rank at least 2, got shape {tuple(s._data.shape)}."
        )
    length = _int_scalar(frame_length, "inverse_stft", "frame_length")
    step = _int_scalar(frame_step, "inverse_stft", "frame_step")
    n_fft = (
        _enclosing_power_of_two(length)
        if fft_length is None
        else _int_scalar(fft_length, "inverse_stft", "fft_length")
    )
    frames = irfft(s, [n_fft])
    frames = _fit(frames, (frames._data.ndim - 1,), (length,))
    if window_fn is not None:
        frames = multiply(frames, window_fn(length, dtype=frames.dtype))
    return overlap_and_add(frames, step)


# --- MDCT -----------------------------------------------------------------------------------------


def mdct(signals: Any, frame_length: Any, window_fn: Any = vorbis_window, pad_end: bool = False,
         norm: str | None = None, name: str | None = None) -> Any:  # fmt: skip
    """The modified DCT of `[..., samples]` real signals: frames of `frame_length` (a multiple
    of 4) every frame_length // 2, windowed, folded and DCT-IV'd to `[..., frames,
    frame_length // 2]`."""
    x = _float_input(signals, "mdct")
    length = _int_scalar(frame_length, "mdct", "frame_length")
    if length % 4 != 0:
        raise ValueError(f"mdct: the frame length must be a multiple of 4, got {length}.")
    framed = frame(x, length, length // 2, pad_end=pad_end)
    if window_fn is not None:
        framed = multiply(framed, window_fn(length, dtype=framed.dtype))
    else:
        framed = framed * (1.0 / np.sqrt(2))
    q = length // 4
    a, b, c, d = (framed[..., i * q : (i + 1) * q] for i in range(4))
    first = -c[..., ::-1] - d
    second = a - b[..., ::-1]
    return dct(concat([first, second], axis=-1), type=4, norm=norm)


def inverse_mdct(mdcts: Any, window_fn: Any = vorbis_window, norm: str | None = None,
                 name: str | None = None) -> Any:  # fmt: skip
    """The inverse of `mdct` (time-domain aliasing cancelled by overlap-add; exact with a
    power-complementary window such as the Vorbis or KBD window)."""
    m = _float_input(mdcts, "inverse_mdct")
    if m._data.ndim < 2:
        raise ValueError(
            f"inverse_mdct: mdcts must have rank at least 2, got shape {tuple(m._data.shape)}."
        )
    half = m._data.shape[-1]
    if norm is None:
        y = dct(m, type=4) * (0.5 / half)
    elif norm == "ortho":
        y = dct(m, type=4, norm="ortho")
    else:
        raise ValueError(f"inverse_mdct: norm must be None or 'ortho', got {norm!r}.")
    h = half // 2
    lo, hi = y[..., :h], y[..., h:]
    frames = concat([hi, -hi[..., ::-1], -lo[..., ::-1], -lo], axis=-1)
    if window_fn is not None:
        frames = multiply(frames, window_fn(2 * half, dtype=frames.dtype))
    else:
        frames = frames * (1.0 / np.sqrt(2))
    return overlap_and_add(frames, half)


# --- mel ------------------------------------------------------------------------------------------

_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(f: Any) -> Any:
    return _MEL_HIGH_FREQUENCY_Q * np.log(1.0 + np.asarray(f) / _MEL_BREAK_FREQUENCY_HERTZ)


def _host_float(v: Any) -> float:
    return float(backend.to_host(v._data)) if isinstance(v, TensorLike) else float(v)


def linear_to_mel_weight_matrix(num_mel_bins: int = 20, num_spectrogram_bins: int = 129,
                                sample_rate: Any = 8000, lower_edge_hertz: Any = 125.0,
                                upper_edge_hertz: Any = 3800.0, dtype: Any = "float32",
                                name: str | None = None) -> Any:  # fmt: skip
    """A `[num_spectrogram_bins, num_mel_bins]` matrix of triangular filters, evenly spaced on
    the HTK mel scale between the edges, that maps linear-frequency magnitudes to mel bins
    (the DC bin gets no weight, as TF).

    >>> import layerflow as tf
    >>> tf.signal.linear_to_mel_weight_matrix(4, 9, 8000, 100.0, 4000.0).shape
    TensorShape([9, 4])
    """
    sample_rate = _host_float(sample_rate)
    lower, upper = _host_float(lower_edge_hertz), _host_float(upper_edge_hertz)
    dt = dtypes.as_dtype(dtype)
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower}")
    if lower >= upper:
        raise ValueError(f"lower_edge_hertz {lower:.1f} >= upper_edge_hertz {upper:.1f}")
    if sample_rate <= 0.0:
        raise ValueError(f"sample_rate must be positive. Got: {sample_rate}")
    if upper > sample_rate / 2:
        raise ValueError(
            "upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). "
            f"Got {upper} for sample_rate: {sample_rate}"
        )
    if not dt.is_floating:
        raise ValueError(f"dtype must be a floating point type. Got: {dt.name}")
    freqs = np.linspace(0.0, sample_rate / 2.0, num_spectrogram_bins)[1:]
    bins_mel = _hertz_to_mel(freqs)[:, None]
    edges = np.linspace(_hertz_to_mel(lower), _hertz_to_mel(upper), num_mel_bins + 2)
    lo, mid, hi = edges[:-2][None], edges[1:-1][None], edges[2:][None]
    weights = np.maximum(
        0.0, np.minimum((bins_mel - lo) / (mid - lo), (hi - bins_mel) / (hi - mid))
    )
    return constant(np.pad(weights, [[1, 0], [0, 0]]).astype(dt.np))


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms: Any, name: str | None = None) -> Any:
    """MFCCs of `[..., num_mel_bins]` log-magnitude mel spectrograms: an orthonormal-style
    DCT-II scaled by 1 / sqrt(2 num_mel_bins) (HTK's convention, as TF)."""
    x = _float_input(log_mel_spectrograms, "mfccs_from_log_mel_spectrograms")
    bins = x._data.shape[-1] if x._data.ndim else 0
    if bins == 0:
        raise ValueError(f"num_mel_bins must be positive. Got shape {tuple(x._data.shape)}")
    out = dct(x, type=2)
    return multiply(out, _like(np.asarray(1.0 / math.sqrt(bins * 2.0), x._data.dtype), x))


__all__ = [
    "dct", "idct", "stft", "inverse_stft", "inverse_stft_window_fn", "mdct", "inverse_mdct",
    "linear_to_mel_weight_matrix", "mfccs_from_log_mel_spectrograms",
]  # fmt: skip
