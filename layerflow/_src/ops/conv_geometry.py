"""Convolution geometry as TF computes it: int-or-list arguments, padding, output sizes, and
the clipped ranges of outputs whose kernel tap falls inside the input; and the layout helpers
the convolution algorithms share (channels-first form, grouped filter, relu mask of a chunk).
Shared by the convolution and pooling kernels; `conv_kernels` re-exports these names."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors


def ints(value: Any, n: int, what: str, opname: str) -> tuple[int, ...]:
    """TF's int-or-list arguments: 1, n or n+2 entries (the batch and channel ones must be 1)."""
    vals = [int(value)] if isinstance(value, int | np.integer) else [int(v) for v in value]
    if len(vals) == 1:
        vals = vals * n
    elif len(vals) == n + 2:
        if vals[0] != 1 or vals[-1] != 1:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: {what} in the batch and channel dimensions must be 1, "
                f"got {vals}.",
            )  # fmt: skip
        vals = vals[1:-1]
    if len(vals) != n or any(v < 1 for v in vals):
        raise ValueError(
            f"{opname}: {what} must be 1, {n} or {n + 2} positive ints, got {value!r}."
        )
    return tuple(vals)


def padding_attr(padding: Any) -> Any:
    if isinstance(padding, str):
        return padding.upper()
    return tuple(tuple(int(v) for v in p) for p in padding)


def geometry(
    in_hw: tuple[int, ...],
    k_hw: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    padding: Any,
    opname: str,
) -> tuple[tuple, tuple]:
    """(output sizes, ((before, after) per spatial axis)) as TF computes them."""
    outs, pads = [], []
    explicit = None
    if not isinstance(padding, str):
        explicit = [tuple(int(v) for v in p) for p in padding]
        if len(explicit) == len(in_hw) + 2:
            explicit = explicit[1:-1]
        if len(explicit) != len(in_hw):
            raise ValueError(f"{opname}: explicit padding needs one [before, after] per axis.")
    else:
        padding = padding.upper()
        if padding not in ("SAME", "VALID"):
            raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}.")
    for i, (n, k, s, d) in enumerate(zip(in_hw, k_hw, strides, dilations)):
        eff = (k - 1) * d + 1
        if explicit is not None:
            before, after = explicit[i]
            out = (n + before + after - eff) // s + 1
        elif padding == "VALID":
            before = after = 0
            out = (n - eff) // s + 1
        else:
            out = -(-n // s)
            total = max((out - 1) * s + eff - n, 0)
            before, after = total // 2, total - total // 2
        if out <= 0:
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: the window of size {eff} (kernel {k}, dilation {d}) does not fit in "
                f"spatial dimension {i} of size {n} with padding {padding!r}: the output would "
                "be empty. Use padding='SAME' or a smaller kernel.",
            )
        outs.append(out)
        pads.append((before, after))
    return tuple(outs), tuple(pads)


def out_range(o0: int, o1: int, off: int, s: int, pad: int, size: int) -> tuple[int, int]:
    """The outputs o in [o0, o1) whose input index o * s + off - pad lies inside [0, size)."""
    lo = max(o0, -(-(pad - off) // s))
    hi = min(o1, (size - 1 + pad - off) // s + 1)
    return lo, max(lo, hi)


def in_slice(lo: int, hi: int, off: int, s: int, pad: int) -> slice:
    start = lo * s + off - pad
    return slice(start, start + (hi - lo - 1) * s + 1, s)


def cf(xp: Any, a: Any) -> Any:
    """The (C, N, H, W) contiguous form of an NHWC array: free when `a` is a channels-first
    array seen through a transpose, as every output of the conv and pool kernels is."""
    return xp.ascontiguousarray(a.transpose(3, 0, 1, 2))


def filter_groups(xp: Any, w: Any, cv: Any) -> Any:
    """The filter (KH, KW, Cg, M) as (groups, K, Mg): row k of group g is tap-channel k."""
    return xp.ascontiguousarray(w.reshape(cv.k, cv.g, cv.m // cv.g).transpose(1, 0, 2))


def chunk_mask(xp: Any, mask: list, i: int, cv: Any, chunk: tuple) -> Any:
    """Chunk `i`'s relu mask, (M, images, rows, OW) booleans, from its packed bits."""
    n0, n1, r0, r1 = chunk
    bits = xp.unpackbits(mask[i])[: cv.m * cv.cols_of(chunk)].view(bool)
    return bits.reshape(cv.m, n1 - n0, r1 - r0, cv.geo[0][1])


def chunk_dz(xp: Any, dyt: Any, mask: Any, i: int, cv: Any, chunk: tuple, out: Any) -> None:
    """Chunk `i`'s dz into `out` (M, images, rows, OW): dy (the (M, N, OH, OW) view `dyt`)
    times the relu mask when there is one."""
    n0, n1, r0, r1 = chunk
    if mask is not None:
        xp.multiply(dyt[:, n0:n1, r0:r1, :], chunk_mask(xp, mask, i, cv, chunk), out=out)
    else:
        out[...] = dyt[:, n0:n1, r0:r1, :]


def images_of(cv: Any) -> int:
    """The most images one chunk of `cv`'s plan holds."""
    return max(n1 - n0 for n0, n1, _, _ in cv.plan)


def add_filter_grad(xp: Any, cols: Any, dz3: Any, dw: Any, i: int, part: list) -> None:
    """Chunk `i`'s share of the filter gradient, patches (groups, K, p) @ dz (groups, Mg, p)^T:
    the first chunk's GEMM writes `dw` itself, the later ones' go through one reused buffer
    kept in `part` and are added (no zeroed dw, no new array per chunk)."""
    if i == 0:
        xp.matmul(cols, dz3.transpose(0, 2, 1), out=dw)
        return
    if not part:
        part.append(xp.empty_like(dw))
    xp.matmul(cols, dz3.transpose(0, 2, 1), out=part[0])
    dw += part[0]
