"""Direct convolution of few channels (numba): LeNet's layers without patches or thin GEMMs.

Why. LeNet's convolutions have 1 -> 6 and 6 -> 16 channels and 5x5 filters: as GEMMs (row
frames, `conv_small`) the products have M = 6 or 16 rows, the patch matrices are 25-150 times
the input, and copying them costs as much as the products. Here each image is laid into a
zero-bordered frame (HP x WP, one per channel, in a small scratch buffer) and every output
channel is accumulated over the frame's positions directly: output pixel q = oh*WP + ow of
tap (i, j) reads frame pixel q + i*WP + j, so one filter row (5 taps) is 5 loads of
consecutive positions, vectorized by LLVM across the positions, and two output channels
share those loads. Positions past the last output column (WP - OW of every WP) are computed
and dropped, as the row frames do.

The input gradient is scattered (`_scatter5`): for each input channel and tap, the frame's
slice at the tap's offset gets the sums over 8 filters at a time of the filter's weight
times dz (dz laid out at the frame's positions, zero at the dropped ones), so 8 products
are summed per memory update and no work is spent on padding. With fewer than SCATTER_M
filters it is the forward kernel instead: the convolution of dz's frames (padded by
KH-1-top, KW-1-left) with the flipped, channel-swapped filter.

The filter gradient sums over images and positions, a reduction, which LLVM vectorizes only
with fastmath (reassociation). So it is kept in 16 lanes of partial sums. Where the frames'
positions cut in blocks of 64 waste little (`_filter5`, LeNet's first layer: 896 positions
for 784 outputs), lane l of a tap's accumulator adds x * dz at positions l, l+16, l+32, l+48
of every block (four products per memory update). Elsewhere, from LANES_M filters on
(`_filter5m`, LeNet's second layer), the filters are the lanes (dz laid out channels-last,
M <= 16): each tap's accumulator adds the products of KP consecutive outputs of a row before
its memory update. The lanes' sums are added at the end of a unit of UNIT images, in order;
each unit has its own partial gradient and the units are added in order, so the result does
not depend on how many threads ran them. With fewer filters the row-frame GEMMs
(`conv_small`) compute it. Tried: the images as the lanes (units of 64 images laid out
image-innermost): the transposing copies cost 0.4-1.0 ms a step, and it lost to the GEMMs on
LeNet's second layer (4.2 against 3.7 ms).

Order of the sums: per output, the bias, then per input channel and filter row the 5 taps
(the GEMM path sums the taps first and adds the bias last), so results differ from the NumPy
path by rounding only; they do not depend on the number of threads (every image is computed
by one thread, whole). Index arithmetic is unsigned: with signed indices numba adds a
negative-index wraparound to each load, which turns the vector loads into gathers (8x
slower).

Applies (`applies`) to stride-1, undilated, ungrouped convolutions with KW == 5 and few
channels, on NumPy arrays with numba enabled (`jit.enabled()`), float32 or float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import jit
from layerflow._src.ops import conv_threads

# At most this many input or output channels: the filter-lane gradient has 16 lanes, and
# larger layers (whose GEMMs are no longer thin, while the two-filter passes here re-read the
# frames M/2 times) were not measured against the GEMM paths. At 16 (one thread, CPU ms,
# GEMMs / here, forward, input gradient, filter + bias gradient): 28x28 16 -> 16 SAME, batch
# 64: 15.4 / 8.6, 20.6 / 10.8, 15.8 / 13.5; 28x28 3 -> 16, batch 128: 7.0 / 4.1, 8.6 / 6.2,
# 7.3 / 5.2; 14x14 16 -> 8 VALID, batch 64: 2.8 / 1.0, 3.2 / 1.1, 2.4 / 2.0.
MAX_CHANNELS = 16
# Images per thread share when the chunks go to threads (starting a thread costs ~0.1 ms).
MIN_IMAGES = 16
# The input gradient is scattered (`_scatter5`) from this many filters on (8 per pass, the
# last pass padded with zero filters). Measured on LeNet's second layer (16 filters, batch
# 256, one thread): 2.9-3.0 ms against 3.6-3.7 by `_conv5` on dz's frames.
SCATTER_M = 8
# Images per unit of the filter gradient (each unit's sums are kept apart, then added in
# order: the same bits for any number of threads).
UNIT = 64
# The filter gradient runs here by position lanes (`_filter5`) when its positions, rounded
# up to blocks of 64, are at most DW_WASTE times the outputs, else by filter lanes
# (`_filter5m`) from LANES_M filters on, else by the row-frame GEMMs. Measured (batch 256, one
# thread, CPU ms, filter and bias gradients, here / GEMMs): LeNet's 28x28 1->6 layer (1.14x)
# 1.9-2.0 / 3.9; 28x28 2, 3, 4 -> 6 (batch 128) 1.8 / 3.3, 2.7 / 5.0, 3.5 / 6.2; on the 14x14
# 6 -> M layer (192 positions for 100 outputs: 6.4 ms by position lanes) by filter lanes, M =
# 16, 12, 8, 4, 2: 2.55 / 4.0, 2.46 / 4.4, 2.31 / 3.2, 3.0 / 2.4, 2.7 / 2.1.
DW_WASTE = 1.3
LANES_M = 8
# Outputs of a row whose products `_filter5m` sums per memory update (a row is rounded up to
# a multiple, with zero dz): on conv 2 (10 columns) 10 took 2.44 ms against 2.77 for 5.
KP = 10


def applies(xp: Any, cv: Any, dtype: Any) -> bool:
    """Whether `cv` (a `conv_kernels.Conv`) runs here."""
    _, _, strides, dilations = cv.geo
    return (xp is np and strides == (1, 1) and tuple(dilations) == (1, 1) and cv.g == 1
            and cv.kw == 5 and cv.c <= MAX_CHANNELS and cv.m <= MAX_CHANNELS
            and np.dtype(dtype) in (np.float32, np.float64) and jit.enabled())  # fmt: skip


def _position_lanes(cv: Any) -> bool:
    """Whether `_filter5` (positions as lanes) computes the filter gradient of `cv`: its
    positions, rounded up to blocks of 64, are at most DW_WASTE times the outputs."""
    (oh, ow) = cv.geo[0]
    pp = -(-((oh - 1) * (ow + 4) + ow) // 64) * 64
    return pp <= DW_WASTE * oh * ow


def filter_applies(cv: Any) -> bool:
    """Whether `filter_grad` runs the filter gradient of `cv` (where `applies`): by position
    lanes where they waste little, else by filter lanes from LANES_M filters on."""
    return _position_lanes(cv) or cv.m >= LANES_M


@jit.kernel
def _frame(x, n, top, left, wp, fr):  # pragma: no cover - compiled
    """Image n of x (C, N, H, W) into the frames fr (C, >= (H + top) * wp) at (top, left), rows
    wp apart (the borders are left as they are: zeros)."""
    c_in, _, h, wd = x.shape
    for c in range(c_in):
        fc = fr[c]
        for r in range(h):
            row = np.uint64((r + top) * wp + left)
            for v in range(wd):
                fc[row + np.uint64(v)] = x[c, n, r, v]


@jit.kernel
def _conv5(x, w, b, top, left, n0, n1, fr, acc, y, relu, rows_only):  # pragma: no cover - compiled
    """y[:, n] = b + conv(x[:, n] framed at (top, left), w) for n in [n0, n1): x (C, N, H, W),
    w (KH, 5, C, M), y (M, N, OH, OW), all C-contiguous; fr (C, HP*WP) a zeroed scratch
    (HP = OH + KH - 1, WP = OW + 4), acc (2, P) a scratch, P = (OH - 1) * WP + OW.
    `rows_only`: skip the output rows where a tap row reads only padding rows."""
    c_in, _, h, wd = x.shape
    kh = w.shape[0]
    m_out = w.shape[3]
    oh, ow = y.shape[2], y.shape[3]
    wp = np.uint64(ow + 4)
    p_n = np.uint64((oh - 1) * (ow + 4) + ow)
    u1, u2, u3, u4 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    a0 = acc[0]
    a1 = acc[1]
    for n in range(n0, n1):
        _frame(x, n, top, left, ow + 4, fr)
        for m0 in range(0, m_out, 2):
            m1 = min(m0 + 1, m_out - 1)
            b0, b1 = b[m0], b[m1]
            for p in range(p_n):
                a0[p] = b0
                a1[p] = b1
            for c in range(c_in):
                fc = fr[c]
                for i in range(kh):
                    v00, v01, v02, v03, v04 = w[i, 0, c, m0], w[i, 1, c, m0], w[i, 2, c, m0], \
                        w[i, 3, c, m0], w[i, 4, c, m0]  # fmt: skip
                    v10, v11, v12, v13, v14 = w[i, 0, c, m1], w[i, 1, c, m1], w[i, 2, c, m1], \
                        w[i, 3, c, m1], w[i, 4, c, m1]  # fmt: skip
                    o = np.uint64(i) * wp
                    if not rows_only:
                        for p in range(p_n):
                            q = p + o
                            x0, x1, x2, x3, x4 = fc[q], fc[q + u1], fc[q + u2], fc[q + u3], \
                                fc[q + u4]  # fmt: skip
                            a0[p] += v00 * x0 + v01 * x1 + v02 * x2 + v03 * x3 + v04 * x4
                            a1[p] += v10 * x0 + v11 * x1 + v12 * x2 + v13 * x3 + v14 * x4
                        continue
                    # Only the output rows whose tap row i reads image rows (the input
                    # gradient's frames are half zero padding); the same loop on sliced
                    # accumulators, which runs slower on the forward's shapes.
                    r0, r1 = max(0, top - i), min(oh, top + h - i)
                    s0 = np.uint64(r0) * wp
                    qo = s0 + o
                    acc0, acc1 = a0[s0:], a1[s0:]
                    for p in range(np.uint64(max(0, (r1 - r0 - 1) * (ow + 4) + ow))):
                        q = qo + p
                        x0, x1, x2, x3, x4 = fc[q], fc[q + u1], fc[q + u2], fc[q + u3], fc[q + u4]
                        acc0[p] += v00 * x0 + v01 * x1 + v02 * x2 + v03 * x3 + v04 * x4
                        acc1[p] += v10 * x0 + v11 * x1 + v12 * x2 + v13 * x3 + v14 * x4
            for r in range(oh):
                row = np.uint64(r) * wp
                for v in range(ow):
                    s0, s1 = a0[row + np.uint64(v)], a1[row + np.uint64(v)]
                    if relu:
                        s0, s1 = max(s0, 0.0), max(s1, 0.0)
                    y[m0, n, r, v] = s0
                    y[m1, n, r, v] = s1


@jit.kernel
def _filter5(x, dz, top, left, u0, u1, unit, fr, dzf, part, dwu):  # pragma: no cover
    """dwu[u] = the filter gradient (KH, 5, C, M) of images [u*unit, (u+1)*unit) for u in
    [u0, u1): x (C, N, H, W), dz (M, N, OH, OW); scratch: fr (C, >= PP + (KH-1)*WP + 52) and
    dzf (M, PP) zeroed, PP = P rounded up to 64; part (M, C, KH, 5, 16)."""
    c_in, n_all, h, wd = x.shape
    m_out, _, oh, ow = dz.shape
    kh = dwu.shape[1]
    wp = ow + 4
    pp = dzf.shape[1]
    u16, u32, u48 = np.uint64(16), np.uint64(32), np.uint64(48)
    for u in range(u0, u1):
        part[...] = 0
        for n in range(u * unit, min(n_all, (u + 1) * unit)):
            _frame(x, n, top, left, wp, fr)
            for m in range(m_out):
                dm = dzf[m]
                for r in range(oh):
                    row = np.uint64(r * wp)
                    for v in range(ow):
                        dm[row + np.uint64(v)] = dz[m, n, r, v]
            for m in range(0, dzf.shape[0], 2):  # two filters share the x loads
                dm, dn = dzf[m], dzf[m + 1]
                for c in range(c_in):
                    fc = fr[c]
                    for i in range(kh):
                        pf = part[m, c, i].ravel()  # 5 taps x 16 lanes
                        pg = part[m + 1, c, i].ravel()
                        o = np.uint64(i * wp)
                        for blk in range(0, pp, 64):
                            for lane in range(16):
                                e = np.uint64(blk + lane)
                                d0, d1, d2, d3 = dm[e], dm[e + u16], dm[e + u32], dm[e + u48]
                                g0, g1, g2, g3 = dn[e], dn[e + u16], dn[e + u32], dn[e + u48]
                                q = e + o
                                for j in range(5):
                                    qj = q + np.uint64(j)
                                    x0, x1 = fc[qj], fc[qj + u16]
                                    x2, x3 = fc[qj + u32], fc[qj + u48]
                                    t = np.uint64(16 * j + lane)
                                    pf[t] += x0 * d0 + x1 * d1 + x2 * d2 + x3 * d3
                                    pg[t] += x0 * g0 + x1 * g1 + x2 * g2 + x3 * g3
        for m in range(m_out):
            for c in range(c_in):
                for i in range(kh):
                    for j in range(5):
                        s = part[m, c, i, j, 0]
                        for lane in range(1, 16):
                            s += part[m, c, i, j, lane]
                        dwu[u, i, j, c, m] = s


@jit.kernel
def _scatter5(dz, w, top, left, n0, n1, dzf, dxf, dx):  # pragma: no cover - compiled
    """dx[:, n] = the input gradient of images n in [n0, n1) from dz (M, N, OH, OW) and w
    (KH, 5, C2, M8) (C2 = C rounded up to 2 and M8 = M rounded up to 8, zero past C and M),
    scattered: for each pair of input channels and each tap, two frame slices += the tap's
    8-filter sums of dz (the dz loads shared). Scratch: dzf (M8, P) zeroed (P = (OH - 1) * WP
    + OW, WP = OW + 4), dxf (C2, HP * WP) (HP = OH + KH - 1)."""
    m_out, _, oh, ow = dz.shape
    kh = w.shape[0]
    h, wd = dx.shape[2], dx.shape[3]
    wp = ow + 4
    p_n = np.uint64((oh - 1) * wp + ow)
    df = dzf.ravel()
    st = np.uint64(dzf.shape[1])
    u2, u3, u4, u5, u6, u7 = (np.uint64(2), np.uint64(3), np.uint64(4), np.uint64(5),
                              np.uint64(6), np.uint64(7))  # fmt: skip
    for n in range(n0, n1):
        for m in range(m_out):
            dm = dzf[m]
            for r in range(oh):
                row = np.uint64(r * wp)
                for v in range(ow):
                    dm[row + np.uint64(v)] = dz[m, n, r, v]
        dxf[...] = 0
        for c in range(0, dxf.shape[0], 2):  # two input channels share the dz loads
            fc = dxf[c]
            gc = dxf[c + 1]
            for i in range(kh):
                for j in range(5):
                    o = np.uint64(i * wp + j)
                    for m0 in range(0, dzf.shape[0], 8):
                        w0, w1, w2, w3 = w[i, j, c, m0], w[i, j, c, m0 + 1], \
                            w[i, j, c, m0 + 2], w[i, j, c, m0 + 3]  # fmt: skip
                        w4, w5, w6, w7 = w[i, j, c, m0 + 4], w[i, j, c, m0 + 5], \
                            w[i, j, c, m0 + 6], w[i, j, c, m0 + 7]  # fmt: skip
                        z0, z1, z2, z3 = w[i, j, c + 1, m0], w[i, j, c + 1, m0 + 1], \
                            w[i, j, c + 1, m0 + 2], w[i, j, c + 1, m0 + 3]  # fmt: skip
                        z4, z5, z6, z7 = w[i, j, c + 1, m0 + 4], w[i, j, c + 1, m0 + 5], \
                            w[i, j, c + 1, m0 + 6], w[i, j, c + 1, m0 + 7]  # fmt: skip
                        base = np.uint64(m0) * st
                        for p in range(p_n):
                            e = base + p
                            d0, d1, d2, d3 = df[e], df[e + st], df[e + u2 * st], df[e + u3 * st]
                            d4, d5 = df[e + u4 * st], df[e + u5 * st]
                            d6, d7 = df[e + u6 * st], df[e + u7 * st]
                            fc[p + o] += (w0 * d0 + w1 * d1 + w2 * d2 + w3 * d3 + w4 * d4
                                          + w5 * d5 + w6 * d6 + w7 * d7)  # fmt: skip
                            gc[p + o] += (z0 * d0 + z1 * d1 + z2 * d2 + z3 * d3 + z4 * d4
                                          + z5 * d5 + z6 * d6 + z7 * d7)  # fmt: skip
        for c in range(dx.shape[0]):  # not the zero channel past an odd count
            fc = dxf[c]
            for r in range(h):
                row = np.uint64((r + top) * wp + left)
                for v in range(wd):
                    dx[c, n, r, v] = fc[row + np.uint64(v)]


@jit.kernel
def _filter5m(x, dz, top, left, u0, u1, unit, fr, dzt, acc, dwu):  # pragma: no cover
    """`_filter5` with the filters as the 16 lanes (M <= 16): acc[c, tap, m] adds, for KP
    consecutive outputs of a row at a time, x * dz over the 5 taps of a filter row, each tap's
    KP products summed before its memory update. Scratch: fr (C, HP * WP) zeroed, WP = OW5 + 4
    (OW5 = OW rounded up to KP), dzt (OH, OW5, 16) zeroed (dz channels-last), acc (C, KH*5,
    16)."""
    c_in, n_all, h, wd = x.shape
    m_out, _, oh, ow = dz.shape
    kh = dwu.shape[1]
    ow5 = dzt.shape[1]
    wp = ow5 + 4
    for u in range(u0, u1):
        acc[...] = 0
        for n in range(u * unit, min(n_all, (u + 1) * unit)):
            _frame(x, n, top, left, wp, fr)
            for m in range(m_out):
                for r in range(oh):
                    for v in range(ow):
                        dzt[r, v, m] = dz[m, n, r, v]
            for c in range(c_in):
                fc = fr[c]
                ac = acc[c].ravel()
                for r in range(oh):
                    dd = dzt[r].ravel()
                    for v0 in range(0, ow5, KP):
                        db = np.uint64(v0 * 16)
                        for i in range(kh):
                            bi = np.uint64((r + i) * wp + v0)
                            ai = np.uint64(i * 80)
                            for lane in range(16):  # one vector: the constant loops unroll
                                m = np.uint64(lane)
                                for j in range(5):
                                    e = ai + np.uint64(j * 16) + m
                                    s = ac[e]
                                    for k in range(KP):
                                        s += (
                                            fc[bi + np.uint64(j + k)]
                                            * dd[db + np.uint64(16 * k) + m]
                                        )
                                    ac[e] = s
        for c in range(c_in):
            for i in range(kh):
                for j in range(5):
                    for m in range(m_out):
                        dwu[u, i, j, c, m] = acc[c, i * 5 + j, m]


def _shares(xp: Any, cv: Any, n: int, macs: int) -> list[tuple[int, int]]:
    """The image ranges each thread computes (`conv_threads.count`'s policy: free cores, the
    main thread, a large convolution)."""
    threads = conv_threads.count(xp, max(1, n // MIN_IMAGES), (1, 1, macs))
    bounds = [round(t * n / threads) for t in range(threads + 1)]
    return [(bounds[t], bounds[t + 1]) for t in range(threads)]


def _run(xp: Any, cv: Any, x: Any, w: Any, b: Any, top: int, left: int, y: Any,
         relu: bool, rows_only: bool = False) -> None:  # fmt: skip
    """`_conv5` over all images, their ranges on the threads `_shares` allows."""
    c, n = x.shape[:2]
    kh = w.shape[0]
    oh, ow = y.shape[2:]
    p = (oh - 1) * (ow + 4) + ow
    shares = _shares(xp, cv, n, y.size * c * kh * 5)

    def work(t: int) -> None:
        fr = np.zeros((c, (oh + kh - 1) * (ow + 4)), dtype=y.dtype)
        acc = np.empty((2, p), dtype=y.dtype)
        n0, n1 = shares[t]
        _conv5(x, w, b, top, left, n0, n1, fr, acc, y, relu, rows_only)

    conv_threads.run(len(shares), work)


def forward(xp: Any, x: Any, w: Any, cv: Any, bias: Any, relu: bool,
            keep: bool) -> tuple[Any, Any, Any]:  # fmt: skip
    """`conv_kernels.conv_forward` by direct convolution: (NHWC view of the channels-first
    output, None, the relu mask packed per chunk of `cv.plan` as `conv_small` packs it, when
    `keep` and `relu`)."""
    (oh, ow), ((t, _), (left, _)), _, _ = cv.geo
    dt = np.result_type(x.dtype, w.dtype)
    xc = np.ascontiguousarray(x.transpose(3, 0, 1, 2), dtype=dt)
    wc = np.ascontiguousarray(w, dtype=dt)
    b = np.zeros(cv.m, dt) if bias is None else np.ascontiguousarray(bias, dtype=dt)
    y = np.empty((cv.m, cv.n, oh, ow), dtype=dt)
    _run(xp, cv, xc, wc, b, t, left, y, relu)
    mask = None
    if keep and relu:
        mask = [np.packbits((y[:, n0:n1] > 0).ravel()) for n0, n1, _, _ in cv.plan]
    return y.transpose(1, 2, 3, 0), None, mask


def input_grad(xp: Any, w: Any, dz: Any, cv: Any) -> Any:
    """The input gradient (NHWC view of a channels-first array) from dz (M, N, OH, OW). With
    at least SCATTER_M filters, scattered by `_scatter5` (no work on padding); else the
    convolution of dz framed at (KH-1-top, KW-1-left) with the flipped, channel-swapped
    filter, by `_conv5`."""
    ((t, _), (left, _)) = cv.geo[1]
    dt = dz.dtype
    dx = np.empty((cv.c, cv.n, cv.h, cv.w), dtype=dt)
    dzc = np.ascontiguousarray(dz)
    if cv.m >= SCATTER_M:
        (oh, ow) = cv.geo[0]
        m8 = -(-cv.m // 8) * 8
        c2 = cv.c + cv.c % 2  # input channels in pairs: a zero one past an odd count
        w8 = np.zeros((cv.kh, 5, c2, m8), dtype=dt)
        w8[:, :, : cv.c, : cv.m] = w
        shares = _shares(xp, cv, cv.n, dz.size * cv.c * cv.kh * 5)

        def work(i: int) -> None:
            dzf = np.zeros((m8, (oh - 1) * (ow + 4) + ow), dtype=dt)
            dxf = np.empty((c2, (oh + cv.kh - 1) * (ow + 4)), dtype=dt)
            _scatter5(dzc, w8, t, left, shares[i][0], shares[i][1], dzf, dxf, dx)

        conv_threads.run(len(shares), work)
    else:
        wf = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2), dtype=dt)
        _run(xp, cv, dzc, wf, np.zeros(cv.c, dt), cv.kh - 1 - t, cv.kw - 1 - left, dx, False,
             rows_only=True)  # fmt: skip
    return dx.transpose(1, 2, 3, 0)


def filter_grad(xp: Any, x: Any, dz: Any, cv: Any) -> Any:
    """The filter gradient (KH, KW, C, M) from x (NHWC) and dz (M, N, OH, OW): `_filter5`
    (`filter_applies`) or `_filter5m` on units of UNIT images, the units' gradients added in
    order."""
    ((t, _), (left, _)) = cv.geo[1]
    (oh, ow) = cv.geo[0]
    dt = dz.dtype
    xc = np.ascontiguousarray(x.transpose(3, 0, 1, 2), dtype=dt)
    dzc = np.ascontiguousarray(dz)
    units = -(-cv.n // UNIT)
    dwu = np.empty((units, cv.kh, 5, cv.c, cv.m), dtype=dt)
    threads = conv_threads.count(xp, units, (1, 1, dz.size * cv.c * cv.kh * 5))
    bounds = [round(i * units / threads) for i in range(threads + 1)]
    lanes = _position_lanes(cv)

    def work(i: int) -> None:
        u0, u1 = bounds[i], bounds[i + 1]
        if lanes:
            wp = ow + 4
            pp = -(-((oh - 1) * wp + ow) // 64) * 64
            fr = np.zeros((cv.c, max((oh + cv.kh - 1) * wp, pp + (cv.kh - 1) * wp + 52)), dt)
            m2 = cv.m + cv.m % 2  # filters in pairs: a zero one past an odd count
            dzf = np.zeros((m2, pp), dtype=dt)
            part = np.empty((m2, cv.c, cv.kh, 5, 16), dtype=dt)
            _filter5(xc, dzc, t, left, u0, u1, UNIT, fr, dzf, part, dwu)
        else:
            ow5 = -(-ow // KP) * KP
            fr = np.zeros((cv.c, (oh + cv.kh - 1) * (ow5 + 4)), dtype=dt)
            dzt = np.zeros((oh, ow5, 16), dtype=dt)
            acc = np.empty((cv.c, cv.kh * 5, 16), dtype=dt)
            _filter5m(xc, dzc, t, left, u0, u1, UNIT, fr, dzt, acc, dwu)

    conv_threads.run(threads, work)
    return np.add.reduce(dwu, axis=0)  # the units in order
