"""Array kernels of max pooling: separable row and column passes over phase frames (the
forward, and the selection that is the gradient's gradient), one scatter-add (the gradient).

The forward keeps, per pass, the number of the tap holding the first maximum (`_Codes`, one
byte per value of the passes); the gradient turns each output's codes into the flat index of
its input (window origin + row code * row length + column code) and adds dy there in ONE
`add.at` (measured on GoogLeNet's and AlexNet's pools, 30-45% faster than one masked add per
tap of either pass). `bench/pool_step.py` compares the kernels with the tap loop they replaced
(`pool_ops._tap_max_and_arg`, still the fallback for windows whose maximum is NaN or the lowest
value). The layout rules (channels-first behind an NHWC view, as the convs hand on) are
`pool_ops`'s: outputs are laid out as inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.ops import conv_kernels as _k

# Each block of planes (frames, passes, codes and scratch) takes about this much, so
# that a pass's taps re-read the block from cache.
BLOCK_BYTES = 2 << 20


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


def _arg_dtype(n_taps: int) -> Any:
    """The smallest unsigned dtype that numbers a window's taps and keeps its top value free
    (the "no tap yet" mark)."""
    return np.uint8 if n_taps < 255 else np.uint16 if n_taps < 65535 else np.uint32


def _cf_layout(a: Any) -> bool:
    return a.ndim == 4 and a.transpose(3, 0, 1, 2).flags.c_contiguous


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
# OHF = OH + (KH - 1) // SH and OWF likewise (fewer along a stride-1 axis: `_frame_size`).
# Tap j of the row pass is then frame (r, j % SW) shifted by j // SW positions, and tap i of
# the column pass is the row pass's result for rows of phase i % SH shifted by i // SH rows:
# each output's window, in flat positions that also cover its own row's and plane's end,
# where the extra OHF - OH rows and OWF - OW columns of results are dropped.


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
        pads = geo[1]
        self.ohf = _frame_size(self.oh, self.h, self.kh, self.sh, pads[0])
        self.owf = _frame_size(self.ow, self.w, self.kw, self.sw, pads[1])
        self.per = self.ohf * self.owf * self.u
        self.rs, self.cs = min(self.sh, self.kh), min(self.sw, self.kw)
        # How far past a block's end the row and column taps read (filled, never kept).
        self.fslack = (self.kw - 1) // self.sw * self.u
        self.rslack = (self.kh - 1) // self.sh * self.owf * self.u

    def blocks(self, itemsize: int, grad: bool = False) -> list[tuple[int, int]]:
        """Blocks of planes whose arrays take about BLOCK_BYTES: the passes' frames, results,
        codes and scratch, or the gradient's codes, offsets, indices, dy and dx."""
        if grad:
            per = self.per * (self.rs + 12 + 2 * itemsize + 16 + self.sh * self.sw * itemsize)
        else:
            per = self.per * (self.rs * self.cs * itemsize + (self.rs + 1) * (itemsize + 1) + 1)
        step = max(1, BLOCK_BYTES // per)
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


def _frame_size(out: int, size: int, k: int, s: int, pads: tuple) -> int:
    """Frame rows (or columns) per plane: OUT + (K - 1) // S, each window's own; with stride 1,
    consecutive planes may share their padding (a window that runs past its plane's padding
    reads the next plane's, never its values: measured on GoogLeNet's 6x6 pools, 7 x 7
    frames instead of 8 x 8 save a fifth of the passes)."""
    own = out + (k - 1) // s
    if s == 1 and min(pads) <= k - 1:
        return min(own, max(out, size + max(pads)))
    return own


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
    blocks = fr.blocks(dy.dtype.itemsize, grad=True)
    pb, u, hwu = blocks[0][1], fr.u, fr.h * fr.w * fr.u
    m = pb * fr.per
    # Offsets are summed in int32 (twice as fast as int64), relative to the block's first
    # plane, on the frame (flat): the window origin of each position, plus the row code times
    # the row length, plus the column code; the outputs' are then cast to the int64 indices
    # add.at takes.
    it = np.int32 if pb * hwu < 2**31 else np.int64
    origin = (((xp.arange(fr.ohf, dtype=it) * fr.sh - fr.top) * (fr.w * u))[:, None, None]
              + ((xp.arange(fr.owf, dtype=it) * fr.sw - fr.left) * u)[:, None]
              + xp.arange(u, dtype=it)).reshape(-1)  # fmt: skip
    origin = (xp.arange(pb, dtype=it) * hwu)[:, None] + origin
    off, off2 = xp.empty(m, it), xp.empty(m, it)
    idx = xp.empty((pb, fr.oh, fr.ow, u), np.int64)
    jf = tmp = None
    if codes.cols is not None:
        jf, tmp = xp.empty(m, codes.cols.dtype), xp.empty(m, codes.cols.dtype)
    for p0, p1 in blocks:
        pb, n, o = p1 - p0, (p1 - p0) * fr.per, p0 * fr.per
        ar = None if codes.rows is None else codes.rows[o : o + n]
        jv = _column_codes(xp, fr, codes, ar, o, n, jf, tmp)
        o2 = off[:n]
        if ar is None:
            o2[...] = origin.reshape(-1)[:n]
        else:
            o2[...] = ar
            o2 *= it(fr.w * u)
            o2 += origin.reshape(-1)[:n]
        if jv is not None:
            off2[:n] = jv
            if u > 1:
                off2[:n] *= it(u)
            o2 += off2[:n]
        ib = idx[:pb]
        ib[...] = fr.frame(o2, pb)[:, : fr.oh, : fr.ow]
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
