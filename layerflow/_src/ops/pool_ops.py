"""Max and average pooling, NHWC (TF's default) or NCHW, 1-D and 2-D, SAME/VALID padding.

Outputs are laid out as the input is (channels-first behind an NHWC view when the input is
such a view, as every conv output is). Max pooling runs separable row and column passes over
flat "phase frames" of the input and, when a tape records it, keeps the number of the tap
holding each pass's first maximum, which together pick the first tap of the window holding
its maximum (TF's rule for ties); its gradient adds each output's gradient at that tap's flat
index in one scatter (`pool_kernels.py`). Windows whose maximum is NaN or the dtype's lowest
value fall back to the tap loop below, one strided slice per window tap with the padding
clipped away, whose residual is the window's tap number. Average pooling sums the taps'
slices; windows that tile the input (stride == pool size, no padding) take a reshape path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op, recording
from layerflow._src.framework import errors
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops import pool_avg, pool_jit
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, reshape
from layerflow._src.ops.pool_kernels import (
    _arg_dtype,
    _cf_layout,
    _Codes,
    _empty_like_layout,
    _index_grad,
    _lowest,
    _sep_max,
    _sep_select,
)

__all__ = ["avg_pool", "avg_pool1d", "avg_pool2d", "max_pool", "max_pool1d", "max_pool2d"]


def _pool_geo(x_shape: tuple, ksize: tuple, strides: tuple, padding: Any, name: str) -> Any:
    outs, pads = _k.geometry(tuple(x_shape[1:3]), ksize, strides, (1, 1), padding, name)
    return outs, pads, strides, (1, 1)


def _in_layout_of(xp: Any, a: Any, like: Any) -> Any:
    """`a` (NHWC) laid out as `like` is (see `_empty_like_layout`): elementwise work on views
    of two different layouts walks one of them against its memory order (measured: a 3x3
    max-pool gradient took 68 ms instead of 5 ms), one copy first is far cheaper."""
    if _cf_layout(like) == _cf_layout(a):
        return a
    out = _empty_like_layout(xp, like, a.shape, a.dtype)
    out[...] = a
    return out


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
    if xp is np and pool_jit.usable(x, ksize, geo[2]):
        got = pool_jit.max_pool(x, ksize, geo)
        if got is not None:
            return got[0], (got[1] if keep_arg else None)
    y, codes = _sep_max(xp, x, ksize, geo, keep_arg)
    if codes is not None and not bool((y > _lowest(x.dtype)).all()):
        return _tap_max_and_arg(xp, x, ksize, geo, True)
    return y, codes


def _arg_of(xp: Any, x: Any, ksize: tuple, geo: Any, arg: Any) -> Any:
    if isinstance(arg, pool_jit.TapArgs) and not pool_jit.usable(x, ksize, geo[2]):
        arg = None  # the compiled forward's residual, the kernels since turned off
    return arg if arg is not None else _max_and_arg(xp, x, ksize, geo, True)[1]


@op("max_pool_grad", 2, grad_uses_out=False)
def _max_pool_grad(xp: Any, dy: Any, x: Any, ksize: tuple, strides: tuple, padding: Any,
                   arg: Any = None) -> Any:  # fmt: skip
    """dx of max pooling: dy sent to the first tap holding each window's maximum. `arg` (the
    forward's residual) is a memo: recomputed from x when None."""
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool_grad")
    arg = _arg_of(xp, x, ksize, geo, arg)
    if isinstance(arg, pool_jit.TapArgs):
        return pool_jit.max_pool_grad(dy, x.shape, ksize, geo, arg)
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
    if isinstance(arg, pool_jit.TapArgs):
        return pool_jit.select(g, ksize, geo, arg)
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
    if pool_avg.applies(xp, x.dtype, ksize):  # the same sums in one compiled pass
        return pool_avg.block_mean(x, ksize, out_hw)
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
    if pool_avg.applies(xp, dy.dtype, ksize):
        return pool_avg.block_spread(dy, x_shape, ksize)
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
