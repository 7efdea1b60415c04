"""`tf.signal` framing and windows: `frame`, `overlap_and_add`, and the window functions.

`frame` is a `gather` of a (frames, frame_length) index grid and `overlap_and_add` TF's own
pad/reshape/transpose/sum scheme, so both differentiate through those ops. Windows are
constants (TF defines no gradient with respect to a window's length or beta), computed in
float64 with NumPy and cast to `dtype`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.array_ops import constant, transpose
from layerflow._src.ops.gather_ops import gather
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import reduce_sum, reshape


def _int_scalar(value: Any, opname: str, what: str) -> int:
    arr = backend.to_host(value._data) if isinstance(value, TensorLike) else np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"{opname}: {what} must be an integer scalar, got {arr.tolist()!r}.")
    return int(arr)


def _tensor(x: Any) -> Any:
    return x if isinstance(x, TensorLike) else convert_to_tensor(x)


# --- frame / overlap_and_add ----------------------------------------------------------------------


def frame(signal: Any, frame_length: Any, frame_step: Any, pad_end: bool = False,
          pad_value: Any = 0, axis: int = -1, name: str | None = None) -> Any:  # fmt: skip
    """Split `axis` of `signal` into frames of `frame_length` samples every `frame_step`
    samples: `axis` becomes two axes (num_frames, frame_length). With `pad_end`, the end is
    padded with `pad_value` so that every sample is in a frame.

    >>> import layerflow as tf
    >>> tf.signal.frame(tf.range(5), 3, 2).numpy()
    array([[0, 1, 2],
           [2, 3, 4]], dtype=int32)
    """
    x = _tensor(signal)
    length = _int_scalar(frame_length, "frame", "frame_length")
    step = _int_scalar(frame_step, "frame", "frame_step")
    if length <= 0 or step <= 0:
        raise errors.InvalidArgumentError(
            None,
            "frame",
            f"frame: frame_length and frame_step must be positive, got {length} and {step}.",
        )
    ndim = x._data.ndim
    if ndim < 1:
        raise ValueError("frame: the signal must have rank at least 1, got a scalar.")
    ax = _int_scalar(axis, "frame", "axis")
    if not -ndim <= ax < ndim:
        raise ValueError(f"frame: axis {ax} is out of range for a rank-{ndim} signal.")
    ax %= ndim
    samples = x._data.shape[ax]
    if pad_end:
        frames = -(-samples // step)
        extra = max(0, length + step * (frames - 1) - samples)
        if extra:
            paddings = [[0, 0] for _ in range(ndim)]
            paddings[ax][1] = extra
            value = pad_value
            if isinstance(value, TensorLike):
                value = backend.to_host(value._data).item()
            x = pad(x, paddings, constant_values=value)
    else:
        frames = max(0, 1 + (samples - length) // step)
    index = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    return gather(x, constant(index.astype(np.int64)), axis=ax)


def overlap_and_add(signal: Any, frame_step: Any, name: str | None = None) -> Any:
    """Sum overlapping frames `[..., frames, frame_length]` placed `frame_step` apart:
    `[..., frame_step * (frames - 1) + frame_length]` (the inverse of `frame` up to the
    overlap count).

    >>> import layerflow as tf
    >>> tf.signal.overlap_and_add(tf.ones([2, 3]), 2).numpy()
    array([1., 1., 2., 1., 1.], dtype=float32)
    """
    x = _tensor(signal)
    step = _int_scalar(frame_step, "overlap_and_add", "frame_step")
    if step <= 0:
        raise errors.InvalidArgumentError(
            None, "overlap_and_add", f"overlap_and_add: frame_step must be positive, got {step}."
        )
    shape = tuple(x._data.shape)
    if len(shape) < 2:
        raise ValueError(
            f"overlap_and_add: the signal must have rank at least 2 ([..., frames, "
            f"frame_length]), got shape {shape}."
        )
    outer, (frames, length) = list(shape[:-2]), shape[-2:]
    out_len = length + step * (frames - 1)
    if step == length:
        return reshape(x, outer + [out_len])
    segments = -(-length // step)
    r = len(outer)
    x = pad(x, [[0, 0]] * r + [[0, segments], [0, segments * step - length]])
    x = reshape(x, outer + [frames + segments, segments, step])
    x = transpose(x, list(range(r)) + [r + 1, r, r + 2])
    x = reshape(x, outer + [(frames + segments) * segments, step])
    x = x[..., : (frames + segments - 1) * segments, :]
    x = reshape(x, outer + [segments, frames + segments - 1, step])
    x = reduce_sum(x, -3)
    x = reshape(x, outer + [(frames + segments - 1) * step])
    return x[..., :out_len]


# --- windows --------------------------------------------------------------------------------------


def _window_args(window_length: Any, dtype: Any, opname: str) -> tuple[int, Any]:
    dt = dtypes.as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"{opname}: dtype must be a floating point type, got {dt.name}.")
    n = _int_scalar(window_length, opname, "window_length")
    if n < 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: window_length must be non-negative, got {n}."
        )
    return n, dt


def _window(values: np.ndarray, dt: Any) -> Any:
    return constant(np.asarray(values, dtype=np.float64).astype(dt.np))


def _raised_cosine(window_length: Any, periodic: Any, dtype: Any, a: float, b: float,
                   opname: str) -> Any:  # fmt: skip
    n, dt = _window_args(window_length, dtype, opname)
    if n == 1:
        return _window(np.ones(1), dt)
    if isinstance(periodic, TensorLike):
        periodic = bool(backend.to_host(periodic._data))
    denom = n - 1 + (1 if periodic and n % 2 == 0 else 0)
    # TF's periodic window of odd length equals the symmetric one (its `even` term).
    return _window(a - b * np.cos(2 * np.pi * np.arange(n) / max(denom, 1)), dt)


def hann_window(window_length: Any, periodic: Any = True, dtype: Any = "float32",
                name: str | None = None) -> Any:  # fmt: skip
    """The Hann window 0.5 - 0.5 cos(2 pi n / N); periodic (N = length, for spectral
    analysis) by default, symmetric (N = length - 1) with `periodic=False`.

    >>> import layerflow as tf
    >>> tf.signal.hann_window(4).numpy()
    array([0. , 0.5, 1. , 0.5], dtype=float32)
    """
    return _raised_cosine(window_length, periodic, dtype, 0.5, 0.5, "hann_window")


def hamming_window(window_length: Any, periodic: Any = True, dtype: Any = "float32",
                   name: str | None = None) -> Any:  # fmt: skip
    """The Hamming window 0.54 - 0.46 cos(2 pi n / N) (see `hann_window` for `periodic`)."""
    return _raised_cosine(window_length, periodic, dtype, 0.54, 0.46, "hamming_window")


def _kaiser(n: int, beta: float) -> np.ndarray:
    if n == 1:
        return np.ones(1)
    half = (n - 1) / 2.0
    arg = np.arange(n) - half
    num = beta * np.sqrt(np.maximum(0.0, 1.0 - (arg / half) ** 2))
    return np.i0(num) / np.i0(beta)


def _beta(beta: Any) -> float:
    return float(backend.to_host(beta._data)) if isinstance(beta, TensorLike) else float(beta)


def kaiser_window(window_length: Any, beta: Any = 12.0, dtype: Any = "float32",
                  name: str | None = None) -> Any:  # fmt: skip
    """The Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta).

    >>> import layerflow as tf
    >>> tf.signal.kaiser_window(3, beta=0.0).numpy()
    array([1., 1., 1.], dtype=float32)
    """
    n, dt = _window_args(window_length, dtype, "kaiser_window")
    return _window(_kaiser(n, _beta(beta)), dt)


def kaiser_bessel_derived_window(window_length: Any, beta: Any = 12.0, dtype: Any = "float32",
                                 name: str | None = None) -> Any:  # fmt: skip
    """The Kaiser-Bessel-derived window (for MDCTs): the square root of the normalized
    cumulative sum of a Kaiser window of length // 2 + 1, mirrored."""
    n, dt = _window_args(window_length, dtype, "kaiser_bessel_derived_window")
    csum = np.cumsum(_kaiser(n // 2 + 1, _beta(beta)))
    half = np.sqrt(csum[:-1] / csum[-1])
    return _window(np.concatenate([half, half[::-1]]), dt)


def vorbis_window(window_length: Any, dtype: Any = "float32", name: str | None = None) -> Any:
    """The Vorbis power-complementary window sin(pi/2 sin^2(pi (n + 0.5) / N))."""
    n, dt = _window_args(window_length, dtype, "vorbis_window")
    arg = np.arange(n) + 0.5
    return _window(np.sin(np.pi / 2.0 * np.sin(np.pi / max(n, 1) * arg) ** 2), dt)
