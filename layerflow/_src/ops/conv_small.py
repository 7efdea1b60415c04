"""Stride-1 convolutions by row frames: the shifted-frame algorithm without its wasted rows,
its chunks of images shared between threads when the machine has free cores.

`conv_kernels`' shifted frames (see the section at its end) number the pixels of the padded
frames (HP x WP) of all images one after the other and let every frame pixel be an output:
tap (i, j) of output q reads frame pixel q + i*dh*WP + j*dw, one contiguous slice per tap. The
frame rows past the last output row (HP - OH of them) are computed and thrown away: LeNet's
second layer (14x14 -> 10x10, 5x5 valid) computes 196 frame pixels for 100 outputs.

Row frames. Each image's frame is stored in its own row of the buffer, followed by (KW-1)*dw
zeros, and its outputs are its OH*WP first positions only (the WP - OW columns past the last
output column are still computed and discarded, with a zero gradient): tap (i, j) reads
positions [off, off + OH*WP) of every image's row, one plain slice (NumPy copies it at memcpy
speed; an `as_strided` view of one flat buffer copied 2.5x slower). LeNet's second layer
computes 140 positions per 100 outputs instead of 196, its first (28x28 SAME, 32x32 frames)
896 instead of 1024: fewer patches to copy, fewer GEMM columns, fewer patch gradients to add.

Threads. The chunks are whole images (`cv.plan`'s, so a relu mask packs as the frames'
does). When `conv_threads.count` allows more than one thread (see `conv_threads`: the main
thread, a large convolution, free cores by `blas_threads`' policy, the budget), contiguous
runs of chunks go to that many threads, each with its own buffers, and BLAS is set to one
thread. The filter and bias gradients are kept per chunk and summed in chunk order,
so every result is the same, bit for bit, whatever the number of threads.

Measured (batch 256, one BLAS thread, CPU ms, forward / backward; 2-core machine with a load
average of 7-9 from other jobs, so +-10%): LeNet's 1->6 layer 2.0-2.5 / 3.5-3.8 by whole
frames, 2.0 / 3.2-3.7 by row frames (filter gradient only: its input is the data); its 6->16
layer 3.6-3.9 / 7.2-7.9 by whole frames, 3.0-3.1 / 6.9-7.3 by row frames. The GEMMs run at
45-50 GMAC/s there, so a layer is now mostly its GEMMs. `conv_kernels.flat_forward` and
`flat_backward` call `forward`/`backward` here when `applies(cv)`.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.backend import blas_threads
from layerflow._src.ops import conv_direct, conv_threads


def applies(cv: Any) -> bool:
    """Whether the row-frame algorithm runs `cv` (a `conv_kernels.Conv` that runs by shifted
    frames): chunks of whole images, and frames taller than the output (rows to save)."""
    (oh, _), _, strides, _ = cv.geo
    return (bool(cv.flat) and strides == (1, 1) and cv.hp > oh and bool(cv.plan)
            and all(r0 == 0 and r1 == oh for _, _, r0, r1 in cv.plan))  # fmt: skip


def _cf(xp: Any, a: Any) -> Any:
    """`conv_kernels.cf`: the (C, N, H, W) contiguous form of an NHWC array."""
    return xp.ascontiguousarray(a.transpose(3, 0, 1, 2))


def _filter_groups(xp: Any, w: Any, cv: Any) -> Any:
    """`conv_kernels._filter_groups`: the filter as (groups, K, Mg)."""
    return xp.ascontiguousarray(w.reshape(cv.k, cv.g, cv.m // cv.g).transpose(1, 0, 2))


def _chunks(cv: Any) -> list[tuple[int, int]]:
    """The images of each chunk: `cv.plan`'s (so a relu mask packs as the frames' does)."""
    return [(n0, n1) for n0, n1, _, _ in cv.plan]


def _images(cv: Any) -> int:
    return max(n1 - n0 for n0, n1 in _chunks(cv))


def _geometry(cv: Any) -> tuple[int, int, int, list[int]]:
    """(positions per image, frame pixels per image, spill past a frame, tap offsets)."""
    dh, dw = cv.geo[3]
    spill = (cv.kw - 1) * dw
    offs = [i * dh * cv.wp + j * dw for i in range(cv.kh) for j in range(cv.kw)]
    return cv.geo[0][0] * cv.wp, cv.hp * cv.wp, spill, offs


def _fill(xp: Any, x5: Any, cv: Any, n0: int, n1: int, fbuf: Any, f: int) -> None:
    """Images [n0, n1) in their padded frames in `fbuf` (groups, Cg, images, frame pixels and
    spill), zeroed once: the padding and the spill are never written."""
    (t, _), (left, _) = cv.geo[1]
    inner = fbuf[:, :, : n1 - n0, :f].reshape(cv.g, cv.cg, n1 - n0, cv.hp, cv.wp)
    inner[..., t : t + cv.h, left : left + cv.w] = x5[:, :, n0:n1]


def _cols(fbuf: Any, cv: Any, nb: int, geo: tuple, cbuf: Any) -> Any:
    """The chunk's patches (groups, KH*KW*Cg, images * positions): one copy per tap, of the
    positions' slice of every frame (a plain slice: NumPy copies it at memcpy speed)."""
    length, _, _, offs = geo
    cols = cbuf[: cv.g * cv.k * nb * length].reshape(cv.g, cv.kh * cv.kw, cv.cg, nb, length)
    for t, off in enumerate(offs):
        cols[:, t] = fbuf[:, :, :nb, off : off + length]
    return cols.reshape(cv.g, cv.k, nb * length)


