"""Max and average pooling, NHWC (TF's default) or NCHW, 1-D and 2-D, SAME/VALID padding.

The pools read the input through one strided slice per window tap, with the padding clipped
away (no padded copy), and write an output laid out as the input is (channels-first behind an
NHWC view when the input is such a view, as every conv output is). Max pooling keeps a running
maximum in place and, when a tape records it, the number of the first tap that holds each
window's maximum (TF's rule for ties); its gradient sends each output's gradient to that tap,
channel block by channel block, so its masks stay within the convolution's temporary budget.
Windows that tile the input (stride == pool size, no padding) take a reshape path for the
average.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op, recording
from layerflow._src.framework import errors
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, reshape

__all__ = ["avg_pool", "avg_pool1d", "avg_pool2d", "max_pool", "max_pool1d", "max_pool2d"]


def _pool_geo(x_shape: tuple, ksize: tuple, strides: tuple, padding: Any, name: str) -> Any:
    outs, pads = _k.geometry(tuple(x_shape[1:3]), ksize, strides, (1, 1), padding, name)
    return outs, pads, strides, (1, 1)


def _lowest(dtype: Any) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _empty_like_layout(xp: Any, x: Any, shape: tuple, dtype: Any, fill: Any = None) -> Any:
    """An NHWC array of `shape` laid out as `x` is: channels-first behind a view when `x` is
    such a view, else C-contiguous NHWC."""
    a = _alloc_layout(xp, _cf_layout(x), shape, dtype)
    if fill is not None:
        a[...] = fill
    return a


def _alloc_layout(xp: Any, cf: bool, shape: tuple, dtype: Any) -> Any:
    if cf:
        n, h, w, c = shape
        return xp.empty((c, n, h, w), dtype=dtype).transpose(1, 2, 3, 0)
    return xp.empty(shape, dtype=dtype)


def _in_layout_of(xp: Any, a: Any, like: Any) -> Any:
    """`a` (NHWC) laid out as `like` is (see `_empty_like_layout`): elementwise work on views
    of two different layouts walks one of them against its memory order (measured: a 3x3
    max-pool gradient took 68 ms instead of 5 ms), one copy first is far cheaper."""
    if _cf_layout(like) == _cf_layout(a):
        return a
    out = _empty_like_layout(xp, like, a.shape, a.dtype)
    out[...] = a
    return out


def _cf_layout(a: Any) -> bool:
    return a.ndim == 4 and a.transpose(3, 0, 1, 2).flags.c_contiguous


def _taps(x_shape: tuple, ksize: tuple, geo: Any) -> list[tuple[slice, slice, slice, slice]]:
    """For each window tap in order: (output rows, output cols, input rows, input cols) slices,
    clipped to the outputs whose tap falls inside the (unpadded) input."""
    (oh, ow), ((t, _), (left, _)), (sh, sw), _ = geo
    h, w = x_shape[1], x_shape[2]
    taps = []
    for i in range(ksize[0]):
        rlo, rhi = _k.out_range(0, oh, i, sh, t, h)
        for j in range(ksize[1]):
            clo, chi = _k.out_range(0, ow, j, sw, left, w)
            if rlo < rhi and clo < chi:
                taps.append((slice(rlo, rhi), slice(clo, chi), _k.in_slice(rlo, rhi, i, sh, t),
                             _k.in_slice(clo, chi, j, sw, left)))  # fmt: skip
    return taps


# Max pooling's passes (one per tap: compare, maximum, tap number; the gradient's select and
# add) run block by block, each block's output and temporaries about this size, so that the
# taps re-read the block's input from cache: measured on a 3x3 stride-1 pool of 16x24x24x480,
# 76 -> 51 ms forward and 56 -> 33 ms backward against whole-array passes.
POOL_BLOCK_BYTES = 2 << 20


def _cache_blocks(x: Any, n_out: int, itemsize: int) -> list[tuple[slice, slice]]:
    """(batch, channel) slices cutting the work into cache-sized blocks that are contiguous in
    `x`'s memory: channels of a channels-first array, images of a C-contiguous one; none over
    the temporary budget. `n_out` is the number of outputs per channel."""
    n, c = x.shape[0], x.shape[3]
    per_channel = max(1, n_out * (itemsize + 8))  # a float temporary, masks and tap numbers
    per_image = per_channel * c // max(1, n)
    if _cf_layout(x) or n <= 1 or per_image > _k.BUDGET_BYTES:
        block = POOL_BLOCK_BYTES if _cf_layout(x) or n <= 1 else _k.BUDGET_BYTES
        step = max(1, block // per_channel)
        return [(slice(None), slice(c0, min(c, c0 + step))) for c0 in range(0, c, step)]
    nb = max(1, POOL_BLOCK_BYTES // per_image)
    return [(slice(b0, min(n, b0 + nb)), slice(None)) for b0 in range(0, n, nb)]


def _arg_dtype(n_taps: int) -> Any:
    """The smallest unsigned dtype that numbers a window's taps and keeps its top value free
    (the "no tap yet" mark)."""
    return np.uint8 if n_taps < 255 else np.uint16 if n_taps < 65535 else np.uint32


def _tap_max_and_arg(xp: Any, x: Any, ksize: tuple, geo: Any, keep_arg: bool) -> tuple[Any, Any]:
    """(y, arg): each window's maximum and, with `keep_arg`, the number (in `_taps` order) of
    the first tap holding it (TF's rule for ties), in the output's layout; else arg is None."""
    shape = (x.shape[0], *geo[0], x.shape[3])
    y = _empty_like_layout(xp, x, shape, x.dtype, _lowest(x.dtype))
    taps = _taps(x.shape, ksize, geo)
    if not keep_arg:
        for ro, co, ri, ci in taps:
            o = y[:, ro, co, :]
            xp.maximum(o, x[:, ri, ci, :], out=o)
        return y, None
    dt = _arg_dtype(len(taps))
    none = np.iinfo(dt).max
    arg = _empty_like_layout(xp, x, shape, dt, none)
    for bs, cs in _cache_blocks(x, y.size // y.shape[3], x.dtype.itemsize):
        for t, (ro, co, ri, ci) in enumerate(taps):
            o, xs = y[bs, ro, co, cs], x[bs, ri, ci, cs]
            better = xs > o  # strictly: the first tap holding the maximum wins
            xp.maximum(o, xs, out=o)
            # arg = t where better, by arithmetic on the small ints: a masked copy
            # (copyto(where=)) on these strided views costs five times as much.
            a = arg[bs, ro, co, cs]
            a += better * dt(t) - a * better
        # Windows whose maximum is the dtype's lowest value (all -inf) had no tap above it.
        missing = arg[bs, ..., cs] == none
        if missing.any():
            for t, (ro, co, ri, ci) in enumerate(taps):
                m = missing[:, ro, co] & (x[bs, ri, ci, cs] == y[bs, ro, co, cs])
                xp.copyto(arg[bs, ro, co, cs], t, where=m)
                missing[:, ro, co] &= ~m
    return y, arg


# --- max pooling by separable passes over phase frames --------------------------------------------

# The max of a KH x KW window is the max over KH rows of each row's max over KW columns (a row
# pass, then a column pass: KH + KW taps instead of KH * KW). Keeping, in each pass, the first
# tap that holds the maximum (a later tap wins only when strictly greater) picks the first row
# holding the window's maximum and the first column of that row that holds it: the first tap in
# row-major window order, TF's rule for ties.
#
# Both passes run on flat, contiguous arrays, so that every tap is ONE 1-D slice of a whole
# block of planes (an image's channel when x is channels-first, an image of C-vectors when it
# is NHWC): measured on one core, a maximum over taps that are rows of 5 values (GoogLeNet's
# 6x6 inputs) runs 15 times slower than over one flat slice, over every other value of a row
# (stride 2) 16 times slower. The input is therefore first copied into "phase frames", one per
# (row mod SH, column mod SW): frame (r, s) holds rows a * SH + r and columns b * SW + s of the
# padded input (its padding the dtype's lowest value), OHF x OWF of them per plane, where
# OHF = OH + (KH - 1) // SH and OWF likewise. Tap j of the row pass is then frame (r, j % SW)
# shifted by j // SW positions, and tap i of the column pass is the row pass's result for
# rows of phase i % SH shifted by i // SH rows: each output's window, in flat positions that
# also cover its own row's and plane's end, where the extra OHF - OH rows and OWF - OW columns
# of results are dropped.


class _Frame:
    """The separable passes' geometry for an input of NHWC `shape`: planes of H x W x U
    values, U = 1 (channels-first: planes = C * N) or C (NHWC: planes = N); phase frames of
    `per` values per plane; `rs` x `cs` of them read (phases past the window are never)."""

    __slots__ = ("cf", "planes", "h", "w", "u", "kh", "kw", "sh", "sw", "top", "left",
                 "oh", "ow", "ohf", "owf", "per", "rs", "cs", "fslack", "rslack")  # fmt: skip

    def __init__(self, shape: tuple, ksize: tuple, geo: Any, cf: bool) -> None:
        n, self.h, self.w, c = shape
        (self.oh, self.ow), ((self.top, _), (self.left, _)), (self.sh, self.sw), _ = geo
        self.kh, self.kw = ksize
        self.cf = cf
        self.planes, self.u = (c * n, 1) if cf else (n, c)
        self.ohf = self.oh + (self.kh - 1) // self.sh
        self.owf = self.ow + (self.kw - 1) // self.sw
        self.per = self.ohf * self.owf * self.u
        self.rs, self.cs = min(self.sh, self.kh), min(self.sw, self.kw)
        # How far past a block's end the row and column taps read (filled, never kept).
        self.fslack = (self.kw - 1) // self.sw * self.u
        self.rslack = (self.kh - 1) // self.sh * self.owf * self.u

    def blocks(self, itemsize: int) -> list[tuple[int, int]]:
        """Blocks of planes whose frames and passes take about POOL_BLOCK_BYTES."""
        per = self.per * (self.rs * self.cs * itemsize + (self.rs + 1) * (itemsize + 1) + 1)
        step = max(1, POOL_BLOCK_BYTES // per)
        return [(p, min(self.planes, p + step)) for p in range(0, self.planes, step)]

    def phases(self) -> list[tuple[int, int, tuple, tuple]]:
        """(r, s, frame index, x index) of each phase read: the frame's [planes, rows, cols]
        positions holding x, and x's [rows, cols] slices that go there."""
        out = []
        for r in range(self.rs):
            alo, ahi = _k.out_range(0, self.ohf, r, self.sh, self.top, self.h)
            for s in range(self.cs):
                blo, bhi = _k.out_range(0, self.owf, s, self.sw, self.left, self.w)
                if alo < ahi and blo < bhi:
                    out.append((r, s, (slice(None), slice(alo, ahi), slice(blo, bhi)),
                                (_k.in_slice(alo, ahi, r, self.sh, self.top),
                                 _k.in_slice(blo, bhi, s, self.sw, self.left))))  # fmt: skip
        return out

    def row_taps(self, f: Any, r: int, n: int) -> list:
        """Tap j of the row pass over `n` values of row phase r: frame (r, j % SW), shifted."""
        return [f[r, j % self.sw, j // self.sw * self.u :][:n] for j in range(self.kw)]

    def col_taps(self, rows: Any, n: int) -> list:
        """Tap i of the column pass: the row pass's phase i % SH, shifted by i // SH rows."""
        step = self.owf * self.u
        return [rows[i % self.sh, i // self.sh * step :][:n] for i in range(self.kh)]

    def frame(self, a: Any, pb: int) -> Any:
        """The first `pb` planes of a flat phase array, as [planes, OHF, OWF, U]."""
        return a[: pb * self.per].reshape(pb, self.ohf, self.owf, self.u)


def _planes(xp: Any, a: Any, cf: bool) -> Any:
    """[planes, H, W, U] of an NHWC-shaped array: a view when `a` has that layout."""
    if cf:
        n, h, w, c = a.shape
        return _k.cf(xp, a).reshape(c * n, h, w, 1)
    return xp.ascontiguousarray(a)


class _Codes:
    """A recorded separable max pool's residual, one byte per value of the passes: the column
    (tap) of each row's first maximum, per row phase (`cols`, [RS, planes * per] or None for
    one column), and the row of each window's first maximum (`rows`, [planes * per] or None
    for one row)."""

    __slots__ = ("cf", "cols", "rows")

    def __init__(self, cf: bool, cols: Any, rows: Any) -> None:
        self.cf, self.cols, self.rows = cf, cols, rows


def _running_max(xp: Any, taps: list, out: Any, arg: Any, tmp: Any) -> None:
    """out = the max of the taps; arg (or None) = the number of the first tap holding it.
    `tmp` is a uint8 scratch of out's shape."""
    if len(taps) == 1:
        out[...] = taps[0]
        return
    byte = arg is not None and arg.dtype == np.uint8
    if byte:
        xp.greater(taps[1], taps[0], out=arg.view(np.bool_))
    elif arg is not None:  # a window over 254 wide
        arg[...] = xp.greater(taps[1], taps[0])
    xp.maximum(taps[0], taps[1], out=out)
    for j in range(2, len(taps)):
        if byte:
            # arg = j where tap j is strictly greater, by arithmetic on bytes: a masked copy
            # (copyto(where=)) costs a hundred times as much.
            xp.greater(taps[j], out, out=tmp.view(np.bool_))
            xp.multiply(tmp, np.uint8(j), out=tmp)
            xp.maximum(arg, tmp, out=arg)
        elif arg is not None:
            arg[xp.greater(taps[j], out)] = j
        xp.maximum(out, taps[j], out=out)


def _sep_max(xp: Any, x: Any, ksize: tuple, geo: Any, keep: bool) -> tuple[Any, Any]:
    fr = _Frame(x.shape, ksize, geo, _cf_layout(x))
    xs = _planes(xp, x, fr.cf)
    y = _empty_like_layout(xp, x, (x.shape[0], fr.oh, fr.ow, x.shape[3]), x.dtype)
    ys = _planes(xp, y, fr.cf)  # a view: y is laid out as x
    low, size = _lowest(x.dtype), fr.planes * fr.per
    codes = None
    if keep:
        codes = _Codes(fr.cf, xp.empty((fr.rs, size), _arg_dtype(fr.kw)) if fr.kw > 1 else None,
                       xp.empty(size, _arg_dtype(fr.kh)) if fr.kh > 1 else None)  # fmt: skip
    blocks, phases = fr.blocks(x.dtype.itemsize), fr.phases()
    m = blocks[0][1] * fr.per
    fbuf = xp.full((fr.rs, fr.cs, m + fr.fslack), low, dtype=x.dtype)
    rbuf = xp.empty((fr.rs, m + fr.rslack), dtype=x.dtype)
    ybuf = xp.empty(m, dtype=x.dtype) if fr.kh > 1 else rbuf[0]
    tmp = xp.empty(m, np.uint8)
    for p0, p1 in blocks:
        pb, n, o = p1 - p0, (p1 - p0) * fr.per, p0 * fr.per
        for r, s, fi, xi in phases:
            fr.frame(fbuf[r, s], pb)[fi] = xs[p0:p1][(slice(None), *xi)]
        fbuf[:, :, n : n + fr.fslack] = low
        for r in range(fr.rs):
            ac = None if codes is None or codes.cols is None else codes.cols[r, o : o + n]
            _running_max(xp, fr.row_taps(fbuf, r, n), rbuf[r, :n], ac, tmp[:n])
        if fr.kh > 1:
            rbuf[:, n : n + fr.rslack] = low
            ar = None if codes is None else codes.rows[o : o + n]
            _running_max(xp, fr.col_taps(rbuf, n), ybuf[:n], ar, tmp[:n])
        ys[p0:p1] = fr.frame(ybuf, pb)[:, : fr.oh, : fr.ow]
    return y, codes


def _index_grad(xp: Any, dy: Any, x_shape: tuple, ksize: tuple, geo: Any, codes: _Codes) -> Any:
    """dx of the separable max pool by one scatter-add: each output's flat input index (its
    window's origin plus its row code times the row length plus its column code), dy added
    there."""
    fr = _Frame(x_shape, ksize, geo, codes.cf)
    dys = _planes(xp, dy, fr.cf)
    dx = _alloc_layout(xp, fr.cf, x_shape, dy.dtype)
    dx[...] = 0
    dxf = _planes(xp, dx, fr.cf).reshape(-1)  # a view
    blocks = fr.blocks(dy.dtype.itemsize)
    pb, u = blocks[0][1], fr.u
    m, hwu, i32 = pb * fr.per, fr.h * fr.w * fr.u, np.int32
    # The flat index of each output's window origin in a block's planes (int64: what add.at
    # takes without a conversion); the codes' offsets are summed in int32 (twice as fast).
    base = ((xp.arange(pb, dtype=np.int64) * hwu)[:, None, None, None]
            + ((xp.arange(fr.oh) * fr.sh - fr.top) * fr.w * u)[:, None, None]
            + ((xp.arange(fr.ow) * fr.sw - fr.left) * u)[:, None] + xp.arange(u))  # fmt: skip
    off, off2 = xp.empty(m, i32), xp.empty(m, i32)
    idx = xp.empty(base.shape, np.int64)
    jf = tmp = None
    if codes.cols is not None:
        jf, tmp = xp.empty(m, codes.cols.dtype), xp.empty(m, codes.cols.dtype)
    for p0, p1 in blocks:
        pb, n, o = p1 - p0, (p1 - p0) * fr.per, p0 * fr.per
        ar = None if codes.rows is None else codes.rows[o : o + n]
        jv = _column_codes(xp, fr, codes, ar, o, n, jf, tmp)
        o2 = off[:n]
        if ar is None:
            o2[...] = 0
        else:
            o2[...] = ar
            o2 *= i32(fr.w * u)
        if jv is not None:
            off2[:n] = jv
            if u > 1:
                off2[:n] *= i32(u)
            o2 += off2[:n]
        ib = idx[:pb]
        ib[...] = fr.frame(o2, pb)[:, : fr.oh, : fr.ow]
        ib += base[:pb]
        xp.add.at(dxf[p0 * hwu :], ib.reshape(-1), dys[p0:p1].reshape(-1))
    return dx


def _column_codes(xp: Any, fr: _Frame, codes: _Codes, ar: Any, o: int, n: int, jv: Any,
                  tmp: Any) -> Any:  # fmt: skip
    """Each window's column code at the row its maximum lies in (None: one column)."""
    if codes.cols is None:
        return None
    if ar is None:
        return codes.cols[0, o : o + n]
    step, byte = fr.owf * fr.u, tmp.dtype == np.uint8
    jv, tmp = jv[:n], tmp[:n]
    for i in range(fr.kh):
        cv = codes.cols[i % fr.sh, o + i // fr.sh * step :][:n]
        if cv.size < n:  # the last block's last rows: dropped positions
            cv = xp.concatenate([cv, xp.zeros(n - cv.size, cv.dtype)])
        if byte:  # the mask as bytes, multiplied in place: no mixed-type loop
            xp.equal(ar, i, out=tmp.view(np.bool_))
            xp.multiply(tmp, cv, out=jv if i == 0 else tmp)
        else:
            xp.multiply(xp.equal(ar, i), cv, out=jv if i == 0 else tmp)
        if i:
            jv += tmp
    return jv


def _sep_select(xp: Any, g: Any, ksize: tuple, geo: Any, codes: _Codes) -> Any:
    """For every window, g where the separable max pool took its maximum: g gathered through
    the row pass's columns, then the column pass's rows."""
    fr = _Frame(g.shape, ksize, geo, codes.cf)
    gs = _planes(xp, g, fr.cf)
    out = _alloc_layout(xp, fr.cf, (g.shape[0], fr.oh, fr.ow, g.shape[3]), g.dtype)
    outs = _planes(xp, out, fr.cf)  # a view
    blocks, phases = fr.blocks(g.dtype.itemsize), fr.phases()
    m = blocks[0][1] * fr.per
    gbuf = xp.zeros((fr.rs, fr.cs, m + fr.fslack), dtype=g.dtype)  # the padding stays 0
    rbuf = xp.empty((fr.rs, m + fr.rslack), dtype=g.dtype)
    ybuf = xp.empty(m, dtype=g.dtype) if fr.kh > 1 else rbuf[0]
    prod, mask = xp.empty(m, dtype=g.dtype), xp.empty(m, dtype=np.bool_)
    for p0, p1 in blocks:
        pb, n, o = p1 - p0, (p1 - p0) * fr.per, p0 * fr.per
        for r, s, fi, xi in phases:
            fr.frame(gbuf[r, s], pb)[fi] = gs[p0:p1][(slice(None), *xi)]
        gbuf[:, :, n : n + fr.fslack] = 0
        for r in range(fr.rs):
            ac = None if codes.cols is None else codes.cols[r, o : o + n]
            _gather(xp, fr.row_taps(gbuf, r, n), ac, rbuf[r, :n], prod[:n], mask[:n])
        if fr.kh > 1:
            rbuf[:, n : n + fr.rslack] = 0
            _gather(xp, fr.col_taps(rbuf, n), codes.rows[o : o + n], ybuf[:n], prod[:n],
                    mask[:n])  # fmt: skip
        outs[p0:p1] = fr.frame(ybuf, pb)[:, : fr.oh, : fr.ow]
    return out


def _gather(xp: Any, taps: list, arg: Any, out: Any, prod: Any, mask: Any) -> None:
    """out = taps[arg] (arg None: the one tap)."""
    if arg is None:
        out[...] = taps[0]
        return
    for t, v in enumerate(taps):
        xp.equal(arg, t, out=mask)
        if t == 0:
            xp.multiply(v, mask, out=out)
        else:
            xp.multiply(v, mask, out=prod)
            out += prod


# --- max pooling ----------------------------------------------------------------------------------

# A recorded max pool saves, per output, the number of the tap that held the maximum (one byte
# for windows of fewer than 255 taps): its gradient reads neither the output nor x's values,
# so the tape lets the output go once the next layer's gradient has run.


@op("max_pool", saves=True, grad_uses_out=False)
def _max_pool(xp: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool")
    return _max_and_arg(xp, x, ksize, geo, recording())


@_max_pool.grad
def _(dy: Any, out: Any, x: Any, ksize: tuple, strides: tuple, padding: Any,
      saved: Any = None) -> Any:  # fmt: skip
    return _max_pool_grad(dy, x, ksize, strides, padding, saved)


def _max_and_arg(xp: Any, x: Any, ksize: tuple, geo: Any, keep_arg: bool) -> tuple[Any, Any]:
    """(y, arg): each window's maximum and, with `keep_arg`, where the first tap holding it
    lies (TF's rule for ties): `_Codes` of the separable passes, or (when some window's maximum
    is NaN or the dtype's lowest value, whose ties the passes do not settle as TF) the tap
    numbers of `_tap_max_and_arg`; else arg is None."""
    y, codes = _sep_max(xp, x, ksize, geo, keep_arg)
    if codes is not None and not bool((y > _lowest(x.dtype)).all()):
        return _tap_max_and_arg(xp, x, ksize, geo, True)
    return y, codes


def _arg_of(xp: Any, x: Any, ksize: tuple, geo: Any, arg: Any) -> Any:
    return arg if arg is not None else _max_and_arg(xp, x, ksize, geo, True)[1]


@op("max_pool_grad", 2, grad_uses_out=False)
def _max_pool_grad(xp: Any, dy: Any, x: Any, ksize: tuple, strides: tuple, padding: Any,
                   arg: Any = None) -> Any:  # fmt: skip
    """dx of max pooling: dy sent to the first tap holding each window's maximum. `arg` (the
    forward's residual) is a memo: recomputed from x when None."""
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool_grad")
    arg = _arg_of(xp, x, ksize, geo, arg)
    if isinstance(arg, _Codes):
        return _index_grad(xp, dy, x.shape, ksize, geo, arg)
    dx = _empty_like_layout(xp, x, x.shape, dy.dtype, 0)
    dy = _in_layout_of(xp, dy, arg)
    taps = _taps(x.shape, ksize, geo)
    for bs, cs in _cache_blocks(x, dy.size // dy.shape[3], dy.dtype.itemsize):
        for t, (ro, co, ri, ci) in enumerate(taps):
            dx[bs, ri, ci, cs] += xp.multiply(dy[bs, ro, co, cs], arg[bs, ro, co, cs] == t)
    return dx


@_max_pool_grad.grad
def _(g: Any, out: Any, dy: Any, x: Any, ksize: tuple, strides: tuple, padding: Any,
      arg: Any = None) -> Any:  # fmt: skip
    return _max_pool_select(g, x, ksize, strides, padding, arg), None


@op("max_pool_select", 2, grad_uses_out=False)
def _max_pool_select(xp: Any, g: Any, x: Any, ksize: tuple, strides: tuple, padding: Any,
                     arg: Any = None) -> Any:  # fmt: skip
    """For every pooling window, the value of `g` where `x` has its (first) maximum."""
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool")
    arg = _arg_of(xp, x, ksize, geo, arg)
    if isinstance(arg, _Codes):
        return _sep_select(xp, g, ksize, geo, arg)
    shape = (x.shape[0], *geo[0], x.shape[3])
    out = _empty_like_layout(xp, x, shape, g.dtype, 0)
    g = _in_layout_of(xp, g, x)
    taps = _taps(x.shape, ksize, geo)
    for bs, cs in _cache_blocks(x, out.size // out.shape[3], g.dtype.itemsize):
        for t, (ro, co, ri, ci) in enumerate(taps):
            out[bs, ro, co, cs] += xp.multiply(g[bs, ri, ci, cs], arg[bs, ro, co, cs] == t)
    return out


@_max_pool_select.grad
def _(dy: Any, out: Any, g: Any, x: Any, ksize: tuple, strides: tuple, padding: Any,
      arg: Any = None) -> Any:  # fmt: skip
    return _max_pool_grad(dy, x, ksize, strides, padding, arg), None


# --- average pooling ------------------------------------------------------------------------------


def _window_counts(xp: Any, x_shape: tuple, ksize: tuple, geo: Any, dtype: Any) -> Any:
    """How many real (unpadded) inputs each window covers: TF's SAME average ignores padding."""
    counts = xp.zeros((1,) + tuple(geo[0]) + (1,), dtype=dtype)
    for ro, co, _, _ in _taps(x_shape, ksize, geo):
        counts[:, ro, co, :] += 1
    return counts


def _blocks(ksize: tuple, strides: tuple, geo: Any, dtype: Any) -> bool:
    """Whether the windows tile the input without overlap or padding (stride == pool size)."""
    return ksize == strides and not any(b or a for b, a in geo[1]) and dtype.kind == "f"


def _block_mean(xp: Any, x: Any, ksize: tuple, out_hw: tuple) -> Any:
    """Mean of non-overlapping windows by a reshape of the channels-first form: KH + KW - 2
    adds of whole rows, no padding, no window counts; the result is channels-first too."""
    (kh, kw), (oh, ow) = ksize, out_hw
    xc = _k.cf(xp, x)[:, :, : oh * kh, : ow * kw]
    c, n = xc.shape[:2]
    a = xc.reshape(c * n, oh, kh, ow, kw)
    rows = a[:, :, 0] + a[:, :, 1] if kh > 1 else a[:, :, 0]
    for i in range(2, kh):
        rows += a[:, :, i]
    total = rows[..., 0] + rows[..., 1] if kw > 1 else rows[..., 0].copy()
    for j in range(2, kw):
        total += rows[..., j]
    total *= total.dtype.type(1.0 / (kh * kw))
    return total.reshape(c, n, oh, ow).transpose(1, 2, 3, 0)


def _block_spread(xp: Any, dy: Any, x_shape: tuple, ksize: tuple) -> Any:
    """The gradient of `_block_mean`: each output's share copied to its window (a repeat
    along the rows, then whole rows broadcast down each window)."""
    (kh, kw), (n, oh, ow, c) = ksize, dy.shape
    share = _k.cf(xp, dy) * dy.dtype.type(1.0 / (kh * kw))
    wide = xp.repeat(share, kw, axis=3) if kw > 1 else share
    blocks = xp.empty((c, n, oh, kh, ow * kw), dtype=dy.dtype)
    blocks[...] = wide[:, :, :, None, :]
    blocks = blocks.reshape(c, n, oh * kh, ow * kw)
    if (oh * kh, ow * kw) != tuple(x_shape[1:3]):  # VALID pooling leaves rows/columns out
        dx = xp.zeros((c, n) + tuple(x_shape[1:3]), dtype=dy.dtype)
        dx[:, :, : oh * kh, : ow * kw] = blocks
        blocks = dx
    return blocks.transpose(1, 2, 3, 0)


@op("avg_pool")
def _avg_pool(xp: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    geo = _pool_geo(x.shape, ksize, strides, padding, "avg_pool")
    if _blocks(ksize, strides, geo, x.dtype):
        return _block_mean(xp, x, ksize, geo[0])
    total = _empty_like_layout(xp, x, (x.shape[0], *geo[0], x.shape[3]), x.dtype, 0)
    for ro, co, ri, ci in _taps(x.shape, ksize, geo):
        total[:, ro, co, :] += x[:, ri, ci, :]
    total /= _window_counts(xp, x.shape, ksize, geo, x.dtype)
    return total


@_avg_pool.grad
def _(dy: Any, out: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    return _avg_pool_grad(dy, tuple(x._data.shape), ksize, strides, padding)


@op("avg_pool_grad")
def _avg_pool_grad(xp: Any, dy: Any, x_shape: tuple, ksize: tuple, strides: tuple,
                   padding: Any) -> Any:  # fmt: skip
    geo = _pool_geo(x_shape, ksize, strides, padding, "avg_pool_grad")
    if _blocks(ksize, strides, geo, dy.dtype):
        return _block_spread(xp, dy, x_shape, ksize)
    share = dy / _window_counts(xp, x_shape, ksize, geo, dy.dtype)
    dx = _empty_like_layout(xp, dy, tuple(x_shape), dy.dtype, 0)
    for ro, co, ri, ci in _taps(x_shape, ksize, geo):
        dx[:, ri, ci, :] += share[:, ro, co, :]
    return dx


@_avg_pool_grad.grad
def _(g: Any, out: Any, dy: Any, x_shape: tuple, ksize: tuple, strides: tuple,
      padding: Any) -> Any:  # fmt: skip
    return _avg_pool(g, ksize, strides, padding)


# --- public pooling -------------------------------------------------------------------------------


def _is_channels_first(x: Any, data_format: str | None, opname: str) -> bool:
    fmt = (data_format or "NHWC").upper()
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"{opname}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}.")
    return fmt == "NCHW"


def _pool(prim: Any, opname: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
          data_format: str | None) -> Any:  # fmt: skip
    x = _as_tensor(input)
    rank = x._data.ndim
    if rank == 3:  # [N, W, C]: pool over W as an image of height 1
        fmt = "NCW" if (data_format or "").upper() == "NCW" else "NWC"
        if fmt == "NCW":
            x = transpose(x, (0, 2, 1))
        k = (1,) + _k.ints(ksize, 1, "ksize", opname)
        s = (1,) + _k.ints(strides, 1, "strides", opname)
        y = prim(reshape(x, (x._data.shape[0], 1) + tuple(x._data.shape[1:])), k, s,
                 _k.padding_attr(padding))  # fmt: skip
        y = reshape(y, (y._data.shape[0],) + tuple(y._data.shape[2:]))
        return transpose(y, (0, 2, 1)) if fmt == "NCW" else y
    if rank != 4:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname} needs a rank-3 or rank-4 input, got shape {tuple(x._data.shape)}.",
        )
    nchw = _is_channels_first(x, data_format, opname)
    if nchw:
        x = transpose(x, (0, 2, 3, 1))
    y = prim(x, _k.ints(ksize, 2, "ksize", opname), _k.ints(strides, 2, "strides", opname),
             _k.padding_attr(padding))  # fmt: skip
    return transpose(y, (0, 3, 1, 2)) if nchw else y


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: str | None = None) -> Any:  # fmt: skip
    """The maximum of each `ksize` window of `input` [N, H, W, C].

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> tf.nn.max_pool2d(x, 2, 2, "VALID")[0, :, :, 0].numpy()
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    return _pool(_max_pool, "max_pool2d", input, ksize, strides, padding, data_format)


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: str | None = None) -> Any:  # fmt: skip
    """The mean of each `ksize` window (SAME padding averages only the real inputs, as TF)."""
    return _pool(_avg_pool, "avg_pool2d", input, ksize, strides, padding, data_format)


def max_pool(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str | None = None,  # noqa: A002
             name: str | None = None) -> Any:  # fmt: skip
    """`tf.nn.max_pool`: 1-D or 2-D max pooling, by the input's rank."""
    return _pool(_max_pool, "max_pool", input, ksize, strides, padding, data_format)


def avg_pool(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str | None = None,  # noqa: A002
             name: str | None = None) -> Any:  # fmt: skip
    """`tf.nn.avg_pool`: 1-D or 2-D average pooling, by the input's rank."""
    return _pool(_avg_pool, "avg_pool", input, ksize, strides, padding, data_format)


max_pool1d = max_pool
avg_pool1d = avg_pool
