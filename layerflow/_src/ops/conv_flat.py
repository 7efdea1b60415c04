"""The shifted-frame convolution algorithm (stride 1), picked by `conv_kernels.Conv` for
layers whose padded frame is close to their output (see the notes below and `conv_kernels`).
Its chunks run on several threads when the machine has free cores (`conv_threads`): bands of
rows of one image, which add into the same input-gradient frame, stay in one thread.

Compiled kernels. With numba (`backend/jit`) and NumPy arrays of one float type, a chunk's
passes outside its GEMMs are `frames_jit`'s: patches gathered straight from the input (no
frame buffer), the bias, relu and packed mask in one pass, dz and the bias sums in one pass,
and the input gradient's tap sums written straight to dx (only the taps' tail carried from a
band to the next). They release the GIL, so they run side by side on the chunk threads.
Results are the NumPy path's bit for bit, except the bias gradient (summed in another order).
One thread, CPU ms forward / backward, NumPy path -> compiled, alternating in one process (a
224x224x64 -> 64 layer at a batch of 4: 247 / 546 -> 219 / 448, GEMMs alone ~160 / ~330).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import blas_threads, jit
from layerflow._src.ops import conv_small, conv_threads, frames_jit
from layerflow._src.ops.conv_geometry import (
    cf,
    chunk_dz,
    filter_groups,
    images_of,
)

# --- the shifted-frame algorithm (stride 1) -------------------------------------------------------
#
# With stride 1, output pixel (oh, ow) of an image reads, for tap (i, j), the padded input at
# (oh + i*dh, ow + j*dw). Number the pixels of the padded frame (HP x WP) of every image one
# after the other: output q = n*HP*WP + oh*WP + ow reads frame pixel q + i*dh*WP + j*dw. So each
# tap's rows of the patch matrix are ONE contiguous slice of the flat frames, shifted by the
# tap's offset (a memcpy, not a loop over output rows), and in the backward pass the patch
# gradients go back to the frames the same way (one contiguous add per tap: no col2im loop).
# The price: the GEMMs also compute the frame pixels that are no output (rows >= OH, columns
# >= OW), HP*WP / (OH*OW) - 1 of the work, so `Conv` picks this algorithm only up to
# FLAT_WASTE. Those columns are discarded in the forward pass and carry a zero gradient in the
# backward pass (they read real inputs, so a non-finite input there can make the filter
# gradient NaN where im2col would not). The frames are built chunk by chunk (whole images,
# or one image for bands of rows), so no padded copy of the whole input is made.


def _flat_geometry(cv: Any) -> tuple[int, int, list[int]]:
    """(frame pixels per image, tail, offset of each tap in the flat frames)."""
    dh, dw = cv.geo[3]
    tail = (cv.kh - 1) * dh * cv.wp + (cv.kw - 1) * dw
    offs = [i * dh * cv.wp + j * dw for i in range(cv.kh) for j in range(cv.kw)]
    return cv.hp * cv.wp, tail, offs


def _flat_span(cv: Any, chunk: tuple) -> tuple[int, int, bool]:
    """(first frame pixel, pixels) a chunk's outputs span, and whether it is whole images."""
    n0, n1, r0, r1 = chunk
    whole = r0 == 0 and r1 == cv.geo[0][0]
    if whole:
        return 0, (n1 - n0) * cv.hp * cv.wp, True
    return r0 * cv.wp, (r1 - r0) * cv.wp, False


def _valid(a: Any, cv: Any, chunk: tuple, whole: bool) -> Any:
    """The outputs among a chunk's frame pixels: (..., p) -> (..., images, rows, OW) view."""
    n0, n1, r0, r1 = chunk
    (oh, ow) = cv.geo[0]
    if whole:
        return a.reshape(*a.shape[:-1], n1 - n0, cv.hp, cv.wp)[..., :oh, :ow]
    return a.reshape(*a.shape[:-1], 1, r1 - r0, cv.wp)[..., :ow]


def _frames(cv: Any, n_images: int, tail: int) -> tuple:
    return (cv.g, cv.cg, n_images * cv.hp * cv.wp + tail)


def _fill_frames(x5: Any, cv: Any, n0: int, n1: int, fbuf: Any, tail: int) -> Any:
    """Images [n0, n1) of `x5` (groups, Cg, N, H, W) in their padded frames, flat, in `fbuf`
    (zeroed once: the padding is never written); the tail past the last frame is zeroed."""
    (t, _), (left, _) = cv.geo[1]
    f = cv.hp * cv.wp
    fr = fbuf[..., : (n1 - n0) * f + tail]
    inner = fr[..., : (n1 - n0) * f].reshape(cv.g, cv.cg, n1 - n0, cv.hp, cv.wp)
    inner[..., t : t + cv.h, left : left + cv.w] = x5[:, :, n0:n1]
    fr[..., (n1 - n0) * f :] = 0  # a larger previous chunk left its pixels there
    return fr


