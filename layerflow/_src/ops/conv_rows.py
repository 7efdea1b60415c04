"""Patches gathered from channels-last frames ("rows"), the im2col of layers with many channels.

Channels-first im2col (`conv_kernels.im2col`) copies each kernel tap as (channels x images x
rows) runs of OW values: on a 12x12 image of 384 channels those are 12-float copies, and its
col2im adds them back the same way. Here the input of a chunk is first laid into a zero-padded
channels-last frame (images, HP, WP, C), written once per chunk (its border is never written,
so it stays zero); a patch row (one output pixel, one tap row) is then KW * C consecutive
values of the frame when the convolution has one group and no column dilation, else C/groups
consecutive values per tap: ONE strided copy per tap row with runs of KW * C floats (5 * 96,
3 * 384 in AlexNet). The patch matrix is laid out (groups, pixels, K) with K in the filter's own
(tap row, tap column, channel) order, and handed on as its (groups, K, pixels) transpose, so the
GEMMs of `conv_kernels` take it as they take im2col's (BLAS reads either at the same speed).

The input gradient of a stride-1 convolution is itself a convolution: of dz, zero-padded to the
full frame, with the filter flipped and its channel axes swapped. So instead of adding patch
gradients back tap by tap (col2im, a read-modify-write of the input gradient per tap), dz is
laid into a channels-last frame and gathered the same way, and one GEMM writes the input
gradient straight into its channels-first array. That GEMM computes H * W pixels where col2im's
computes OH * OW, so `conv_kernels.Conv` takes this path only when the two are about equal
(SAME padding; not a large kernel with VALID padding).
"""

from __future__ import annotations

from typing import Any


class Frames:
    """A reused zero-bordered channels-last frame buffer, and which images it holds."""

    __slots__ = ("buf", "held", "top", "left", "h", "w")

    def __init__(self, xp: Any, n: int, hp: int, wp: int, c: int, top: int, left: int, h: int,
                 w: int, dtype: Any) -> None:  # fmt: skip
        self.buf = xp.zeros((n, hp, wp, c), dtype=dtype)
        self.held, self.top, self.left, self.h, self.w = None, top, left, h, w

    def fork(self) -> Frames:
        """Frames like these (zeroed, holding no images) for another thread."""
        new = Frames.__new__(Frames)
        new.buf = self.buf.copy()
        new.buf[...] = 0
        new.held, new.top, new.left, new.h, new.w = None, self.top, self.left, self.h, self.w
        return new

    def fill(self, src: Any, n0: int, n1: int) -> Any:
        """Images [n0, n1) of the NHWC array `src` (rows and columns `h`, `w` from its own
        origin) inside the frames; the border keeps its zeros. Returns the frames in use."""
        if self.held != (n0, n1):
            fr = self.buf[: n1 - n0]
            fr[:, self.top : self.top + self.h, self.left : self.left + self.w] = src[n0:n1]
            self.held = (n0, n1)
        return self.buf[: n1 - n0]


def gather(xp: Any, fr: Any, r0: int, r1: int, oh_ow: tuple, k_hw: tuple, strides: tuple,
           dilations: tuple, groups: int, cbuf: Any) -> Any:  # fmt: skip
    """The patches of output rows [r0, r1) of the frames `fr` (images, HP, WP, C) into `cbuf`,
    as a (groups, K, pixels) view of a (groups, pixels, K) array."""
    nb, _, _, c = fr.shape
    _, ow = oh_ow
    kh, kw = k_hw
    (sh, sw), (dh, dw) = strides, dilations
    cg = c // groups
    rows = r1 - r0
    p = nb * rows * ow
    k = kh * kw * cg
    cols = cbuf[: groups * p * k].reshape(groups, nb, rows, ow, kh, kw, cg)
    s0, s1, s2, s3 = fr.strides
    if groups == 1 and dw == 1:  # a tap row's KW * C values are consecutive in the frame
        runs = cbuf[: p * k].reshape(nb, rows, ow, kh, kw * c)
        for i in range(kh):
            src = xp.lib.stride_tricks.as_strided(
                fr[:, r0 * sh + i * dh :], shape=(nb, rows, ow, kw * c),
                strides=(s0, sh * s1, sw * s2, s3),
            )  # fmt: skip
            runs[:, :, :, i] = src
    else:
        for i in range(kh):
            top = r0 * sh + i * dh
            for j in range(kw):
                src = fr[:, top : top + (rows - 1) * sh + 1 : sh,
                         j * dw : j * dw + (ow - 1) * sw + 1 : sw]  # fmt: skip
                cols[:, :, :, :, i, j] = src.reshape(nb, rows, ow, groups, cg).transpose(
                    3, 0, 1, 2, 4)  # fmt: skip
    return cols.reshape(groups, p, k).transpose(0, 2, 1)


def flipped_filter(xp: Any, w: Any, groups: int) -> Any:
    """(groups, Cg, KH*KW*Mg): the filter of the input-gradient convolution, flipped in space
    with its channel axes swapped, row c of group g read by the GEMM against dz's patches."""
    kh, kw, cg, m = w.shape
    wr = w[::-1, ::-1].reshape(kh, kw, cg, groups, m // groups).transpose(3, 2, 0, 1, 4)
    return xp.ascontiguousarray(wr).reshape(groups, cg, kh * kw * (m // groups))


def dz_frame_offsets(cv: Any) -> tuple[int, int, int, int]:
    """(frame rows, frame columns, top, left) of dz's frame for the input gradient: dz row o
    sits at frame row o + top, and input row h reads frame rows h + i * dh."""
    (t, _), (left, _) = cv.geo[1]
    dh, dw = cv.geo[3]
    return (cv.h + (cv.kh - 1) * dh, cv.w + (cv.kw - 1) * dw,
            (cv.kh - 1) * dh - t, (cv.kw - 1) * dw - left)  # fmt: skip


def place_dz(dzf: Any, dz: Any, top: int, left: int) -> None:
    """Write dz (M, images, OH, OW) into the channels-last frames `dzf` (images, HF, WF, M)
    at (top, left), clipped to the frame (an output row that only read padding has no input
    to send its gradient to)."""
    _, hf, wf, _ = dzf.shape
    _, _, oh, ow = dz.shape
    a0, a1 = max(0, top), min(hf, top + oh)
    b0, b1 = max(0, left), min(wf, left + ow)
    dzf[:, a0:a1, b0:b1] = dz[:, :, a0 - top : a1 - top, b0 - left : b1 - left].transpose(
        1, 2, 3, 0)  # fmt: skip
