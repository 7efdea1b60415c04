"""Compiled (numba) kernels of the chunked im2col convolution: the work around its GEMMs.

The NumPy path of `conv_kernels` does each of these as several passes (one strided copy or
add per kernel tap, each row of OW values a step of NumPy's iterator; then bias, relu, mask
and bit packing as four passes); each kernel here is one call per chunk. im2col and col2im
walk tap by tap, and within a tap all channels in order, so the patches are written (read)
in one long run per tap while the chunk's input (gradient) is re-read from L2: measured per
chunk with cold caches, one thread, NumPy / channel by channel (each channel's slice in L1
while all its taps run) / tap by tap: AlexNet's 5x5 layer (2 images of 26x26x96, 13 MB of
patches) im2col 1.49 / 1.41 / 0.88 ms, col2im 3.26 / 1.62 / 0.86; ResNet's 3x3/2 on
48x48x64 col2im 1.81 / 1.04 / 0.80 (im2col by channel 0.88, by tap 0.70); a 12x12x384
layer (4 images, 864 KB of input) about equal both ways (im2col 1.00 vs 0.97, col2im 0.88
vs 0.80), and blocks of 64-512 KB of channels were never better than all channels. Bias +
relu + mask: 0.44 -> 0.11 ms on the 5x5 layer's chunk.

- `im2col`: a chunk's patches from the channels-first input, the padding written as zeros in
  the same pass (no separate zeroing of the borders);
- `col2im`: a chunk's patch gradients added onto the input gradient, per element in the NumPy
  path's order (tap by tap), so the result is the same bit for bit;
- `epilogue`: bias, relu and the packed relu mask of a chunk's output slab, row by row while
  the row is in cache, the same bits as `out += b; maximum(out, 0); packbits(out > 0)`.

All three give the NumPy path's results bit for bit (copies, and adds in the same order).

Callers use them only when `jit.enabled()` and the arrays are NumPy's (see `usable`). Each
kernel is compiled for float32 and float64 on first use (and cached in `__pycache__`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import jit


def usable(xp: Any, *arrays: Any) -> bool:
    """Whether the kernels may run on these arrays: NumPy, float32 or float64, numba on."""
    if xp is not np or not jit.enabled():
        return False
    return all(a.dtype == np.float32 or a.dtype == np.float64 for a in arrays)


# Indices are cast to unsigned (`_u`): numba wraps negative signed indices, and that check
# keeps LLVM from vectorizing the loops (a plain copy of 13 MB: 3.0 ms signed, 0.3 unsigned).


@jit.kernel
def _im2col(x, cols, shape, n0, r0, sh, sw, dh, dw, t, left):  # pragma: no cover - compiled
    g, cg, nn, h, w, kh, kw, nb, rows, ow = shape
    _u = np.uint64
    zero = cols.dtype.type(0)
    for gi in range(g):
        for i in range(kh):
            for j in range(kw):
                off = j * dw - left  # output column o reads input column o * sw + off
                clo = min(ow, max(0, (-off + sw - 1) // sw))
                chi = max(clo, min(ow, (w - 1 - off) // sw + 1))
                for c in range(cg):
                    xbase = (gi * cg + c) * nn * h * w
                    dbase = (((gi * kh + i) * kw + j) * cg + c) * nb * rows * ow
                    for n in range(nb):
                        for r in range(rows):
                            d0 = dbase + (n * rows + r) * ow
                            hi = (r0 + r) * sh + i * dh - t
                            if hi < 0 or hi >= h:
                                for o in range(ow):
                                    cols[_u(d0 + o)] = zero
                                continue
                            s0 = xbase + ((n0 + n) * h + hi) * w + off
                            for o in range(clo):
                                cols[_u(d0 + o)] = zero
                            if sw == 1:
                                for o in range(clo, chi):
                                    cols[_u(d0 + o)] = x[_u(s0 + o)]
                            else:
                                for o in range(clo, chi):
                                    cols[_u(d0 + o)] = x[_u(s0 + o * sw)]
                            for o in range(chi, ow):
                                cols[_u(d0 + o)] = zero


@jit.kernel
def _col2im(d, dx, shape, n0, r0, sh, sw, dh, dw, t, left):  # pragma: no cover - compiled
    g, cg, nn, h, w, kh, kw, nb, rows, ow = shape
    _u = np.uint64
    for gi in range(g):
        for i in range(kh):  # taps in order: each element's adds in the NumPy path's order
            for j in range(kw):
                off = j * dw - left
                clo = min(ow, max(0, (-off + sw - 1) // sw))
                chi = max(clo, min(ow, (w - 1 - off) // sw + 1))
                for c in range(cg):
                    xbase = (gi * cg + c) * nn * h * w
                    dbase = (((gi * kh + i) * kw + j) * cg + c) * nb * rows * ow
                    for n in range(nb):
                        for r in range(rows):
                            hi = (r0 + r) * sh + i * dh - t
                            if hi < 0 or hi >= h:
                                continue
                            d0 = dbase + (n * rows + r) * ow
                            s0 = xbase + ((n0 + n) * h + hi) * w + off
                            if sw == 1:
                                for o in range(clo, chi):
                                    dx[_u(s0 + o)] += d[_u(d0 + o)]
                            else:
                                for o in range(clo, chi):
                                    dx[_u(s0 + o * sw)] += d[_u(d0 + o)]


@jit.kernel
def _epilogue(y, shape, c0, p, b, relu, bits):  # pragma: no cover - compiled
    g, mg, pp = shape
    _u = np.uint64
    zero = y.dtype.type(0)
    for gi in range(g):
        for m in range(mg):
            base = (gi * mg + m) * pp + c0
            bias = b[gi * mg + m] if b.size else zero
            if b.size:
                for q in range(p):
                    y[_u(base + q)] += bias
            if relu:
                for q in range(p):
                    v = y[_u(base + q)]
                    if not v > zero and v == v:  # NaN stays, -0.0 becomes 0.0: maximum(v, 0)
                        y[_u(base + q)] = zero
            if bits.size:  # p % 8 == 0: this row's bits are whole bytes
                k0 = (gi * mg + m) * (p // 8)
                for q in range(p // 8):
                    byte = 0
                    for e in range(8):
                        byte |= (1 if y[_u(base + 8 * q + e)] > zero else 0) << (7 - e)
                    bits[_u(k0 + q)] = byte


_NO_BITS = np.zeros(0, np.uint8)


def im2col(x5: Any, cols7: Any, chunk: tuple, geo: Any) -> None:
    """Chunk (n0, n1, r0, r1)'s patches of the channels-first input `x5` (g, Cg, N, H, W) into
    `cols7` (g, KH, KW, Cg, images, rows, OW), zeros where a tap reads the padding."""
    _, ((t, _), (left, _)), (sh, sw), (dh, dw) = geo
    _im2col(*_flat(x5, cols7), _shape(x5, cols7), chunk[0], chunk[2], sh, sw,
            dh, dw, t, left)  # fmt: skip


def col2im(dcols7: Any, dx5: Any, chunk: tuple, geo: Any) -> None:
    """Add chunk (n0, n1, r0, r1)'s patch gradients `dcols7` (g, KH, KW, Cg, images, rows,
    OW) onto `dx5` (g, Cg, N, H, W), tap by tap per element (the NumPy path's order)."""
    _, ((t, _), (left, _)), (sh, sw), (dh, dw) = geo
    _col2im(*_flat(dcols7, dx5), _shape(dx5, dcols7), chunk[0], chunk[2], sh,
            sw, dh, dw, t, left)  # fmt: skip


def _flat(*arrays: Any) -> list:
    """1-D views of C-contiguous arrays (a reshape of any other would be a copy that the
    kernel writes into and the caller never sees)."""
    if not all(a.flags.c_contiguous for a in arrays):
        raise ValueError("conv_jit kernels need C-contiguous arrays")
    return [a.reshape(-1) for a in arrays]


def _shape(x5: Any, cols7: Any) -> tuple:
    g, cg, n, h, w = x5.shape
    _, kh, kw, _, nb, rows, ow = cols7.shape
    return (g, cg, n, h, w, kh, kw, nb, rows, ow)


def epilogue(y: Any, c0: int, p: int, bias: Any, relu: bool, want_mask: bool) -> Any:
    """Add `bias` (M,) (None: none) to columns [c0, c0 + p) of `y` (g, Mg, P), relu them when
    `relu`, and return their packed mask `packbits(out > 0)` when `want_mask` (else None)."""
    g, mg, _ = y.shape
    mask = want_mask and relu
    bits = np.empty(g * mg * p // 8, np.uint8) if mask and p % 8 == 0 else _NO_BITS
    b = np.zeros(0, y.dtype) if bias is None else np.ascontiguousarray(bias, dtype=y.dtype)
    _epilogue(*_flat(y), y.shape, c0, p, b.reshape(-1), relu, bits)
    if mask and not bits.size:  # a row's bits do not end on a byte: NumPy packs them
        return np.packbits((y[:, :, c0 : c0 + p] > 0).ravel())
    return bits if mask else None