def _jit_cols(x5: Any, cv: Any, chunk: tuple, start: int, p: int, offs: Any, cbuf: Any) -> Any:
    """`_flat_cols` of the frames `_fill_frames` would hold, straight from `x5` (compiled)."""
    (t, _), (left, _) = cv.geo[1]
    cols = cbuf[: cv.g * cv.k * p].reshape(cv.g, cv.kh * cv.kw, cv.cg, p)
    frames_jit.frame_cols(x5, chunk[0], chunk[1] - chunk[0], start, offs, cv.hp * cv.wp, cv.wp,
                          t, left, cols)  # fmt: skip
    return cols.reshape(cv.g, cv.k, p)


def _flat_cols(fr: Any, cv: Any, start: int, p: int, offs: list, cbuf: Any) -> Any:
    """The chunk's patches (groups, KH*KW*Cg, p): one contiguous slice of the frames per tap."""
    cols = cbuf[: cv.g * cv.k * p].reshape(cv.g, cv.kh * cv.kw, cv.cg, p)
    for t, off in enumerate(offs):
        cols[:, t] = fr[..., start + off : start + off + p]
    return cols.reshape(cv.g, cv.k, p)


def _max_span(cv: Any) -> int:
    return max(_flat_span(cv, c)[1] for c in cv.plan)


_NO_BITS = np.zeros(1, np.uint8)


def _fast(xp: Any, *arrays: Any) -> bool:
    """Whether the compiled kernels (`frames_jit`) run: NumPy arrays of one float type."""
    if xp is not np or not jit.enabled():
        return False
    dt = arrays[0].dtype
    return dt in (np.float32, np.float64) and all(a is None or a.dtype == dt for a in arrays)


