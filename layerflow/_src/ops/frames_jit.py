"""Compiled kernels (numba, `backend/jit`) of the shifted-frame convolution (`conv_flat`).

Each replaces a run of NumPy passes over one chunk by one pass that keeps its working set in
the caches, and releases the GIL, so the chunks on `conv_threads`' threads run side by side:

- `frame_cols`: a chunk's patches (one row per tap and channel) gathered straight from the
  input, with the padding's zeros, instead of copied from a padded frame buffer filled first.
- `dx_taps`: the input gradient. The NumPy path adds the chunk's patch gradients back to a
  zeroed frame buffer, one shifted slice per tap (KH*KW passes over the chunk's frames), and
  copies each image's interior out at its end. Here each channel's frame pixels are summed in
  a small buffer (the chunk's pixels and the tail its taps reach past them) in the same order
  (the previous band's sums first, then tap after tap), the pixels no later band touches go
  straight to the input gradient, and only the tail is carried to the next band of the image:
  no frame-sized buffer. Bit for bit the NumPy path's result.
- `dz_mask`: dz = dy times the relu mask (its packed bits unpacked 8 at a time into a byte
  per output, as `np.unpackbits` does, then one pass), and each filter's sum of dz (the bias
  gradient, summed in float64: not the NumPy path's order).
- `epilogue`: the forward's bias add, relu and packed relu mask in one pass over the chunk's
  GEMM output (NumPy: three passes and a boolean array). Bit for bit the NumPy path's result.

Callers check `jit.enabled()` and that the arrays are NumPy's, and keep the NumPy path.
"""

from __future__ import annotations

import numpy as np

from layerflow._src.backend import jit

# Byte b's 8 bits, most significant first, as 8 bytes of 0 or 1 read as one uint64.
_UNPACK = np.unpackbits(np.arange(256, dtype=np.uint8)).view(np.uint64)


# Numba vectorizes a loop only where each access is a 1-D slice indexed by the loop's own
# variable (`dst[c] = src[c] + b`); `out[m, o + c]` runs 5x slower (it checks for negative
# indices on every element), and a slice assignment `dst[:] = src` 2x slower than that loop,
# so every inner loop below is written so; and rows are walked without a division per row.


@jit.kernel
def frame_cols(x5, n0, nimg, start, offs, f, wp, top, left, out):
    """The patches `out` (G, T, Cg, p) of one chunk straight from the input `x5` (G, Cg, N,
    H, W): row (t, c) is frame pixels start + offs[t] ... + p - 1 of channel c, in the padded
    frames (HP x WP = f pixels, `top` and `left` padding) of images n0 .. n0 + nimg - 1 one
    after the other, zero past them: the NumPy path's tap slices of its frame buffer. Each
    channel's pixels [start, start + p + tail) are laid out once in a small buffer that stays
    in L1, then copied once per tap: no image-sized frame buffer, no second pass over it."""
    ng, nt, ncg, p = out.shape
    h, w = x5.shape[3], x5.shape[4]
    hp = f // wp
    reach = 0
    for t in range(nt):
        reach = max(reach, offs[t])
    span = p + reach
    band = np.empty(span, dtype=out.dtype)
    img0 = start // f
    row0 = (start - img0 * f) // wp
    col0 = start - img0 * f - row0 * wp
    for g in range(ng):
        for c in range(ncg):
            img, row, col, u = img0, row0, col0, 0
            while u < span:  # the frames' pixels, row by row (no division per row)
                run = min(wp - col, span - u)
                seg = band[u : u + run]
                r = row - top
                lo = max(col, left)
                hi = min(col + run, left + w)
                if img >= nimg or r < 0 or r >= h or lo >= hi:
                    for q in range(run):
                        seg[q] = 0
                else:
                    for q in range(lo - col):
                        seg[q] = 0
                    src = x5[g, c, n0 + img, r, lo - left : hi - left]
                    part = seg[lo - col : hi - col]
                    for q in range(hi - lo):
                        part[q] = src[q]
                    for q in range(hi - col, run):
                        seg[q] = 0
                u += run
                col = 0
                row += 1
                if row == hp:
                    row = 0
                    img += 1
            for t in range(nt):
                src = band[offs[t] : offs[t] + p]
                dst = out[g, t, c]
                for q in range(p):
                    dst[q] = src[q]


@jit.kernel
def dx_taps(d4, offs, carry, carried, dx, n0, start, nfin, f, wp, top, left):
    """Add one chunk's patch gradients `d4` (G, T, Cg, p) into the input gradient `dx`
    (G, Cg, N, H, W).

    Patch column u of tap t goes to frame pixel start + u + offs[t] (frames of HP x WP = f
    pixels, of images n0, n0+1, ... one after the other, `top` and `left` padding). The
    pixels [start, start + tail) first get `carry` (G, Cg, tail), the previous band's sums,
    when `carried`; the first `nfin` pixels from `start` are final and written to `dx` where
    they are no padding; the `tail` after the chunk's p go back to `carry`."""
    ng, nt, ncg, p = d4.shape
    tail = carry.shape[2]
    h, w = dx.shape[3], dx.shape[4]
    hp = f // wp
    acc = np.empty(p + tail, dtype=d4.dtype)
    img0 = start // f
    row0 = (start - img0 * f) // wp
    col0 = start - img0 * f - row0 * wp
    for g in range(ng):
        for c in range(ncg):
            for u in range(p + tail):
                acc[u] = 0
            if carried:
                kept = carry[g, c]
                for u in range(tail):
                    acc[u] = kept[u]
            for t in range(nt):
                dst = acc[offs[t] : offs[t] + p]
                src = d4[g, t, c]
                for u in range(p):
                    dst[u] += src[u]
            img, row, col, u = img0, row0, col0, 0
            while u < nfin:  # the final pixels, row by row (no division per row)
                run = min(wp - col, nfin - u)
                r = row - top
                lo = max(col, left)
                hi = min(col + run, left + w)
                if 0 <= r < h and lo < hi:
                    out = dx[g, c, n0 + img, r, lo - left : hi - left]
                    src = acc[u + lo - col : u + hi - col]
                    for q in range(hi - lo):
                        out[q] = src[q]
                u += run
                col = 0
                row += 1
                if row == hp:
                    row = 0
                    img += 1
            kept = carry[g, c]
            src = acc[p : p + tail]
            for u in range(tail):
                kept[u] = src[u]