def _valid(a: Any, cv: Any, nb: int) -> Any:
    """The outputs among a chunk's positions: (..., nb * OH * WP) -> (..., nb, OH, OW) view."""
    (oh, ow) = cv.geo[0]
    return a.reshape(*a.shape[:-1], nb, oh, cv.wp)[..., :ow]


def _shares(xp: Any, cv: Any) -> list[list[int]]:
    """The chunks (indices) each thread runs: all in this thread, or, when the machine has
    free cores (`conv_threads.count`: `blas_threads`' view of the load, the budget for all
    threads' buffers together) and this is the main thread, contiguous runs of chunks for up
    to that many threads. BLAS is then set to one thread: each thread's GEMMs are its own."""
    n = len(cv.plan)
    length, f, spill, _ = _geometry(cv)
    # One thread's buffers, the backward's (frames, patches, dz, input-gradient frames), in
    # float64 at most.
    per_thread = 8 * _images(cv) * (2 * cv.c * (f + spill) + cv.g * cv.k * length + cv.m * length)
    threads = conv_threads.count(xp, n, (cv.m, cv.n * length, cv.k), per_thread, cv.budget)
    if threads < 2:
        return [list(range(n))]
    bounds = [round(i * n / threads) for i in range(threads + 1)]
    return [list(range(bounds[i], bounds[i + 1])) for i in range(threads)]


def _run(shares: list[list[int]], work: Any) -> None:
    """`work(share)` for every share: the first in this thread, the others in the pool's."""
    conv_threads.run(len(shares), lambda t: work(shares[t]))


