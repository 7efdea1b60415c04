"""Resize kernels of `tf.image.resize` beyond bilinear/nearest: bicubic (TF's Keys cubic with
half-pixel centres, a 1024-entry coefficient table and renormalized edge weights), area
(box averaging, `resize_area`), and the `scale_and_translate` kernels lanczos3, lanczos5,
gaussian and mitchellcubic (antialias=False).

Each kernel is separable: per spatial axis a NumPy (out, in) weight matrix built on the host,
applied with `matmul`, so the result is differentiable with respect to the image without a
gradient of its own. Weights are computed in float32, as TF's kernels do.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import matmul

F32 = np.float32
_TABLE = 1024


def _keys_table() -> np.ndarray:
    a = -0.5
    x0 = np.arange(_TABLE + 1, dtype=np.float64) / _TABLE
    x1 = x0 + 1.0
    table = np.empty((_TABLE + 1, 2), np.float64)
    table[:, 0] = ((a + 2) * x0 - (a + 3)) * x0 * x0 + 1
    table[:, 1] = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return table.astype(F32)


def bicubic_weights(n_in: int, n_out: int) -> np.ndarray:
    """TF's `resize_bicubic(half_pixel_centers=True)` as an (n_out, n_in) matrix."""
    table = _keys_table()
    scale = F32(n_in) / F32(n_out)
    w = np.zeros((n_out, n_in), np.float64)
    for o in range(n_out):
        in_f = (F32(o) + F32(0.5)) * scale - F32(0.5)
        in_loc = math.floor(in_f)
        offset = int(np.rint(F32(in_f - F32(in_loc)) * F32(_TABLE)))
        taps = (
            (in_loc - 1, table[offset, 1]),
            (in_loc, table[offset, 0]),
            (in_loc + 1, table[_TABLE - offset, 0]),
            (in_loc + 2, table[_TABLE - offset, 1]),
        )
        # Taps outside the image get weight 0 and the rest are renormalized (TF's rule).
        kept = [(i, F32(c)) for i, c in taps if 0 <= i < n_in]
        total = F32(sum(c for _, c in kept))
        inv = F32(1.0) / total if abs(total) >= 1000 * np.finfo(F32).tiny else F32(1.0)
        for i, c in kept:
            w[o, i] += float(F32(c * inv))
    return w


def area_weights(n_in: int, n_out: int) -> np.ndarray:
    """TF's `resize_area` (no half-pixel centres) as an (n_out, n_in) matrix."""
    scale = F32(n_in) / F32(n_out)
    w = np.zeros((n_out, n_in), np.float64)
    for o in range(n_out):
        lo = F32(o) * scale
        hi = F32(o + 1) * scale
        for i in range(math.floor(lo), math.ceil(hi)):
            cover = min(F32(i + 1), hi) - max(F32(i), lo)
            w[o, min(i, n_in - 1)] += float(cover)
        w[o] /= float(scale)
    return w


def _lanczos(radius: float):
    def k(x: float) -> float:
        x = abs(x)
        if x > radius:
            return 0.0
        if x <= 1e-3:
            return 1.0
        pi = float(F32(np.pi))
        return float(F32(radius * math.sin(pi * x) * math.sin(pi * x / radius) / (pi * pi * x * x)))

    return k, radius


def _gaussian():
    radius, sigma = 1.5, 1.5 / 3.0

    def k(x: float) -> float:
        x = abs(x)
        return 0.0 if x >= radius else math.exp(-x * x / (2.0 * sigma * sigma))

    return k, radius


def _mitchell():
    def k(x: float) -> float:
        x = abs(x)
        if x >= 2.0:
            return 0.0
        if x >= 1.0:
            return (((-7.0 / 18.0) * x + 2.0) * x - 10.0 / 3.0) * x + 16.0 / 9.0
        return (((7.0 / 6.0) * x - 2.0) * x) * x + 8.0 / 9.0

    return k, 2.0


_SCALE_AND_TRANSLATE = {
    "lanczos3": lambda: _lanczos(3.0),
    "lanczos5": lambda: _lanczos(5.0),
    "gaussian": _gaussian,
    "mitchellcubic": _mitchell,
}


def scale_and_translate_weights(n_in: int, n_out: int, method: str) -> np.ndarray:
    """TF's `scale_and_translate` spans (translation 0, antialias off) as a matrix."""
    kernel, radius = _SCALE_AND_TRANSLATE[method]()
    scale = F32(n_out) / F32(n_in)
    inv_scale = F32(1.0) / scale
    w = np.zeros((n_out, n_in), np.float64)
    for o in range(n_out):
        sample = F32(F32(o) + F32(0.5)) * inv_scale
        if sample < 0 or sample > n_in:
            continue
        start = math.ceil(sample - radius - 0.5)
        end = math.floor(sample + radius - 0.5)
        start = min(max(start, 0), n_in - 1)
        end = min(max(end, 0), n_in - 1) + 1
        vals = [F32(kernel(float(F32(i) + F32(0.5) - sample))) for i in range(start, end)]
        total = F32(sum(vals))
        if abs(total) >= 1000 * np.finfo(F32).tiny:
            vals = [v / total for v in vals]
        w[o, start:end] = vals
    return w


WEIGHTS = {"bicubic": bicubic_weights, "area": area_weights}


def resize_axis_by_matrix(x: Any, axis: int, out_size: int, method: str) -> Any:
    """Resize `x` (float) along `axis` to `out_size` with `method`'s weight matrix."""
    n = x._data.shape[axis]
    if method in WEIGHTS:
        w = WEIGHTS[method](n, out_size)
    else:
        w = scale_and_translate_weights(n, out_size, method)
    rank = x._data.ndim
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = list(np.argsort(perm))
    wt = Tensor(x._device.xp.asarray(w.T.astype(x._data.dtype)), x._device)
    moved = transpose(x, perm)
    return transpose(matmul(moved, wt), inverse)
