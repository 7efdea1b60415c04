"""Array kernels of convolution and pooling: geometry, and convolution in bounded memory.

Layout. Every convolution works on the channels-first form (C, N, H, W) of its NHWC input and
writes a channels-first output handed on as an NHWC view, so the bias, the activation, the next
pool and the next convolution all read whole rows (`cf` is free on such a view).

Algorithm. The output columns (one per output pixel, N * OH * OW of them) are cut into chunks:
whole images when one image's patches fit the budget, else bands of output rows of one image.
For each chunk the patches (KH*KW*Cg rows per group) are gathered into ONE reused buffer, one
strided copy per kernel tap, with the padding clipped away (no padded copy of the input, no
zeros materialised for strides or dilations), and ONE batched GEMM (groups x (Mg, K) @ (K, P))
writes the chunk's slab of the output in place, where the bias and relu are applied while the
slab is still in cache. A 1x1 stride-1 unpadded convolution needs no patches at all: its
"patch matrix" is the input itself, a plain GEMM. The backward pass walks the same chunks:
dz = dy (times the relu mask) is copied per chunk, the filter gradient accumulates
patches @ dz^T, the input gradient scatters W @ dz back tap by tap (col2im), the bias gradient
sums dz; nothing proportional to N * OH * OW * KH * KW is ever allocated.

Channels-last gathering. A stride-1 layer with many channels on a small image (AlexNet's and
GoogLeNet's 12x12 and 6x6 layers) copies its taps in runs of OW floats. `conv_rows` instead
lays an input that is not channels-first already into zero-bordered channels-last frames and
gathers one tap row of KW * C consecutive floats per copy; and when it has no more filters
than input channels, its input gradient is the convolution of dz's frames with the flipped
filter, gathered the same way, with no col2im (see `conv_rows`, and `Patches` for the rule).

Choice per shape. Stride-1 convolutions whose padded frame is at most FLAT_WASTE times their
output and whose wasted GEMM work is small beside the patch copies it saves (FLAT_EXTRA: LeNet's
layers, VGG's and ResNet's first 3x3 stages; not the many-filter layers on small images) run by
shifted frames instead (`conv_flat`): each tap's patch rows are one contiguous
slice of the padded images, and the input gradient is added back the same way, with no
per-row col2im loop; measured on LeNet's first layer, forward and backward take 5.9 ms of CPU
against 7.5 ms by im2col, and 66 ms against 79 ms on a VGG-style 3x3 layer of 64 channels
(`bench/lenet_epoch.py` prints the floor). Strided convolutions and frames much larger than
the output keep im2col.

Plans. `plan` computes a shape's geometry, algorithm and chunks once and keeps them (keyed
by the shapes, the attrs and the tuning knobs below), so the forward and backward of every
later step only look them up.

Threads. When `blas_threads`' policy would give a large GEMM more than one thread, the chunks
of a call go to that many Python threads (`conv_threads`: whole images per thread, dealt round
robin, each thread with its own buffers and BLAS on one thread; the filter and bias gradients
added in chunk order), so the gathers, col2im adds, masks and bias sums run on every free core
and not only the GEMMs; the results are the same, bit for bit, on any number of threads.

Budget. `BUDGET_BYTES` bounds the temporary buffers of one call (patches, patch gradients, the
chunk's dz), all threads' together (a plan whose chunks fill it runs on one thread). A single
output row whose patches exceed it is still processed (the chunk cannot be smaller than one
row); the outputs and gradients themselves are full arrays, as the tape needs them.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.backend import blas_threads
from layerflow._src.ops import conv_jit, conv_rows, conv_threads
from layerflow._src.ops.conv_flat import flat_backward, flat_forward
from layerflow._src.ops.conv_geometry import (
    cf,
    chunk_dz,
    chunk_mask,
    filter_groups,
    geometry,
    images_of,
    in_slice,
    ints,
    out_range,
    padding_attr,
)

# Re-exported: the old import path of the geometry, and the shifted-frame kernels' entries.
__all__ = ["cf", "flat_backward", "flat_forward", "geometry", "in_slice", "ints", "out_range",
           "padding_attr"]  # fmt: skip

# Temporary buffers of one convolution call stay below this (see the module docstring).
BUDGET_BYTES = 64 << 20
# The shifted-frame algorithm (see `conv_flat`) runs stride-1 convolutions whose padded frame
# has at most this many pixels per output pixel, in chunks of about CHUNK_BYTES: few enough
# Python-level steps, small enough that a chunk's patches are still in cache for the GEMM.
FLAT_WASTE = 2.0
CHUNK_BYTES = 4 << 20
# ... and whose wasted GEMM work, (waste - 1) * filters per group multiply-adds per output pixel
# and patch row, stays below this: im2col's gather and col2im cost about as much as that many
# multiply-adds. Measured on one thread, forward + backward, batch 16: shifted frames win at
# (waste - 1) * M = 3..11 (48x48x16 -> 32: 17 vs 22 ms; 24x24x64 -> 64: 30 vs 51 ms), im2col
# from 46 up (12x12x128 -> 128: 25 vs 32 ms; 6x6x256 -> 256: 23 vs 39 ms; AlexNet's 5x5 layer
# at 81: 450 vs 520 ms).
FLAT_EXTRA = 24.0
# Stride-1 im2col gathers from channels-last frames (`conv_rows`) when a patch row's
# consecutive values (KW * C with one group and no column dilation, else C / groups) number at
# least ROWS_RUN and ROWS_OVER_CF times the channels-first copies' runs (OW), and the input is
# not channels-first already (see `Patches`). Measured with `bench/conv_layers.py` (one thread,
# batch 16, min CPU ms, old -> new): the input gradient by dz's patches took AlexNet's 12x12
# layers' backward passes 66 -> 62 (384 -> 384) and 47 -> 41 (384 -> 256), DenseNet's 6x6
# ones 1.2-2.3 -> 0.5-1.1; strided layers lost (ResNet's 3x3/2 on 24x24x64: 2.6 -> 3.7
# forward, the 1x1/2 projection 0.5 -> 1.4), as did AlexNet's 11x11/4 first layer on one
# channel (13.5 -> 16.4): they keep channels-first im2col.
ROWS_RUN = 8
ROWS_OVER_CF = 1.0
# The input gradient of a stride-1 convolution by gathering dz (`conv_rows`) when the input has
# at most this many pixels per output pixel (its GEMM computes one column per input pixel),
# and the filters are at most DX_GATHER_M times the input channels (dz's patches have KH*KW*M
# rows where col2im adds KH*KW*C: AlexNet's 96 -> 256 layer lost 30 ms by gathering).
DX_GATHER_WASTE = 1.15
DX_GATHER_M = 1.0
# A recorded forward keeps its patches for the filter gradient when they are built in one
# chunk, or when all its chunks' patches take at most this many bytes (AlexNet's 12x12 layers:
# 21-32 MB at a batch of 16), instead of one reused buffer that the backward pass refills.
KEEP_BYTES = 64 << 20
# A plan of whole images in several chunks has a multiple of this many (see `_balanced`).
BALANCE = 4

# --- geometry (in `conv_geometry`) and chunk plans ----------------------------------------------


def chunks(n: int, oh: int, ow: int, per_pixel: int,
           budget: int | None = None) -> list[tuple[int, int, int, int]]:  # fmt: skip
    """(n0, n1, r0, r1) chunks of the output: whole images when one image's temporaries
    (`per_pixel` bytes per output pixel) fit the budget, else bands of rows of one image."""
    budget = BUDGET_BYTES if budget is None else min(budget, BUDGET_BYTES)
    rows = budget // max(1, per_pixel * ow)
    if rows >= oh:
        nb = _balanced(n, max(1, rows // oh))
        return [(n0, min(n, n0 + nb), 0, oh) for n0 in range(0, n, nb)]
    rows = max(1, rows)
    return [(i, i + 1, r0, min(oh, r0 + rows)) for i in range(n) for r0 in range(0, oh, rows)]


def _balanced(n: int, nb: int) -> int:
    """Images per chunk, at most `nb`, for `n` images in one chunk or in a multiple of
    BALANCE chunks of about equal size: threads (`conv_threads`) then get equal shares (3
    chunks of AlexNet's 12x12 layers on 2 threads ran no faster than on one)."""
    k = -(-n // nb)
    if k < 2:
        return nb
    k = -(-k // BALANCE) * BALANCE
    return max(1, -(-n // k))


def flat_chunks(n: int, oh: int, hp: int, wp: int, per_pixel: int,
                cached: int) -> list[tuple[int, int, int, int]]:  # fmt: skip
    """The shifted-frame algorithm's chunks: whole frames (images) while a chunk's patches and
    outputs (`cached` bytes per frame pixel) fit CHUNK_BYTES, else bands of output rows (a
    band of r rows spans r * wp frame pixels); never over the budget (`per_pixel` bytes)."""
    nb = min(CHUNK_BYTES // max(1, cached * hp * wp), BUDGET_BYTES // max(1, per_pixel * hp * wp))
    if nb >= 1:
        nb = _balanced(n, nb)
        return [(n0, min(n, n0 + nb), 0, oh) for n0 in range(0, n, nb)]
    rows = max(1, min(CHUNK_BYTES // max(1, cached * wp), BUDGET_BYTES // max(1, per_pixel * wp)))
    return [(i, i + 1, r0, min(oh, r0 + rows)) for i in range(n) for r0 in range(0, oh, rows)]


# --- convolution ----------------------------------------------------------------------------------


def is_pointwise(kh: int, kw: int, geo: Any) -> bool:
    """A 1x1, stride-1, unpadded convolution: its patch matrix is the input itself."""
    _, pads, strides, _ = geo
    return kh == kw == 1 and strides == (1, 1) and not any(b or a for b, a in pads)


class Conv:
    """One convolution's shapes: input (N, H, W, C), filter (KH, KW, C / groups, M), and the
    algorithm and chunks picked for them (see the module docstring)."""

    __slots__ = ("n", "h", "w", "c", "kh", "kw", "cg", "m", "g", "geo", "pointwise", "per_pixel",
                 "plan", "flat", "hp", "wp", "rows", "dx_rows", "budget")  # fmt: skip

    def __init__(self, x_shape: tuple, w_shape: tuple, geo: Any, groups: int) -> None:
        self.n, self.h, self.w, self.c = (int(v) for v in x_shape)
        self.kh, self.kw, self.cg, self.m = (int(v) for v in w_shape)
        self.g, self.geo = groups, geo
        self.budget = BUDGET_BYTES  # all threads' temporary buffers together (conv_threads)
        self.pointwise = is_pointwise(self.kh, self.kw, geo)
        (oh, ow), ((t, b), (left, r)), strides, _ = geo
        k = self.kh * self.kw * self.c
        self.hp, self.wp = self.h + t + b, self.w + left + r  # the padded frame
        waste = self.hp * self.wp / max(1, oh * ow)  # frame pixels per output pixel
        self.flat = (not self.pointwise and strides == (1, 1) and waste <= FLAT_WASTE
                     and (waste - 1) * (self.m // groups) <= FLAT_EXTRA)  # fmt: skip
        run = self.kw * self.c if groups == 1 and geo[3][1] == 1 else self.cg
        self.rows = (not self.pointwise and not self.flat and strides == (1, 1)
                     and run >= ROWS_RUN and run >= ROWS_OVER_CF * ow)  # fmt: skip
        self.dx_rows = (self.rows and strides == (1, 1) and self.m <= DX_GATHER_M * self.c
                        and self.h * self.w <= DX_GATHER_WASTE * oh * ow)  # fmt: skip
        if self.flat:
            # Per frame pixel: patches, patch gradients (K each), dz and output (M each).
            self.per_pixel = 8 * (2 * k + 2 * self.m)
            self.plan = flat_chunks(self.n, oh, self.hp, self.wp, self.per_pixel,
                                    4 * (k + self.m))  # fmt: skip
        elif self.rows:
            # Per output pixel: patches (K), patch gradients (K, or KH*KW*M for dz's patches),
            # dz (M), and the two frames' share (input and dz, about one pixel each).
            kd, frames = k, self.hp * self.wp * self.c
            if self.dx_rows:
                kd = self.kh * self.kw * self.m
                frames += (self.h + (self.kh - 1) * geo[3][0]) * (
                    self.w + (self.kw - 1) * geo[3][1]) * self.m  # fmt: skip
            frames /= max(1, oh * ow)
            self.per_pixel = int(8 * (k + kd + self.m + frames))
            self.plan = chunks(self.n, oh, ow, self.per_pixel)
            self.dx_rows = self.dx_rows and all(r1 - r0 == oh for _, _, r0, r1 in self.plan)
        else:
            # Per output pixel: patches and patch gradients (K each), dz (M) in float64 at most.
            self.per_pixel = 0 if self.pointwise else 8 * (2 * k + self.m)
            self.plan = chunks(self.n, oh, ow, self.per_pixel)

    @property
    def k(self) -> int:
        return self.kh * self.kw * self.cg

    def cols_of(self, chunk: tuple) -> int:
        n0, n1, r0, r1 = chunk
        return (n1 - n0) * (r1 - r0) * self.geo[0][1]

    def col0(self, chunk: tuple) -> int:
        (oh, ow) = self.geo[0]
        return chunk[0] * oh * ow + chunk[2] * ow


_PLANS: dict = {}
_PLANS_MAX = 256


def plan(x_shape: tuple, w_shape: tuple, attrs: tuple, opname: str) -> Conv:
    """The `Conv` of an input and filter shape and the op's attrs (strides, dilations,
    padding, groups), computed once: a training step asks for the same few shapes at every
    call (forward and backward), and geometry and chunk plans cost 0.1-0.4 ms each. The key
    holds the tuning knobs too, so a changed knob (as tests do) plans afresh."""
    x_shape, w_shape = tuple(int(v) for v in x_shape), tuple(int(v) for v in w_shape)
    key = (x_shape, w_shape, attrs, BUDGET_BYTES, CHUNK_BYTES, BALANCE, FLAT_WASTE, FLAT_EXTRA,
           ROWS_RUN, ROWS_OVER_CF, DX_GATHER_WASTE, DX_GATHER_M, chunks,
           flat_chunks)  # fmt: skip
    cv = _PLANS.get(key)
    if cv is None:
        strides, dilations, padding, groups = attrs
        outs, pads = geometry(x_shape[1:3], w_shape[:2], strides, dilations, padding, opname)
        cv = Conv(x_shape, w_shape, (outs, pads, strides, dilations), groups)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = cv
    return cv


def im2col(xp: Any, x5: Any, cv: Conv, chunk: tuple, buf: Any, zero: bool = True) -> Any:
    """The patches of `chunk`'s output pixels, (groups, KH*KW*Cg, pixels), gathered from the
    channels-first input `x5` (groups, Cg, N, H, W) into `buf` with the padding clipped. With
    `zero` False the padding's slots are left as they are: they hold zeros from the previous
    chunk when it had the same shape (`same_borders`)."""
    n0, n1, r0, r1 = chunk
    g, cg, kh, kw = cv.g, cv.cg, cv.kh, cv.kw
    (_, ow), ((t, _), (left, _)), (sh, sw), (dh, dw) = cv.geo
    if cv.pointwise:
        return x5[:, :, n0:n1, r0:r1, :].reshape(g, cg, -1)
    size = g * kh * kw * cg * (n1 - n0) * (r1 - r0) * ow
    cols = buf[:size].reshape(g, kh, kw, cg, n1 - n0, r1 - r0, ow)
    if conv_jit.usable(xp, x5, buf) and x5.flags.c_contiguous and cols.flags.c_contiguous:
        conv_jit.im2col(x5, cols, chunk, cv.geo)  # padding zeroed in the same pass
        return cols.reshape(g, kh * kw * cg, -1)
    for i in range(kh):
        rlo, rhi = out_range(r0, r1, i * dh, sh, t, cv.h)
        for j in range(kw):
            clo, chi = out_range(0, ow, j * dw, sw, left, cv.w)
            dst = cols[:, i, j]
            if zero:
                _zero_border(dst, rlo - r0, rhi - r0, clo, chi)
            if rlo < rhi and clo < chi:
                rows = in_slice(rlo, rhi, i * dh, sh, t)
                dst[..., rlo - r0 : rhi - r0, clo:chi] = x5[
                    :, :, n0:n1, rows, in_slice(clo, chi, j * dw, sw, left)
                ]
    return cols.reshape(g, kh * kw * cg, -1)


def same_borders(prev: tuple | None, chunk: tuple) -> bool:
    """Whether `chunk`'s patches put the padding where `prev`'s did (same images count and
    rows): its zeros are then still in the buffer."""
    return prev is not None and (prev[1] - prev[0], prev[2], prev[3]) == (
        chunk[1] - chunk[0], chunk[2], chunk[3])  # fmt: skip


def _zero_border(dst: Any, rlo: int, rhi: int, clo: int, chi: int) -> None:
    """Zero what the tap reads from the padding: rows outside [rlo, rhi), columns outside
    [clo, chi) of the chunk's (..., rows, OW) slot (an empty side costs no call: most taps of
    most chunks have none)."""
    rows, ow = dst.shape[-2:]
    if rlo > 0:
        dst[..., :rlo, :] = 0
    if rhi < rows:
        dst[..., rhi:, :] = 0
    if clo > 0:
        dst[..., :, :clo] = 0
    if chi < ow:
        dst[..., :, chi:] = 0


def col2im(xp: Any, dcols: Any, x_shape: tuple, cv: Conv, chunk: tuple, dx5: Any) -> None:
    """Add the patch gradients `dcols` (groups, KH*KW*Cg, pixels) of `chunk` onto `dx5`
    (groups, Cg, N, H, W), tap by tap (`x_shape` is the NHWC input shape)."""
    n0, n1, r0, r1 = chunk
    g, cg, kh, kw = cv.g, cv.cg, cv.kh, cv.kw
    (_, ow), ((t, _), (left, _)), (sh, sw), (dh, dw) = cv.geo
    h, w = x_shape[1], x_shape[2]
    if cv.pointwise:
        dx5[:, :, n0:n1, r0:r1, :] += dcols.reshape(g, cg, n1 - n0, r1 - r0, ow)
        return
    d = dcols.reshape(g, kh, kw, cg, n1 - n0, r1 - r0, ow)
    if conv_jit.usable(xp, d, dx5) and d.flags.c_contiguous and dx5.flags.c_contiguous:
        conv_jit.col2im(d, dx5, chunk, cv.geo)
        return
    for i in range(kh):
        rlo, rhi = out_range(r0, r1, i * dh, sh, t, h)
        for j in range(kw):
            clo, chi = out_range(0, ow, j * dw, sw, left, w)
            if rlo < rhi and clo < chi:
                dx5[:, :, n0:n1, in_slice(rlo, rhi, i * dh, sh, t),
                    in_slice(clo, chi, j * dw, sw, left)] += d[:, i, j, ..., rlo - r0 : rhi - r0,
                                                               clo:chi]  # fmt: skip


def conv_forward(xp: Any, x: Any, w: Any, cv: Conv, bias: Any = None, relu: bool = False,
                 keep: bool = False) -> tuple[Any, Any, Any]:  # fmt: skip
    """(output NHWC view of a channels-first array, patches, relu mask); bias and relu are
    applied chunk by chunk. With `keep` (a tape records the op), the patches are returned when
    all of them fit KEEP_BYTES (one array, or a tuple of one per chunk; else None: the
    backward pass rebuilds them), and with `relu` the mask of positive outputs, one bit per
    value (see `relu_mask`); else both are None."""
    if not cv.plan:  # an empty batch
        return xp.zeros((0, *cv.geo[0], cv.m), dtype=x.dtype), None, [] if keep and relu else None
    if cv.flat:
        return flat_forward(xp, x, w, cv, bias, relu, keep)
    (oh, ow) = cv.geo[0]
    g, mg = cv.g, cv.m // cv.g
    kept = [] if keep and not cv.pointwise and _keeps_all(cv, x.dtype.itemsize) else None
    patches = Patches(xp, x, cv, whole=kept is not None)
    wt = filter_groups(xp, w, cv).transpose(0, 2, 1)  # (g, Mg, K): BLAS reads it transposed
    y = xp.empty((g, mg, cv.n * oh * ow), dtype=x.dtype)
    b = None if bias is None else bias.reshape(g, mg, 1)
    mask = [None] * len(cv.plan) if keep and relu else None
    if kept is not None:
        kept = [None] * len(cv.plan)
    threads = conv_threads.count(
        xp,
        len(conv_threads.units(cv.plan)),
        (cv.m, cv.n * oh * ow, cv.k),
        patches.nbytes(),
        cv.budget,
        wide=True,
    )
    shares = conv_threads.deal(cv.plan, threads)
    own = [patches] + [patches.fork() for _ in range(threads - 1)]
    fused = (b is not None or relu) and conv_jit.usable(xp, y)  # bias, relu, mask: one kernel

    def work(t: int) -> None:
        for i in shares[t]:
            chunk = cv.plan[i]
            cols = own[t](chunk)
            if kept is not None:
                kept[i] = cols
            c0 = cv.col0(chunk)
            out = y[:, :, c0 : c0 + cv.cols_of(chunk)]
            if threads == 1:
                blas_threads.gemm(cv.m, out.shape[2], cv.k)
            xp.matmul(wt, cols, out=out)
            if fused:
                bits = conv_jit.epilogue(y, c0, out.shape[2], bias, relu, mask is not None)
                if mask is not None:
                    mask[i] = bits
                continue
            if b is not None:
                out += b
            if relu:
                xp.maximum(out, 0, out=out)
                if mask is not None:
                    mask[i] = xp.packbits((out > 0).ravel())

    conv_threads.run(threads, work)
    if kept is not None:
        kept = kept[0] if len(kept) == 1 else tuple(kept)
    return y.reshape(cv.m, cv.n, oh, ow).transpose(1, 2, 3, 0), kept, mask


def _keeps_all(cv: Conv, itemsize: int) -> bool:
    """Whether the forward keeps every chunk's patches for the backward pass: in one chunk
    (they are in the buffer anyway), or all of them within KEEP_BYTES."""
    return len(cv.plan) == 1 or _all_patches(cv) * itemsize <= KEEP_BYTES


def _all_patches(cv: Conv) -> int:
    return cv.kh * cv.kw * cv.c * cv.n * cv.geo[0][0] * cv.geo[0][1]


class Patches:
    """The (groups, K, pixels) patches of each chunk of one call, in one reused buffer: by
    channels-first im2col (zeroing the padding's slots only when the chunk's shape changes),
    or, for `cv.rows` and an input that is not channels-first already, gathered from
    channels-last frames (`conv_rows`). A channels-first input (every conv and pool output)
    keeps im2col: laying it into channels-last frames is a transposing copy, which cost more
    than the longer runs saved (GoogLeNet's 12x12 3x3 layers: 3.9 -> 4.5 ms forward)."""

    __slots__ = ("xp", "cv", "src", "buf", "frames", "prev", "rows", "whole")

    def __init__(self, xp: Any, x: Any, cv: Conv, whole: bool = False) -> None:
        self.xp, self.cv, self.prev, self.frames, self.whole = xp, cv, None, None, whole
        # `whole`: every chunk's patches in a place of their own (kept for the backward pass)
        size = _all_patches(cv) if whole else _buf_size(cv)
        self.buf = None if cv.pointwise else xp.empty(size, dtype=x.dtype)
        self.rows = cv.rows and not (cv.c > 1 and x.transpose(3, 0, 1, 2).flags.c_contiguous)
        if self.rows:
            (t, _), (left, _) = cv.geo[1]
            self.src = x
            self.frames = conv_rows.Frames(xp, images_of(cv), cv.hp, cv.wp, cv.c, t, left,
                                           cv.h, cv.w, x.dtype)  # fmt: skip
        else:
            self.src = cf(xp, x).reshape(cv.g, cv.cg, cv.n, cv.h, cv.w)

    def nbytes(self) -> int:
        """The bytes of this object's own buffers (a `fork` makes as many)."""
        own = 0 if self.whole or self.buf is None else self.buf.nbytes
        return own + (self.frames.buf.nbytes if self.frames is not None else 0)

    def fork(self) -> Patches:
        """The same patches for another thread: the same input (and, when `whole`, the same
        buffer, where chunks have places of their own), buffers of its own otherwise."""
        new = Patches.__new__(Patches)
        new.xp, new.cv, new.src, new.rows = self.xp, self.cv, self.src, self.rows
        new.whole, new.prev = self.whole, None
        new.buf = self.buf if self.whole or self.buf is None else self.xp.empty_like(self.buf)
        new.frames = None if self.frames is None else self.frames.fork()
        return new

    def __call__(self, chunk: tuple) -> Any:
        cv = self.cv
        buf = self.buf
        if self.whole and buf is not None and cv.col0(chunk):
            buf = buf[cv.kh * cv.kw * cv.c * cv.col0(chunk) :]
        if self.rows:
            fr = self.frames.fill(self.src, chunk[0], chunk[1])
            return conv_rows.gather(self.xp, fr, chunk[2], chunk[3], cv.geo[0], (cv.kh, cv.kw),
                                    cv.geo[2], cv.geo[3], cv.g, buf)  # fmt: skip
        fresh = self.whole or not same_borders(self.prev, chunk)
        cols = im2col(self.xp, self.src, cv, chunk, buf, fresh)
        self.prev = chunk
        return cols


def relu_mask(xp: Any, mask: list, cv: Conv, dtype: Any) -> Any:
    """The whole relu mask kept by `conv_forward` as an NHWC array of 0 and 1 in `dtype` (for
    a backward pass that an outer tape records with ops)."""
    (oh, ow) = cv.geo[0]
    full = xp.empty((cv.m, cv.n, oh, ow), dtype=dtype)
    for i, chunk in enumerate(cv.plan):
        n0, n1, r0, r1 = chunk
        full[:, n0:n1, r0:r1, :] = chunk_mask(xp, mask, i, cv, chunk)
    return full.transpose(1, 2, 3, 0)


def _buf_size(cv: Conv) -> int:
    return max(cv.kh * cv.kw * cv.c * cv.cols_of(c) for c in cv.plan)


def conv_backward(xp: Any, x: Any, w: Any, dy: Any, cv: Conv, *, x_shape: tuple, need_x: bool,
                  need_w: bool, need_b: bool = False, mask: Any = None,
                  cols: Any = None) -> tuple[Any, Any, Any]:  # fmt: skip
    """(dx, dw, db) of y = conv(x, w) (+ bias, relu when `mask`, the forward's relu mask, is
    given) for dy, each None unless needed. `x` may be None when only dx is needed; `cols` are
    the forward's patches when it kept them."""
    if not cv.plan:  # an empty batch: nothing flows back
        return (xp.zeros(x_shape, dtype=dy.dtype) if need_x else None,
                xp.zeros((cv.kh, cv.kw, cv.cg, cv.m), dtype=dy.dtype) if need_w else None,
                xp.zeros((cv.m,), dtype=dy.dtype) if need_b else None)  # fmt: skip
    if cv.flat:
        return flat_backward(xp, x, w, dy, cv, need_x, need_w, need_b, mask)
    (oh, ow) = cv.geo[0]
    g, mg, k = cv.g, cv.m // cv.g, cv.k
    dyt = dy.transpose(3, 0, 1, 2)  # (M, N, OH, OW) view
    gathered = need_x and cv.dx_rows  # the input gradient by dz's patches (`conv_rows`)
    w3 = filter_groups(xp, w, cv) if need_x and not gathered else None  # (g, K, Mg)
    patches = Patches(xp, x, cv) if need_w and cols is None else None
    # A pointwise convolution's chunks are whole images: its input gradient is written by the
    # GEMM straight into dx (no zeroed array, no patch-gradient buffer, no add).
    whole = all(r0 == 0 and r1 == oh for _, _, r0, r1 in cv.plan)
    direct = (cv.pointwise and whole) or gathered
    if gathered:
        hf, wf, top, left = conv_rows.dz_frame_offsets(cv)
        nimg = images_of(cv)
        wrot = conv_rows.flipped_filter(xp, w, g)  # (g, Cg, KH*KW*Mg)
        kd = cv.kh * cv.kw * mg
        w3 = (wrot, top, left, kd)
    dx5 = None
    if need_x:
        dx5 = xp.empty if direct else xp.zeros
        dx5 = dx5((g, cv.cg, cv.n, cv.h, cv.w), dtype=dy.dtype)
    dw = xp.empty((g, k, mg), dtype=dy.dtype) if need_w else None
    db = xp.zeros((g, mg), dtype=dy.dtype) if need_b else None
    most = max(cv.cols_of(c) for c in cv.plan)
    # dy read in place when it is channels-first already and no relu mask applies.
    in_place = mask is None and whole and dyt.flags.c_contiguous

    def buffers(first: bool) -> dict:
        """One thread's buffers: dz, patch gradients, patches, dz's frames and patches, and
        a filter-gradient part (`add_grads`)."""
        own: dict = {"part": []}
        own["dz"] = None if in_place else xp.empty(cv.m * most, dtype=dy.dtype)
        own["dcols"] = xp.empty(g * k * most, dtype=dy.dtype) if need_x and not direct else None
        own["patches"] = None if patches is None else patches if first else patches.fork()
        if gathered:
            own["dzf"] = conv_rows.Frames(xp, nimg, hf, wf, cv.m, 0, 0, 0, 0, dy.dtype).buf
            own["dzc"] = xp.empty(g * kd * nimg * cv.h * cv.w, dtype=dy.dtype)
        return own

    mine = [buffers(True)]
    per_thread = sum(mine[0][key].nbytes for key in ("dz", "dcols", "dzf", "dzc")
                     if mine[0].get(key) is not None)  # fmt: skip
    per_thread += (patches.nbytes() if patches is not None else 0) + (dw.nbytes if need_w else 0)
    threads = conv_threads.count(
        xp,
        len(conv_threads.units(cv.plan)),
        (g * k, cv.n * oh * ow, mg),
        per_thread,
        cv.budget,
        wide=True,
    )
    mine += [buffers(False) for _ in range(threads - 1)]
    shares = conv_threads.deal(cv.plan, threads)
    turns = conv_threads.Turns() if threads > 1 and (need_w or need_b) else None

    def work(t: int) -> None:
        own = mine[t]
        for i in shares[t]:
            _backward_chunk(xp, cv, i, own, dyt, mask, in_place, w3, cols, dw, db, dx5, turns,
                            threads)  # fmt: skip

    conv_threads.run(threads, conv_threads.guarded(turns, work))
    dx = None
    if need_x:
        dx = dx5.reshape(cv.c, cv.n, cv.h, cv.w).transpose(1, 2, 3, 0)
    if need_w:
        dw = dw.transpose(1, 0, 2).reshape(cv.kh, cv.kw, cv.cg, cv.m)
    if need_b:
        db = db.reshape(cv.m)
    return dx, dw, db


def _backward_chunk(xp: Any, cv: Conv, i: int, own: dict, dyt: Any, mask: Any, in_place: bool,
                    w3: Any, cols: Any, dw: Any, db: Any, dx5: Any, turns: Any,
                    threads: int) -> None:  # fmt: skip
    """`conv_backward`'s work on chunk i with one thread's buffers `own`; `w3` is the filter
    as (g, K, Mg), or (flipped filter, top, left, rows) for the input gradient by dz's
    patches (`conv_rows`), or None when dx is not needed."""
    g, mg, k = cv.g, cv.m // cv.g, cv.k
    (oh, ow) = cv.geo[0]
    chunk = cv.plan[i]
    n0, n1, r0, r1 = chunk
    p = cv.cols_of(chunk)
    if in_place:
        dz = dyt[:, n0:n1]
    else:
        dz = own["dz"][: cv.m * p].reshape(cv.m, n1 - n0, r1 - r0, ow)
        chunk_dz(xp, dyt, mask, i, cv, chunk, dz)
    dz3 = dz.reshape(g, mg, p)
    if dw is not None or db is not None:
        pc = None
        if dw is not None:
            pc = own["patches"](chunk) if cols is None else cols[i] if type(cols) is tuple else cols
            if threads == 1:
                blas_threads.gemm(g * k, mg, p)
        conv_threads.add_grads(xp, turns, i, pc, dz3, dw, db, own["part"])
    if dx5 is None:
        return
    if type(w3) is tuple:  # by dz's patches
        wrot, top, left, kd = w3
        fr = own["dzf"][: n1 - n0]
        conv_rows.place_dz(fr, dz.reshape(cv.m, n1 - n0, oh, ow), top, left)
        dzc = conv_rows.gather(xp, fr, 0, cv.h, (cv.h, cv.w), (cv.kh, cv.kw), (1, 1),
                               cv.geo[3], g, own["dzc"])  # fmt: skip
        if threads == 1:
            blas_threads.gemm(cv.c, dzc.shape[2], kd)
        xp.matmul(wrot, dzc, out=dx5[:, :, n0:n1].reshape(g, cv.cg, -1))
        return
    if threads == 1:
        blas_threads.gemm(g * k, p, mg)
    if own["dcols"] is None:  # pointwise, whole images: straight into dx
        xp.matmul(w3, dz3, out=dx5[:, :, n0:n1].reshape(g, cv.cg, p))
        return
    dcols = own["dcols"][: g * k * p].reshape(g, k, p)
    xp.matmul(w3, dz3, out=dcols)
    col2im(xp, dcols, (cv.n, cv.h, cv.w, cv.c), cv, chunk, dx5)
