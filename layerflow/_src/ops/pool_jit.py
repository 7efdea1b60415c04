"""Compiled 3x3 max pooling (numba, `backend/jit.py`), strides 1 and 2, for inputs laid out
channels-first behind an NHWC view (every conv output), float32 and float64; `pool_ops` takes
it when `usable` (GoogLeNet's, ResNet's and DenseNet's pools, AlexNet's and NiN's).

Each (image, channel) plane is an H x W array. The forward writes the maximum of every window
and its tap number i * 3 + j (the first tap holding the maximum, in row-major order: TF's rule
for ties), one byte per output; the gradient adds each output's dy at that tap, in the order
of the outputs, as `add.at` in the NumPy path: the same sums, bit for bit.

How. NumPy copies a block of planes into S * S "phase frames" (phase (u, v): the padded
input's rows S * a + u and columns S * b + v, the dtype's lowest value where there is no
input), so that every tap of window (a, b) is phase (i % S, j % S) at row a + i // S, column
b + j // S: one loop over all frame positions of the block reads nine arrays at constant
offsets from the position, which the compiler vectorizes (0.36 ns a window at stride 1 on one
core), where loops over window rows (6 values on GoogLeNet's 6x6 planes) do not; positions
past a row's or plane's end are computed and dropped. Traps measured on the way: an index
computed from a runtime offset (numba's negative-index wraparound: use views at offsets, or
unsigned indices), a runtime stride (no vector loads), array views made per row
(reference-counted), and an output 4K-aliased with the input (`apart`) each cost 2-10x.

Windows whose maximum is NaN or the lowest value (all padding or -inf) are not settled here:
`max_pool` returns None and `pool_ops` takes its NumPy path, which handles them as TF does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import jit

# Planes per block: about this many bytes of phase frames, so that the window pass reads the
# block from cache (1 MiB and 4 MiB measured the same or slower on GoogLeNet's pools).
FRAME_BYTES = 1 << 18


@jit.kernel
def _fill_s1(x: Any, p0: int, pb: int, top: int, left: int, hf: int, wf: int,
             frame: Any) -> None:  # fmt: skip
    """Planes p0 .. p0 + pb of x (P, H, W) into the stride-1 frame (the padding left as it
    is): for these short rows, faster than NumPy's copy (16x3x3x832: 0.12 ms against 0.23;
    with stride 2, whose rows are split by column parity, NumPy's is faster)."""
    h, w = x.shape[1], x.shape[2]
    per = hf * wf
    xf = x.reshape(x.size)
    for q in range(pb):
        for r in range(min(h, hf - top)):
            o, xo = q * per + (r + top) * wf + left, ((p0 + q) * h + r) * w
            for t in range(min(w, wf - left)):
                frame[np.uint64(o + t)] = xf[np.uint64(xo + t)]


@jit.kernel
def _windows_s1(frame: Any, wf: int, n: int, best: Any, code: Any) -> int:
    """For the first n frame positions, the max of the 3x3 window whose top left tap it is,
    and that max's first tap in row-major order (views at constant offsets: the loop
    vectorizes); returns how many of the positions hold NaN."""
    f0, f1, f2 = frame, frame[wf:], frame[2 * wf :]
    nan = 0
    for i in range(n):
        b, c = f0[i], 0
        nan += b != b  # every frame value is one position's first tap
        b, c = (f0[i + 1], 1) if f0[i + 1] > b else (b, c)
        b, c = (f0[i + 2], 2) if f0[i + 2] > b else (b, c)
        b, c = (f1[i], 3) if f1[i] > b else (b, c)
        b, c = (f1[i + 1], 4) if f1[i + 1] > b else (b, c)
        b, c = (f1[i + 2], 5) if f1[i + 2] > b else (b, c)
        b, c = (f2[i], 6) if f2[i] > b else (b, c)
        b, c = (f2[i + 1], 7) if f2[i + 1] > b else (b, c)
        b, c = (f2[i + 2], 8) if f2[i + 2] > b else (b, c)
        best[i], code[i] = b, c
    return nan


@jit.kernel
def _windows_s2(frame: Any, ph: int, wf: int, n: int, best: Any, code: Any) -> int:
    """`_windows_s1` for stride 2 over the four phase frames (`ph` values apart): tap (i, j)
    lies in phase (i % 2, j % 2), i // 2 rows and j // 2 columns on."""
    e00, e01, e10, e11 = frame, frame[ph:], frame[2 * ph :], frame[3 * ph :]
    d00, d01 = frame[wf:], frame[ph + wf :]
    nan = 0
    for i in range(n):
        b, c = e00[i], 0  # the four phases' values: each position's first taps
        nan += (b != b) + (e01[i] != e01[i]) + (e10[i] != e10[i]) + (e11[i] != e11[i])
        b, c = (e01[i], 1) if e01[i] > b else (b, c)
        b, c = (e00[i + 1], 2) if e00[i + 1] > b else (b, c)
        b, c = (e10[i], 3) if e10[i] > b else (b, c)
        b, c = (e11[i], 4) if e11[i] > b else (b, c)
        b, c = (e10[i + 1], 5) if e10[i + 1] > b else (b, c)
        b, c = (d00[i], 6) if d00[i] > b else (b, c)
        b, c = (d01[i], 7) if d01[i] > b else (b, c)
        b, c = (d00[i + 1], 8) if d00[i + 1] > b else (b, c)
        best[i], code[i] = b, c
    return nan


