"""Resize kernels of `tf.image.resize`, one per-axis weight matrix each, built on the host in
float32 as TF's kernels compute them:

- bilinear and nearest (TF 2's half-pixel centres) as gathers (cheap for big images);
- bicubic: TF's `resize_bicubic(half_pixel_centers=True)`, Keys cubic (a = -0.5) read from a
  1024-entry coefficient table, taps outside the image dropped and the rest renormalized;
- area: TF's `resize_area` (box averaging, no half-pixel centres);
- `scale_and_translate` (the kernel behind lanczos3/5, gaussian, mitchellcubic, and bilinear or
  bicubic with `antialias=True`): the kernel is widened by the downscale factor when
  antialiasing, each output's weights are renormalized to sum to one.

Every kernel is linear in the image: resizing along an axis is `matmul` (or a gather and
multiplies), so gradients with respect to the image come from composition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.gather_ops import _gather
from layerflow._src.ops.math_ops import add, matmul, multiply

F32 = np.float32
_TABLE = 1024
_TINY = 1000.0 * np.finfo(F32).tiny


def _renormalize(w: np.ndarray) -> np.ndarray:
    """Scale each row to sum to one (rows whose sum is ~0 are left as they are: TF's rule)."""
    total = w.sum(axis=1, dtype=F32, keepdims=True)
    ok = np.abs(total) >= _TINY
    return np.where(ok, w * (F32(1.0) / np.where(ok, total, F32(1.0))), w).astype(F32)


def _keys_table() -> np.ndarray:
    a = -0.5
    x0 = np.arange(_TABLE + 1, dtype=F32).astype(np.float64) / _TABLE
    x1 = x0 + 1.0
    table = np.empty((_TABLE + 1, 2), np.float64)
    table[:, 0] = ((a + 2) * x0 - (a + 3)) * x0 * x0 + 1
    table[:, 1] = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return table.astype(F32)


def bicubic_weights(n_in: int, n_out: int) -> np.ndarray:
    """TF's `resize_bicubic(half_pixel_centers=True)` as an (n_out, n_in) matrix."""
    table = _keys_table()
    scale = F32(n_in) / F32(n_out)
    in_f = (np.arange(n_out, dtype=F32) + F32(0.5)) * scale - F32(0.5)
    loc = np.floor(in_f)
    offset = np.rint((in_f - loc) * F32(_TABLE)).astype(np.int64)
    loc = loc.astype(np.int64)
    taps = np.stack([loc - 1, loc, loc + 1, loc + 2], 1)
    coef = np.stack(
        [table[offset, 1], table[offset, 0], table[_TABLE - offset, 0], table[_TABLE - offset, 1]],
        1,
    )
    inside = (taps >= 0) & (taps < n_in)
    coef = _renormalize(np.where(inside, coef, F32(0.0)))
    w = np.zeros((n_out, n_in), F32)
    rows = np.repeat(np.arange(n_out), 4)
    np.add.at(w, (rows, np.clip(taps, 0, n_in - 1).ravel()), coef.ravel())
    return w


def area_weights(n_in: int, n_out: int) -> np.ndarray:
    """TF's `resize_area` (no half-pixel centres) as an (n_out, n_in) matrix."""
    scale = F32(n_in) / F32(n_out)
    o = np.arange(n_out, dtype=F32)[:, None]
    lo, hi = o * scale, (o + F32(1)) * scale
    i = np.arange(n_in, dtype=F32)[None, :]
    cover = np.maximum(np.minimum(i + F32(1), hi) - np.maximum(i, lo), F32(0.0))
    return (cover * (F32(1.0) / scale)).astype(F32)


def _lanczos(radius: float):
    def k(x: np.ndarray) -> np.ndarray:
        pi = F32(3.14159265359)
        x = np.abs(x).astype(F32)
        safe = np.where(x <= 1e-3, F32(1.0), x)
        v = F32(radius) * np.sin(pi * safe) * np.sin(pi * safe / F32(radius))
        v = v / (pi * pi * safe * safe)
        return np.where(x > radius, F32(0.0), np.where(x <= 1e-3, F32(1.0), v)).astype(F32)

    return k, radius


def _gaussian():
    radius = 1.5
    sigma = float(F32(radius) / F32(3.0))

    def k(x: np.ndarray) -> np.ndarray:
        x = np.abs(x).astype(np.float64)
        v = np.exp(-x * x / (2.0 * sigma * sigma))
        return np.where(x >= radius, 0.0, v).astype(F32)

    return k, radius


def _cubic(inner: tuple, outer: tuple):
    """A piecewise cubic of radius 2: `inner` on [0, 1), `outer` on [1, 2) (Horner, float32)."""

    def k(x: np.ndarray) -> np.ndarray:
        x = np.abs(x).astype(F32)
        a3, a2, a1, a0 = (F32(c) for c in inner)
        b3, b2, b1, b0 = (F32(c) for c in outer)
        near = ((a3 * x + a2) * x + a1) * x + a0
        far = ((b3 * x + b2) * x + b1) * x + b0
        return np.where(x >= 2.0, F32(0.0), np.where(x >= 1.0, far, near)).astype(F32)

    return k, 2.0


def _triangle():
    def k(x: np.ndarray) -> np.ndarray:
        x = np.abs(x).astype(F32)
        return np.where(x < 1.0, F32(1.0) - x, F32(0.0)).astype(F32)

    return k, 1.0


KERNELS = {
    "lanczos3": lambda: _lanczos(3.0),
    "lanczos5": lambda: _lanczos(5.0),
    "gaussian": _gaussian,
    "triangle": _triangle,
    "keyscubic": lambda: _cubic((1.5, -2.5, 0.0, 1.0), (-0.5, 2.5, -4.0, 2.0)),
    "mitchellcubic": lambda: _cubic(
        (7.0 / 6.0, -2.0, 0.0, 8.0 / 9.0), (-7.0 / 18.0, 2.0, -10.0 / 3.0, 16.0 / 9.0)
    ),
}


def scale_and_translate_weights(n_in: int, n_out: int, kernel: str, antialias: bool,
                                scale: float | None = None,
                                translate: float = 0.0) -> np.ndarray:  # fmt: skip
    """TF's `scale_and_translate` spans along one axis as an (n_out, n_in) matrix."""
    fn, radius = KERNELS[kernel]()
    scale = F32(n_out) / F32(n_in) if scale is None else F32(scale)
    inv_scale = F32(1.0 / float(scale))
    inv_translate = F32(-inv_scale * F32(translate))
    kscale = max(inv_scale, F32(1.0)) if antialias else F32(1.0)
    reach = F32(F32(radius) * kscale)
    sample = (np.arange(n_out, dtype=F32) + F32(0.5)) * inv_scale + inv_translate
    start = np.clip(np.ceil(sample - reach - F32(0.5)), 0, n_in - 1).astype(np.int64)
    end = np.clip(np.floor(sample + reach - F32(0.5)), 0, n_in - 1).astype(np.int64) + 1
    src = np.arange(n_in, dtype=F32)[None, :]
    pos = (src + F32(0.5) - sample[:, None]) * (F32(1.0) / kscale)
    w = fn(pos)
    idx = np.arange(n_in)[None, :]
    inside = (idx >= start[:, None]) & (idx < end[:, None])
    inside &= ((sample >= 0) & (sample <= n_in))[:, None]  # no sample outside the source
    return _renormalize(np.where(inside, w, F32(0.0)))


def _axis_matrix(n_in: int, n_out: int, method: str, antialias: bool) -> np.ndarray:
    if method == "area":
        return area_weights(n_in, n_out)
    if method == "bicubic" and not antialias:
        return bicubic_weights(n_in, n_out)
    kernel = {"bilinear": "triangle", "bicubic": "keyscubic"}.get(method, method)
    return scale_and_translate_weights(n_in, n_out, kernel, antialias)


def _by_matrix(x: Any, axis: int, w: np.ndarray) -> Any:
    rank = x._data.ndim
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = [int(i) for i in np.argsort(perm)]
    wt = Tensor(x._device.xp.asarray(np.ascontiguousarray(w.T).astype(x._data.dtype)), x._device)
    return transpose(matmul(transpose(x, perm), wt), inverse)


def _bilinear(x: Any, axis: int, out_size: int) -> Any:
    n = int(x._data.shape[axis])
    scale = F32(n) / F32(out_size)
    src = (np.arange(out_size, dtype=F32) + F32(0.5)) * scale - F32(0.5)
    floor = np.floor(src)
    lo = np.maximum(floor, 0).astype(np.int64)
    hi = np.minimum(np.ceil(src), n - 1).astype(np.int64)
    frac = (src - floor).astype(x._data.dtype)
    xp, dev = x._device.xp, x._device
    shape = [1] * x._data.ndim
    shape[axis] = out_size
    w1 = Tensor(xp.asarray(frac.reshape(shape)), dev)
    w0 = Tensor(xp.asarray((1 - frac).reshape(shape)), dev)
    a = _gather(x, Tensor(xp.asarray(lo), dev), axis)
    b = _gather(x, Tensor(xp.asarray(hi), dev), axis)
    return add(multiply(a, w0), multiply(b, w1))


def _nearest(x: Any, axis: int, out_size: int) -> Any:
    n = int(x._data.shape[axis])
    scale = F32(n) / F32(out_size)
    src = np.floor((np.arange(out_size, dtype=F32) + F32(0.5)) * scale)
    idx = np.clip(src, 0, n - 1).astype(np.int64)
    return _gather(x, Tensor(x._device.xp.asarray(idx), x._device), axis)


def resize_axis(x: Any, axis: int, out_size: int, method: str, antialias: bool) -> Any:
    """Resize `x` along `axis` to `out_size` with `method` (TF 2's `tf.image.resize` rules)."""
    n = int(x._data.shape[axis])
    if method == "nearest":
        return x if n == out_size else _nearest(x, axis, out_size)
    if method == "bilinear" and not antialias:
        return x if n == out_size else _bilinear(x, axis, out_size)
    return _by_matrix(x, axis, _axis_matrix(n, out_size, method, antialias))