@jit.kernel
def dz_mask(dy, n0, r0, ni, nr, bits, masked, dz, zimg, zrow, sums, want_sums):
    """dz = dy times the relu mask when `masked`, and each filter's sum of dz into `sums` (M,)
    when `want_sums` (summed by column in float64, then the columns: not NumPy's order).
    dy (M, N, OH, OW) (C order) is read at images n0..n0+ni-1, rows r0..r0+nr-1; dz (M, P)
    gets output (i, r, c) at i*zimg + r*zrow + c; the mask's bit of (m, i, r, c) is bit
    ((m*ni + i)*nr + r)*OW + c of `bits`, most significant first (as `np.packbits` packs)."""
    nm, nw = dy.shape[0], dy.shape[3]
    lanes = np.zeros(nw)  # the sums by column, in float64: independent adds that vectorize
    if masked:  # the bits as bytes, 8 at a time (as np.unpackbits does), then multiplied
        nbytes = -(-nm * ni * nr * nw // 8)
        flags = np.empty(8 * nbytes, dtype=np.uint8)
        wide = flags.view(np.uint64)
        for j in range(nbytes):
            wide[j] = _UNPACK[bits[j]]
    else:
        flags = np.empty(0, dtype=np.uint8)
    k = 0
    for m in range(nm):
        lanes[:] = 0
        for i in range(ni):
            for r in range(nr):
                src = dy[m, n0 + i, r0 + r]
                o = i * zimg + r * zrow
                dst = dz[m, o : o + nw]
                if masked and want_sums:
                    fl = flags[k : k + nw]
                    for c in range(nw):
                        v = src[c] * fl[c]  # 0 * dy: NaN, -0.0 as NumPy's product
                        dst[c] = v
                        lanes[c] += v
                elif masked:
                    fl = flags[k : k + nw]
                    for c in range(nw):
                        dst[c] = src[c] * fl[c]
                elif want_sums:
                    for c in range(nw):
                        v = src[c]
                        dst[c] = v
                        lanes[c] += v
                else:
                    for c in range(nw):
                        dst[c] = src[c]
                k += nw
        if want_sums:
            s = 0.0
            for c in range(nw):
                s += lanes[c]
            sums[m] = s


@jit.kernel
def epilogue(z, zimg, zrow, bias, has_bias, relu, out, o0, ni, nr, nw, bits, want_bits):
    """out[m, o0 + (i*R + r)*OW + c] = z[m, i*zimg + r*zrow + c] (+ bias[m]; without, any
    1-element array) for I = ni images, R = nr rows and OW = nw columns, then relu as
    `np.maximum(out, 0)` does (NaN kept, -0.0 to +0.0); with `want_bits`, `bits` gets
    `np.packbits(out > 0)` of the chunk's outputs in (M, I, R, OW) order."""
    nm = z.shape[0]
    k = 0
    byte = 0
    for m in range(nm):
        b = bias[m if has_bias else 0]  # one type either way (a float32 + an int is float64)
        for i in range(ni):
            for r in range(nr):
                zo = i * zimg + r * zrow
                oo = o0 + (i * nr + r) * nw
                src = z[m, zo : zo + nw]
                dst = out[m, oo : oo + nw]
                if has_bias:
                    for c in range(nw):
                        dst[c] = src[c] + b
                else:
                    for c in range(nw):
                        dst[c] = src[c]
                if relu:
                    for c in range(nw):
                        if dst[c] <= 0:  # -0.0 too: np.maximum(-0.0, 0) is +0.0
                            dst[c] = 0
                    if want_bits:
                        c = 0
                        while c < nw and (k & 7) != 0:  # the byte a previous row began
                            byte = (byte << 1) | (dst[c] > 0)
                            c += 1
                            k += 1
                            if (k & 7) == 0:
                                bits[(k >> 3) - 1] = byte
                                byte = 0
                        seg = dst[c:]
                        nb = (nw - c) >> 3
                        base = k >> 3
                        for j in range(nb):  # whole bytes: 8 compares, unrolled
                            v = 0
                            for q in range(8):
                                v = (v << 1) | (seg[8 * j + q] > 0)
                            bits[base + j] = v
                        k += 8 * nb
                        for q in range(8 * nb, seg.size):  # a byte the next row ends
                            byte = (byte << 1) | (seg[q] > 0)
                            k += 1
    if want_bits and (k & 7) != 0:
        bits[k >> 3] = byte << (8 - (k & 7))