def forward(xp: Any, x: Any, w: Any, cv: Any, bias: Any, relu: bool,
            keep: bool) -> tuple[Any, Any, Any]:  # fmt: skip
    """`conv_kernels.conv_forward` by row frames: (NHWC view of the channels-first output,
    None, the relu mask when `keep` and `relu`). Few channels with 5-wide filters run by
    `conv_direct` instead."""
    if conv_direct.applies(xp, cv, x.dtype):
        return conv_direct.forward(xp, x, w, cv, bias, relu, keep)
    (oh, ow) = cv.geo[0]
    g, mg = cv.g, cv.m // cv.g
    geo = _geometry(cv)
    length, f, spill, _ = geo
    nb_max = _images(cv)
    x5 = _cf(xp, x).reshape(g, cv.cg, cv.n, cv.h, cv.w)
    wt = _filter_groups(xp, w, cv).transpose(0, 2, 1)  # (g, Mg, K), read transposed
    y = xp.empty((g, mg, cv.n, oh, ow), dtype=x.dtype)
    b = None if bias is None else bias.reshape(g, mg, 1, 1, 1)
    chunks = _chunks(cv)
    masks: list[Any] = [None] * len(chunks)

    def work(share: list[int]) -> None:
        fbuf = xp.zeros((g, cv.cg, nb_max, f + spill), dtype=x.dtype)
        cbuf = xp.empty(g * cv.k * nb_max * length, dtype=x.dtype)
        obuf = xp.empty(cv.m * nb_max * length, dtype=x.dtype)
        for i in share:
            n0, n1 = chunks[i]
            nb = n1 - n0
            _fill(xp, x5, cv, n0, n1, fbuf, f)
            cols = _cols(fbuf, cv, nb, geo, cbuf)
            ob = obuf[: cv.m * nb * length].reshape(g, mg, nb * length)
            xp.matmul(wt, cols, out=ob)
            out = y[:, :, n0:n1]
            if b is not None:
                xp.add(_valid(ob, cv, nb), b, out=out)
            else:
                out[...] = _valid(ob, cv, nb)
            if relu:
                xp.maximum(out, 0, out=out)
                if keep:
                    masks[i] = xp.packbits((out > 0).ravel())

    shares = _shares(xp, cv)
    if len(shares) == 1:
        blas_threads.gemm(cv.m, nb_max * length, cv.k)  # the chunks' GEMMs
    _run(shares, work)
    mask = masks if keep and relu else None
    return y.reshape(cv.m, cv.n, oh, ow).transpose(1, 2, 3, 0), None, mask


def backward(xp: Any, x: Any, w: Any, dy: Any, cv: Any, need_x: bool, need_w: bool,
             need_b: bool, mask: Any) -> tuple[Any, Any, Any]:  # fmt: skip
    """`conv_kernels.conv_backward` by row frames: the patch gradients are added back to the
    frames one slice of each frame per tap; each frame's interior is its image's input
    gradient. `mask` is the forward's relu mask (packed per chunk of `cv.plan`), or None. The
    filter and bias gradients are summed over the chunks in their order, so the result does
    not depend on how many threads ran them. Few channels with 5-wide filters run by
    `conv_direct` instead: the input gradient always, the filter gradient (and the bias's, dz
    summed) where `conv_direct.filter_applies`."""
    if conv_direct.applies(xp, cv, dy.dtype):
        dz = _dz(xp, dy, cv, mask)
        dx = conv_direct.input_grad(xp, w, dz, cv) if need_x else None
        if conv_direct.filter_applies(cv):
            return (dx, conv_direct.filter_grad(xp, x, dz, cv) if need_w else None,
                    dz.sum(axis=(1, 2, 3)) if need_b else None)  # fmt: skip
        if not (need_w or need_b):
            return dx, None, None
        return (dx,) + _backward(xp, x, w, dy, cv, False, need_w, need_b, mask)[1:]
    return _backward(xp, x, w, dy, cv, need_x, need_w, need_b, mask)