@jit.kernel
def _extract(best: Any, code: Any, p0: int, pb: int, wf: int, per: int, y: Any,
             arg: Any) -> int:  # fmt: skip
    """Outputs (a, b) of planes p0 .. p0 + pb of y and arg (P, OH, OW) from frame positions
    q * PER + a * WF + b; returns how many hold nothing above the lowest value. (Faster than
    NumPy's copies for these short rows; unsigned indices skip numba's negative-index
    wraparound.)"""
    oh, ow = y.shape[1], y.shape[2]
    yf, af = y.reshape(y.size), arg.reshape(arg.size)
    low = -np.inf
    bad = 0
    for q in range(pb):
        for a in range(oh):
            o, d = q * per + a * wf, ((p0 + q) * oh + a) * ow
            for b in range(ow):
                val = best[np.uint64(o + b)]
                yf[np.uint64(d + b)] = val
                af[np.uint64(d + b)] = code[np.uint64(o + b)]
                bad += not val > low
    return bad


def _max3(xs: Any, s: int, top: int, left: int, ys: Any, taps: Any) -> bool:
    """3x3 max pool, strides (s, s), s 1 or 2, of planes xs (P, H, W) into ys and taps
    (P, OH, OW), block by block of planes: a copy puts each block into its S * S phase frames
    (phase (u, v): the padded input's rows S * a + u and columns S * b + v, HF x WF a plane,
    the lowest value where there is no input), a kernel takes every frame position's window,
    another copies the outputs out. Returns whether all is settled: no NaN in xs, and every
    window holds something above the lowest value."""
    p_n, h, w = xs.shape
    oh, ow = ys.shape[1], ys.shape[2]
    hf, wf = oh + 2 // s, ow + 2 // s  # every window's taps, in each phase frame
    per = hf * wf
    pb = max(1, min(p_n, FRAME_BYTES // (s * s * per * xs.dtype.itemsize)))
    ph = pb * per
    # the phases one after the other, then slack for the windows past the last plane
    frame = np.full(s * s * ph + wf + 2, -np.inf, xs.dtype)
    phases = frame[: s * s * ph].reshape(s, s, pb, hf, wf)
    best, code = apart(ph, xs.dtype, frame), apart(ph, np.uint8, frame)
    # (frame rows, input rows) and (frame columns, input columns) of each phase
    rows = [_phase_slices(u, s, top, h, hf) for u in range(s)]
    cols = [_phase_slices(v, s, left, w, wf) for v in range(s)]
    bad = 0
    for p0 in range(0, p_n, pb):
        n = min(pb, p_n - p0)
        if s == 1:
            _fill_s1(xs, p0, n, top, left, hf, wf, frame)
        else:
            for u in range(s):
                for v in range(s):
                    (fr, xr), (fc, xc) = rows[u], cols[v]
                    phases[u, v, :n, fr, fc] = xs[p0 : p0 + n, xr, xc]
        if s == 1:
            bad += _windows_s1(frame, wf, n * per, best, code)
        else:
            bad += _windows_s2(frame, ph, wf, n * per, best, code)
        bad += _extract(best, code, p0, n, wf, per, ys, taps)
    return not bad


def _phase_slices(u: int, s: int, pad: int, size: int, framed: int) -> tuple[slice, slice]:
    """(frame slice, input slice) along one axis of phase u: frame index t holds input index
    t * S + u - pad, where that is inside the input."""
    t0 = (pad - u + s - 1) // s
    t1 = min(framed, (size - 1 + pad - u) // s + 1)
    if t1 <= t0:
        return slice(0, 0), slice(0, 0)
    c0 = t0 * s + u - pad
    return slice(t0, t1), slice(c0, c0 + (t1 - t0 - 1) * s + 1, s)


@jit.kernel
def _max_grad(dy: Any, arg: Any, sh: int, sw: int, offsets: Any, dx: Any) -> None:
    """dx (P, H, W, zeros) += each dy (P, OH, OW) at its window's tap `arg`, in output order:
    output (a, b)'s tap t is flat plane position a * SH * W + b * SW + offsets[t]. (An
    unsigned index: numba then skips the wraparound of negative indices, which made this
    loop 2.5x slower.)"""
    p_n, oh, ow = dy.shape
    h, w = dx.shape[1], dx.shape[2]
    for p in range(p_n):
        plane = dx[p].reshape(h * w)
        for a in range(oh):
            base = a * sh * w
            for b in range(ow):
                k = base + b * sw + offsets[arg[p, a, b]]
                plane[np.uint64(k)] += dy[p, a, b]


def apart(n: int, dtype: Any, other: Any) -> Any:
    """An empty 1-D array of n values whose address is 2 KiB from `other`'s modulo 4 KiB.

    A loop that loads from one array and stores to another at addresses that agree in their
    low 12 bits within a vector's width stalls (the CPU takes the load for one that may
    depend on the store: "4K aliasing"): the stride-1 window pass over 16x6x6x512 ran in
    0.18 ms against 0.024 when its output happened to lie 48 bytes from its input mod 4 KiB.
    """
    dt = np.dtype(dtype)
    raw = np.empty(n * dt.itemsize + 4096, np.uint8)
    skip = (other.ctypes.data + 2048 - raw.ctypes.data) % 4096
    return raw[skip : skip + n * dt.itemsize].view(dt)


class TapArgs:
    """A recorded compiled max pool's residual: per output, its window's tap number
    i * KW + j, as planes (C * N, OH, OW)."""

    __slots__ = ("taps",)

    def __init__(self, taps: Any) -> None:
        self.taps = taps


DTYPES = (np.float32, np.float64)


def usable(x: Any, ksize: tuple, strides: tuple) -> bool:
    """Whether the kernels take NHWC `x` now: a NumPy float32/64 array, channels-first in
    memory, 3x3 windows with strides 1 or 2 (both the same), numba enabled."""
    return (
        isinstance(x, np.ndarray)
        and tuple(ksize) == (3, 3)
        and tuple(strides) in ((1, 1), (2, 2))
        and x.ndim == 4
        and x.dtype in DTYPES
        and x.size > 0
        and x.transpose(3, 0, 1, 2).flags.c_contiguous
        and jit.enabled()
    )


def _planes(a: Any) -> Any:
    """(C * N, H, W) view of an NHWC array laid out channels-first."""
    n, h, w, c = a.shape
    return a.transpose(3, 0, 1, 2).reshape(c * n, h, w)


def max_pool(x: Any, ksize: tuple, geo: Any) -> tuple[Any, Any] | None:
    """(y, TapArgs) of max pooling `x` (`usable`), y laid out as x; None when some window's
    maximum is NaN or the lowest value (the NumPy path settles those)."""
    (oh, ow), ((top, _), (left, _)), (sh, sw), _ = geo
    n, h, w, c = x.shape
    xs = _planes(x)
    y = np.empty((c, n, oh, ow), x.dtype)
    taps = np.empty((c * n, oh, ow), np.uint8)
    ys = y.reshape(c * n, oh, ow)
    if ys.size and not _max3(xs, sh, top, left, ys, taps):
        return None
    return y.transpose(1, 2, 3, 0), TapArgs(taps)


def max_pool_grad(dy: Any, x_shape: tuple, ksize: tuple, geo: Any, arg: TapArgs) -> Any:
    """dx of `max_pool`, channels-first behind an NHWC view; dy in any layout."""
    (oh, ow), ((top, _), (left, _)), (sh, sw), _ = geo
    n, h, w, c = x_shape
    dx = np.zeros((c, n, h, w), dy.dtype)
    dys = np.ascontiguousarray(dy.transpose(3, 0, 1, 2)).reshape(c * n, oh, ow)
    kh, kw = ksize
    offsets = np.array([(i - top) * w + j - left for i in range(kh) for j in range(kw)])
    _max_grad(dys, arg.taps, sh, sw, offsets, dx.reshape(c * n, h, w))
    return dx.transpose(1, 2, 3, 0)


def select(g: Any, ksize: tuple, geo: Any, arg: TapArgs) -> Any:
    """For every window, g (NHWC, any layout) at the tap `arg` holds: the gradient's gradient
    (NumPy: a gather), channels-first behind an NHWC view."""
    (oh, ow), ((top, _), (left, _)), (sh, sw), _ = geo
    n, h, w, c = g.shape
    t = arg.taps.astype(np.intp)
    i = t // ksize[1]
    rows = np.arange(oh)[:, None] * sh - top + i
    cols = np.arange(ow) * sw - left + (t - i * ksize[1])
    gs = np.ascontiguousarray(g.transpose(3, 0, 1, 2)).reshape(c * n, h * w)
    out = np.take_along_axis(gs, (rows * w + cols).reshape(c * n, -1), axis=1)
    return out.reshape(c, n, oh, ow).transpose(1, 2, 3, 0)
