"""2x2 average pooling of non-overlapping windows (stride 2, no padding) by numba kernels:
one pass over the channels-first input for the mean, one over the input gradient for its
spread, instead of NumPy's reshape passes (two adds of whole rows and a scale; for the
gradient a scale, a repeat and a broadcast copy).

The sums are taken in `pool_ops._block_mean`'s order (each window column's rows added first,
then the columns, then one multiply by 1 / (KH * KW) in the array's dtype), so the results
equal the NumPy path bit for bit. Used by `pool_ops` where `applies` (NumPy arrays, numba
enabled, float32 or float64); LeNet's 2x2 pools: see `bench/README.md`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import jit


def applies(xp: Any, dtype: Any, ksize: tuple) -> bool:
    """Whether the kernels here run a pool of this array module, dtype and window (2x2)."""
    return (xp is np and tuple(ksize) == (2, 2) and np.dtype(dtype) in (np.float32, np.float64)
            and jit.enabled())  # fmt: skip


@jit.kernel
def _mean2(x, scale, y):  # pragma: no cover - compiled
    """y[r, i, j] = the mean of the 2x2 window x[r, 2i : 2i+2, 2j : 2j+2]: x (R, H, W), y
    (R, OH, OW), both C-contiguous."""
    rows, oh, ow = y.shape
    u1, u2 = np.uint64(1), np.uint64(2)
    for r in range(rows):
        for i in range(oh):
            top = x[r, 2 * i]
            bottom = x[r, 2 * i + 1]
            out = y[r, i]
            for j in range(np.uint64(ow)):
                e = u2 * j
                out[j] = ((top[e] + bottom[e]) + (top[e + u1] + bottom[e + u1])) * scale


@jit.kernel
def _spread2(dy, scale, dx):  # pragma: no cover - compiled
    """dx[r, 2i + a, 2j + b] = dy[r, i, j] * scale; rows and columns past the windows (VALID
    pooling leaves them out) are zero. dy (R, OH, OW), dx (R, H, W), C-contiguous."""
    rows, oh, ow = dy.shape
    h, w = dx.shape[1], dx.shape[2]
    u1, u2 = np.uint64(1), np.uint64(2)
    for r in range(rows):
        for i in range(oh):
            src = dy[r, i]
            top = dx[r, 2 * i]
            bottom = dx[r, 2 * i + 1]
            for j in range(np.uint64(ow)):
                share = src[j] * scale
                e = u2 * j
                top[e] = share
                top[e + u1] = share
                bottom[e] = share
                bottom[e + u1] = share
            for v in range(2 * ow, w):
                top[v] = 0
                bottom[v] = 0
        for u in range(2 * oh, h):
            for v in range(w):
                dx[r, u, v] = 0


def _cf(a: Any) -> Any:
    return np.ascontiguousarray(a.transpose(3, 0, 1, 2))


def block_mean(x: Any, ksize: tuple, out_hw: tuple) -> Any:
    """`pool_ops._block_mean` by `_mean`: the channels-first result as an NHWC view."""
    (kh, kw), (oh, ow) = ksize, out_hw
    xc = _cf(x)
    c, n, h, w = xc.shape
    y = np.empty((c, n, oh, ow), dtype=x.dtype)
    _mean2(xc.reshape(c * n, h, w), x.dtype.type(1.0 / (kh * kw)), y.reshape(c * n, oh, ow))
    return y.transpose(1, 2, 3, 0)


def block_spread(dy: Any, x_shape: tuple, ksize: tuple) -> Any:
    """`pool_ops._block_spread` by `_spread`: the channels-first gradient as an NHWC view."""
    (kh, kw), (n, oh, ow, c) = ksize, dy.shape
    h, w = x_shape[1], x_shape[2]
    dx = np.empty((c, n, h, w), dtype=dy.dtype)
    scale = dy.dtype.type(1.0 / (kh * kw))
    _spread2(_cf(dy).reshape(c * n, oh, ow), scale, dx.reshape(c * n, h, w))
    return dx.transpose(1, 2, 3, 0)