def flat_forward(xp: Any, x: Any, w: Any, cv: Any, bias: Any, relu: bool,
                 keep: bool) -> tuple[Any, Any, Any]:  # fmt: skip
    """`conv_forward` by shifted frames (see above); the patches are never kept."""
    if conv_small.applies(cv):  # whole images: by row frames, no wasted rows (conv_small.py)
        return conv_small.forward(xp, x, w, cv, bias, relu, keep)
    (oh, ow) = cv.geo[0]
    g, mg = cv.g, cv.m // cv.g
    f, tail, offs = _flat_geometry(cv)
    x5 = cf(xp, x).reshape(g, cv.cg, cv.n, cv.h, cv.w)
    wt = filter_groups(xp, w, cv).transpose(0, 2, 1)  # (g, Mg, K): BLAS reads it transposed
    y = xp.empty((g, mg, cv.n * oh * ow), dtype=x.dtype)
    b = None if bias is None else bias.reshape(g, mg, 1, 1, 1)
    span = _max_span(cv)
    mask = [None] * len(cv.plan) if keep and relu else None
    fast = _fast(xp, x, w, bias)
    if fast:  # epilogue's bias: any 1-element array of the type when there is none
        offs64 = np.asarray(offs, np.int64)
        y2 = y.reshape(cv.m, cv.n * oh * ow)
        bias1 = np.zeros(1, x.dtype) if bias is None else np.ascontiguousarray(bias).ravel()

    def buffers() -> tuple:
        """One thread's frames (none when compiled), patches and GEMM output."""
        return (None if fast else xp.zeros(_frames(cv, images_of(cv), tail), dtype=x.dtype),
                xp.empty(g * cv.k * span, dtype=x.dtype),
                xp.empty(cv.m * span, dtype=x.dtype))  # fmt: skip

    mine = [buffers()]
    threads = conv_threads.count(xp, len(conv_threads.units(cv.plan)),
                                 (cv.m, cv.n * cv.hp * cv.wp, cv.k),
                                 sum(a.nbytes for a in mine[0] if a is not None), cv.budget,
                                 wide="frames")  # fmt: skip
    mine += [buffers() for _ in range(threads - 1)]
    shares = conv_threads.deal(cv.plan, threads)

    def work(t: int) -> None:
        fbuf, cbuf, obuf = mine[t]
        built = None
        for i in shares[t]:
            chunk = cv.plan[i]
            n0, n1, r0, r1 = chunk
            start, p, whole = _flat_span(cv, chunk)
            if fast:
                cols = _jit_cols(x5, cv, chunk, start, p, offs64, cbuf)
            else:
                if built != (n0, n1):
                    fr, built = _fill_frames(x5, cv, n0, n1, fbuf, tail), (n0, n1)
                cols = _flat_cols(fr, cv, start, p, offs, cbuf)
            ob = obuf[: cv.m * p].reshape(g, mg, p)
            if threads == 1:
                blas_threads.gemm(cv.m, p, cv.k)
            xp.matmul(wt, cols, out=ob)
            c0 = cv.col0(chunk)
            out = y[:, :, c0 : c0 + cv.cols_of(chunk)]
            out5 = out.reshape(g, mg, n1 - n0, r1 - r0, ow)
            if fast:  # bias, relu and mask bits in one pass (frames_jit.epilogue)
                bits = _NO_BITS
                if mask is not None:
                    bits = mask[i] = np.empty(-(-cv.m * cv.cols_of(chunk) // 8), np.uint8)
                frames_jit.epilogue(ob.reshape(cv.m, p), cv.hp * cv.wp if whole else 0, cv.wp,
                                    bias1, bias is not None, relu, y2, c0, n1 - n0, r1 - r0,
                                    ow, bits, mask is not None)  # fmt: skip
                continue
            if b is not None:
                xp.add(_valid(ob, cv, chunk, whole), b, out=out5)
            else:
                out5[...] = _valid(ob, cv, chunk, whole)
            if relu:
                xp.maximum(out, 0, out=out)
                if mask is not None:
                    mask[i] = xp.packbits((out > 0).ravel())

    conv_threads.run(threads, work)
    return y.reshape(cv.m, cv.n, oh, ow).transpose(1, 2, 3, 0), None, mask


def flat_backward(xp: Any, x: Any, w: Any, dy: Any, cv: Any, need_x: bool, need_w: bool,
                  need_b: bool, mask: Any) -> tuple[Any, Any, Any]:  # fmt: skip
    """`conv_backward` by shifted frames: the patch gradients are added back to the frames
    one contiguous slice per tap, and each image's frame interior is its input gradient."""
    if conv_small.applies(cv):
        return conv_small.backward(xp, x, w, dy, cv, need_x, need_w, need_b, mask)
    g, mg, k = cv.g, cv.m // cv.g, cv.k
    _, tail, _ = _flat_geometry(cv)
    dyt = dy.transpose(3, 0, 1, 2)  # (M, N, OH, OW) view
    span, nimg = _max_span(cv), images_of(cv)
    w3 = filter_groups(xp, w, cv) if need_x else None  # (g, K, Mg)
    x5 = cf(xp, x).reshape(g, cv.cg, cv.n, cv.h, cv.w) if need_w else None
    dx5 = xp.empty((g, cv.cg, cv.n, cv.h, cv.w), dtype=dy.dtype) if need_x else None
    dw = xp.empty((g, k, mg), dtype=dy.dtype) if need_w else None
    db = xp.zeros((g, mg), dtype=dy.dtype) if need_b else None
    fast = _fast(xp, dy, x, w)

    def buffers() -> dict:
        """One thread's dz, frames, patches (and patch gradients), and input-gradient frames;
        compiled, no frames (`frame_cols`) and of the input gradient's only the tail of frame
        pixels that the next band of an image adds to (`dx_taps`). The frame pixels that are
        no output keep a zero gradient in dz: written once."""
        frames = (g, cv.cg, tail) if fast else _frames(cv, nimg, tail)
        return {"dz": xp.zeros(cv.m * span, dtype=dy.dtype),
                "fbuf": xp.zeros(frames, dtype=dy.dtype) if need_w and not fast else None,
                "cbuf": xp.empty(g * k * span, dtype=dy.dtype) if need_w or need_x else None,
                "dxf": xp.zeros(frames, dtype=dy.dtype) if need_x else None,
                "part": [], "sums": xp.empty(cv.m, dtype=dy.dtype)}  # fmt: skip

    mine = [buffers()]
    per_thread = sum(a.nbytes for a in mine[0].values() if hasattr(a, "nbytes"))
    per_thread += dw.nbytes if need_w else 0
    threads = conv_threads.count(
        xp,
        len(conv_threads.units(cv.plan)),
        (g * k, cv.n * cv.hp * cv.wp, mg),
        per_thread,
        cv.budget,
        wide="frames",
    )
    mine += [buffers() for _ in range(threads - 1)]
    shares = conv_threads.deal(cv.plan, threads)
    turns = conv_threads.Turns() if threads > 1 and (need_w or need_b) else None
    args = (xp, cv, dyt, mask, x5, w3, dw, db, dx5, turns, threads, fast)

    def work(t: int) -> None:
        own, built = mine[t], None
        for i in shares[t]:
            built = _backward_chunk(*args, i, own, built)

    conv_threads.run(threads, conv_threads.guarded(turns, work))
    dx = dx5.reshape(cv.c, cv.n, cv.h, cv.w).transpose(1, 2, 3, 0) if need_x else None
    if need_w:
        dw = dw.transpose(1, 0, 2).reshape(cv.kh, cv.kw, cv.cg, cv.m)
    if need_b:
        db = db.reshape(cv.m)
    return dx, dw, db


def _backward_chunk(xp: Any, cv: Any, dyt: Any, mask: Any, x5: Any, w3: Any, dw: Any, db: Any,
                    dx5: Any, turns: Any, threads: int, fast: bool, i: int, own: dict,
                    built: Any) -> Any:  # fmt: skip
    """`flat_backward`'s work on chunk i with one thread's buffers `own`, whose frames hold
    the images `built`; returns the images they hold after."""
    (t, _), (left, _) = cv.geo[1]
    g, mg, k = cv.g, cv.m // cv.g, cv.k
    f, tail, offs = _flat_geometry(cv)
    chunk = cv.plan[i]
    n0, n1, r0, r1 = chunk
    start, p, whole = _flat_span(cv, chunk)
    dz = own["dz"][: cv.m * p].reshape(cv.m, p)
    sums = None
    if fast and dyt.flags.c_contiguous:  # dz and the bias sums in one pass (frames_jit)
        if mask is not None and mask[i].size != -(-cv.m * cv.cols_of(chunk) // 8):
            # the kernel reads the bits unchecked: a mask of another plan must not reach it
            raise ValueError(
                f"conv2d backward: the relu mask of chunk {i} has {mask[i].size} bytes, "
                f"this plan's chunk needs {-(-cv.m * cv.cols_of(chunk) // 8)}: the forward "
                "ran with other shapes or tuning; run the forward again."
            )
        sums = own["sums"] if db is not None else None
        frames_jit.dz_mask(dyt, n0, r0, n1 - n0, r1 - r0,
                           _NO_BITS if mask is None else mask[i], mask is not None,
                           dz, cv.hp * cv.wp if whole else 0, cv.wp, own["sums"],
                           sums is not None)  # fmt: skip
    else:
        chunk_dz(xp, dyt, mask, i, cv, chunk, _valid(dz, cv, chunk, whole))
    dz3 = dz.reshape(g, mg, p)
    if dw is not None or db is not None:
        cols = None
        if dw is not None and fast:
            cols = _jit_cols(x5, cv, chunk, start, p, np.asarray(offs, np.int64), own["cbuf"])
        elif dw is not None:
            if built != (n0, n1):
                _fill_frames(x5, cv, n0, n1, own["fbuf"], tail)
                built = (n0, n1)
            fr = own["fbuf"][..., : (n1 - n0) * f + tail]
            cols = _flat_cols(fr, cv, start, p, offs, own["cbuf"])
            if threads == 1:
                blas_threads.gemm(g * k, mg, p)
        conv_threads.add_grads(xp, turns, i, cols, dz3, dw, db, own["part"],
                               None if sums is None else sums.reshape(g, mg))  # fmt: skip
    if dx5 is None:
        return built
    dxf = own["dxf"]
    if start == 0 and not fast:  # a chunk's first rows: its frames start from zero
        dxf[..., : (n1 - n0) * f + tail] = 0
    dcols = own["cbuf"][: g * k * p].reshape(g, k, p)
    if threads == 1:
        blas_threads.gemm(g * k, p, mg)
    xp.matmul(w3, dz3, out=dcols)
    d4 = dcols.reshape(g, cv.kh * cv.kw, cv.cg, p)
    if fast:  # the tap sums go straight to dx; only the tail waits for the next band
        last = whole or r1 == cv.geo[0][0]
        nfin = min(p + tail, (n1 - n0) * f - start) if last else p
        frames_jit.dx_taps(d4, np.asarray(offs, np.int64), dxf, start > 0, dx5, n0, start,
                           nfin, f, cv.wp, t, left)  # fmt: skip
        return built
    for tp, off in enumerate(offs):
        dxf[..., start + off : start + off + p] += d4[:, tp]
    if whole or r1 == cv.geo[0][0]:  # the chunk's images are complete
        frames = dxf[..., : (n1 - n0) * f].reshape(g, cv.cg, n1 - n0, cv.hp, cv.wp)
        dx5[:, :, n0:n1] = frames[..., t : t + cv.h, left : left + cv.w]
    return built