def _backward(xp: Any, x: Any, w: Any, dy: Any, cv: Any, need_x: bool, need_w: bool,
              need_b: bool, mask: Any) -> tuple[Any, Any, Any]:  # fmt: skip
    """`backward` by row frames."""
    (oh, ow) = cv.geo[0]
    (t, _), (left, _) = cv.geo[1]
    g, mg, k = cv.g, cv.m // cv.g, cv.k
    geo = _geometry(cv)
    length, f, spill, offs = geo
    nb_max = _images(cv)
    dyt = dy.transpose(3, 0, 1, 2)  # (M, N, OH, OW) view
    w3 = _filter_groups(xp, w, cv) if need_x else None  # (g, K, Mg)
    x5 = _cf(xp, x).reshape(g, cv.cg, cv.n, cv.h, cv.w) if need_w else None
    dx5 = xp.empty((g, cv.cg, cv.n, cv.h, cv.w), dtype=dy.dtype) if need_x else None
    chunks = _chunks(cv)
    dws: list[Any] = [None] * len(chunks)
    dbs: list[Any] = [None] * len(chunks)

    def work(share: list[int]) -> None:
        # The discarded positions keep a zero gradient: written once, never again (every
        # chunk's positions lie at the same offsets modulo WP).
        dz_buf = xp.zeros(cv.m * nb_max * length, dtype=dy.dtype)
        fbuf = xp.zeros((g, cv.cg, nb_max, f + spill), dtype=dy.dtype) if need_w else None
        cbuf = xp.empty(g * k * nb_max * length, dtype=dy.dtype)
        dxf = xp.empty((g, cv.cg, nb_max, f + spill), dtype=dy.dtype) if need_x else None
        for i in share:
            n0, n1 = chunks[i]
            nb = n1 - n0
            dz = dz_buf[: cv.m * nb * length].reshape(cv.m, nb * length)
            dzv = _valid(dz, cv, nb)
            if mask is not None:
                bits = xp.unpackbits(mask[i])[: cv.m * nb * oh * ow].view(bool)
                xp.multiply(dyt[:, n0:n1], bits.reshape(cv.m, nb, oh, ow), out=dzv)
            else:
                dzv[...] = dyt[:, n0:n1]
            dz3 = dz.reshape(g, mg, nb * length)
            if need_b:
                dbs[i] = dz3.sum(axis=2)
            if need_w:
                _fill(xp, x5, cv, n0, n1, fbuf, f)
                cols = _cols(fbuf, cv, nb, geo, cbuf)
                dws[i] = xp.matmul(cols, dz3.transpose(0, 2, 1))
            if need_x:
                dxf[:, :, :nb] = 0
                dcols = cbuf[: g * k * nb * length].reshape(g, k, nb * length)
                xp.matmul(w3, dz3, out=dcols)
                d5 = dcols.reshape(g, cv.kh * cv.kw, cv.cg, nb, length)
                for tp, off in enumerate(offs):
                    dxf[:, :, :nb, off : off + length] += d5[:, tp]
                frames = dxf[:, :, :nb, :f].reshape(g, cv.cg, nb, cv.hp, cv.wp)
                dx5[:, :, n0:n1] = frames[..., t : t + cv.h, left : left + cv.w]

    shares = _shares(xp, cv)
    if len(shares) == 1:
        blas_threads.gemm(g * k, mg, nb_max * length)  # the chunks' GEMMs
    _run(shares, work)
    dx = dx5.reshape(cv.c, cv.n, cv.h, cv.w).transpose(1, 2, 3, 0) if need_x else None
    dw = db = None
    if need_w:
        dw = xp.zeros((g, k, mg), dtype=dy.dtype)
        for part in dws:
            dw += part
        dw = dw.transpose(1, 0, 2).reshape(cv.kh, cv.kw, cv.cg, cv.m)
    if need_b:
        db = xp.zeros((g, mg), dtype=dy.dtype)
        for part in dbs:
            db += part
        db = db.reshape(cv.m)
    return dx, dw, db


def _dz(xp: Any, dy: Any, cv: Any, mask: Any) -> Any:
    """dz (M, N, OH, OW): dy, times the forward's relu mask (packed per chunk of `cv.plan`)."""
    dyt = dy.transpose(3, 0, 1, 2)
    if mask is None:
        return dyt
    (oh, ow) = cv.geo[0]
    dz = xp.empty(dyt.shape, dtype=dy.dtype)
    for i, (n0, n1) in enumerate(_chunks(cv)):
        bits = xp.unpackbits(mask[i])[: cv.m * (n1 - n0) * oh * ow].view(bool)
        xp.multiply(dyt[:, n0:n1], bits.reshape(cv.m, n1 - n0, oh, ow), out=dz[:, n0:n1])
    return dz
