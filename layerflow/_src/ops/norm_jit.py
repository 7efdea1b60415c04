"""Compiled kernels (numba, `backend/jit.py`) of training-mode batch norm and the relu gradient.

Batch norm works on the channel rows of `normalization_ops._channel_rows`: (C, M) when the
array is channels-first in memory (a conv output behind its NHWC view), (M, C) otherwise.

- (C, M): one channel at a time, its mean, its centred sum of squares and its output (forward),
  or its two gradient sums and its input gradient (backward): a channel's row (M floats: 37 KB
  for 16 images of 24x24) stays in cache between the passes, so the activation is read from
  memory once and written once, where the NumPy path makes five or six whole-array passes.
  Sums run over LANES interleaved partial sums in the input's dtype, folded pairwise (without
  `fastmath` a single running sum is one dependent add per value, and float64 lanes, which
  convert every value, ran 1.8x slower): as accurate as NumPy's pairwise sums; the order is
  fixed, so any thread count gives the same bits.
- (M, C): the same passes over the whole array, each channel's sums in a float64 vector (the
  loops over C vectorize as they are).

The statistics are the NumPy path's up to the summation order; the elementwise passes are the
NumPy path's operations in the same order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.backend import jit

# Partial sums per channel row: each block of LANES values adds into LANES sums, a loop long
# enough for the compiler to vectorize (with its run-time alias check) without reassociating
# anything (no `fastmath`), so the order is fixed. Measured on one core, a 37 KB row: 3.3 us
# in float64 lanes against 10.2 for 8 scalar partial sums (16 lanes stay scalar); float32
# lanes: batch norm of 192 channels of 9216 values 0.77 -> 0.43 ms.
LANES = 256
# Channel rows shorter than this take the NumPy path: clearing and folding the sums costs more
# per channel than the kernel saves (batch norm forward + backward, one thread: 16x3x3x512
# (rows of 144) 0.43 ms either way, 8x3x3x512 0.21 against 0.20, 16x4x4x256 0.25 against
# 0.39). A constant: a loop over a variable number of lanes does not vectorize.
MIN_ROW = 128


@jit.kernel
def bn_forward_cm(r: Any, scale: Any, offset: Any, eps: float, y: Any, mean: Any, var: Any,
                  inv: Any) -> None:  # fmt: skip
    """Batch norm of channel rows r (C, M), M > 0, into y; the batch mean, biased variance
    and 1 / sqrt(variance + eps) into mean, var, inv (all of r's dtype)."""
    c_n, m_n = r.shape
    mw = m_n - m_n % LANES
    acc = np.empty(LANES, r.dtype)
    for c in range(c_n):
        row, out = r[c], y[c]
        acc[:] = 0.0
        for i in range(0, mw, LANES):
            for j in range(LANES):
                acc[j] += row[i + j]
        for j in range(m_n - mw):
            acc[j] += row[mw + j]
        h = LANES // 2
        while h:  # pairwise, each step one vectorized pass
            for j in range(h):
                acc[j] += acc[j + h]
            h //= 2
        mean[c] = acc[0] / m_n
        mu = mu_t = mean[c]  # the mean in r's dtype, as the NumPy path centres with it
        acc[:] = 0.0
        for i in range(0, mw, LANES):
            for j in range(LANES):
                d = row[i + j] - mu
                acc[j] += d * d
        for j in range(m_n - mw):
            d = row[mw + j] - mu
            acc[j] += d * d
        h = LANES // 2
        while h:
            for j in range(h):
                acc[j] += acc[j + h]
            h //= 2
        var[c] = acc[0] / m_n
        inv[c] = 1.0 / math.sqrt(var[c] + eps)
        a = inv[c] * scale[c]
        b = offset[c]
        for i in range(m_n):
            out[i] = (row[i] - mu_t) * a + b


@jit.kernel
def bn_forward_mc(r: Any, scale: Any, offset: Any, eps: float, y: Any, mean: Any, var: Any,
                  inv: Any) -> None:  # fmt: skip
    """`bn_forward_cm` for channel rows r (M, C): per-channel sums across the rows."""
    m_n, c_n = r.shape
    acc = np.zeros(c_n, np.float64)
    for i in range(m_n):
        row = r[i]
        for c in range(c_n):
            acc[c] += row[c]
    for c in range(c_n):
        mean[c] = acc[c] / m_n
        acc[c] = 0.0
    mu64 = np.empty(c_n, np.float64)
    for c in range(c_n):
        mu64[c] = mean[c]
    for i in range(m_n):
        row = r[i]
        for c in range(c_n):
            d = row[c] - mu64[c]
            acc[c] += d * d
    a = np.empty_like(scale)
    for c in range(c_n):
        var[c] = acc[c] / m_n
        inv[c] = 1.0 / math.sqrt(var[c] + eps)
        a[c] = inv[c] * scale[c]
    for i in range(m_n):
        row, out = r[i], y[i]
        for c in range(c_n):
            out[c] = (row[c] - mean[c]) * a[c] + offset[c]


@jit.kernel
def bn_backward_cm(r: Any, d: Any, mean: Any, inv: Any, scale: Any, dx: Any, dxh: Any,
                   dsum: Any) -> None:  # fmt: skip
    """The batch-norm gradient for channel rows (C, M): dx, and the per-channel sums
    dxh = sum(dy * x_hat) (scale's gradient) and dsum = sum(dy) (offset's)."""
    c_n, m_n = r.shape
    mw = m_n - m_n % LANES
    acc = np.empty(LANES, r.dtype)
    acc2 = np.empty(LANES, r.dtype)
    k = np.empty(3, r.dtype)  # the constants in r's dtype, so the pass runs in it
    for c in range(c_n):
        row, drow, out = r[c], d[c], dx[c]
        mu, iv = mean[c], inv[c]
        acc[:] = 0.0
        acc2[:] = 0.0
        for i in range(0, mw, LANES):
            for j in range(LANES):
                g = drow[i + j]
                acc[j] += g
                acc2[j] += g * (row[i + j] - mu)
        for j in range(m_n - mw):
            g = drow[mw + j]
            acc[j] += g
            acc2[j] += g * (row[mw + j] - mu)
        h = LANES // 2
        while h:
            for j in range(h):
                acc[j] += acc[j + h]
                acc2[j] += acc2[j + h]
            h //= 2
        dsum[c] = acc[0]
        dxh[c] = acc2[0] * iv
        k[0] = -dxh[c] / m_n
        k[1] = dsum[c] / m_n
        k[2] = scale[c] * iv
        k1, k2, k3 = k[0], k[1], k[2]
        for i in range(m_n):
            out[i] = (((row[i] - mu) * iv * k1 + drow[i]) - k2) * k3


@jit.kernel
def bn_backward_mc(r: Any, d: Any, mean: Any, inv: Any, scale: Any, dx: Any, dxh: Any,
                   dsum: Any) -> None:  # fmt: skip
    """`bn_backward_cm` for channel rows (M, C)."""
    m_n, c_n = r.shape
    a = np.zeros(c_n, np.float64)
    b = np.zeros(c_n, np.float64)
    for i in range(m_n):
        row, drow = r[i], d[i]
        for c in range(c_n):
            a[c] += drow[c]
            b[c] += drow[c] * (row[c] - mean[c])
    k1 = np.empty_like(scale)
    k2 = np.empty_like(scale)
    k3 = np.empty_like(scale)
    for c in range(c_n):
        dsum[c] = a[c]
        dxh[c] = b[c] * inv[c]
        k1[c] = -dxh[c] / m_n
        k2[c] = dsum[c] / m_n
        k3[c] = scale[c] * inv[c]
    for i in range(m_n):
        row, drow, out = r[i], d[i], dx[i]
        for c in range(c_n):
            out[c] = (((row[c] - mean[c]) * inv[c] * k1[c] + drow[c]) - k2[c]) * k3[c]


def bn_forward(r: Any, ax: int, scale: Any, offset: Any, epsilon: float) -> tuple:
    """(y, mean, var, inv) of channel rows `r` (C-contiguous, channel axis `ax`)."""
    c = r.shape[ax]
    dt = r.dtype
    y = np.empty_like(r)
    mean, var, inv = np.empty(c, dt), np.empty(c, dt), np.empty(c, dt)
    fn = bn_forward_cm if ax == 0 else bn_forward_mc
    fn(r, _vec(scale, dt), _vec(offset, dt), float(epsilon), y, mean, var, inv)
    return y, mean, var, inv


def bn_backward(r: Any, d: Any, ax: int, mean: Any, inv: Any, scale: Any) -> tuple:
    """(dx, dxh, dsum) of channel rows `r` and their gradient `d` (same layout)."""
    c, dt = r.shape[ax], r.dtype
    dx = np.empty_like(r)
    dxh, dsum = np.empty(c, dt), np.empty(c, dt)
    fn = bn_backward_cm if ax == 0 else bn_backward_mc
    fn(r, np.ascontiguousarray(d), mean, inv, _vec(scale, dt), dx, dxh, dsum)
    return dx, dxh, dsum


def _vec(v: Any, dt: Any) -> Any:
    return np.ascontiguousarray(v, dtype=dt).reshape(-1)


@jit.kernel
def _relu_grad_flat(dy: Any, y: Any, out: Any) -> None:
    for i in range(dy.shape[0]):
        out[i] = dy[i] * (1.0 if y[i] > 0 else 0.0)


@jit.kernel
def _relu_grad_t(dt: Any, y: Any, out: Any) -> None:
    """out[a, b] = dt[b, a] * (y[a, b] > 0), by tiles that keep dt's rows in cache."""
    na, nb = y.shape
    for a0 in range(0, na, TILE):
        a1 = min(na, a0 + TILE)
        for b0 in range(0, nb, TILE):
            b1 = min(nb, b0 + TILE)
            for a in range(a0, a1):
                for b in range(b0, b1):
                    out[a, b] = dt[b, a] * (1.0 if y[a, b] > 0 else 0.0)


TILE = 64  # 16x48x48x64 floats, one core: 4.0 ms (32: 6.1, 16: 10.5; NumPy 7.7-12)


def relu_grad(dy: Any, y: Any) -> Any:
    """dy * (y > 0) in one pass, laid out as y, when both are C-contiguous or channels-first
    behind a channels-last view (the conv outputs' layout), in either combination; else None
    (the NumPy expression then)."""
    if dy.shape != y.shape or dy.dtype != y.dtype or dy.dtype not in _RELU_DTYPES:
        return None
    dr, dcf = _flat_rows(dy)
    yr, ycf = _flat_rows(y)
    if dr is None or yr is None:
        return None
    out = np.empty_like(yr)
    if dcf == ycf:
        _relu_grad_flat(dr.reshape(-1), yr.reshape(-1), out.reshape(-1))
    else:  # one is the other's transpose in memory, (C, rest) against (rest, C)
        _relu_grad_t(dr, yr, out)
    if ycf:
        return out.reshape(y.shape[-1], *y.shape[:-1]).transpose(*range(1, y.ndim), 0)
    return out.reshape(y.shape)


def _flat_rows(a: Any) -> tuple:
    """(2-D contiguous view, channels-first?): (rest, C) of a C-contiguous array, (C, rest) of
    a channels-first one behind a channels-last view; (None, False) for other layouts."""
    if a.ndim < 2:
        return (a.reshape(1, -1), False) if a.flags.c_contiguous else (None, False)
    if a.flags.c_contiguous:
        return a.reshape(-1, a.shape[-1]), False
    t = a.transpose(a.ndim - 1, *range(a.ndim - 1))
    if t.flags.c_contiguous:
        return t.reshape(a.shape[-1], -1), True
    return None, False


_RELU_DTYPES = (np.float32, np.float64)
