"""Convolution and pooling, NHWC (TF's default), SAME/VALID/explicit padding, strides, dilations.

A convolution is im2col feeding ONE matrix product: the patches are gathered with one strided
slice copy per kernel tap (KH*KW copies, never a loop over pixels) into a matrix shaped
(KH*KW*C, N*OH*OW), which meets the filter reshaped to (KH*KW*C, O). The gradient for the
input scatters the patch gradients back the same way (col2im); the gradient for the filter is
the patches' transpose times dy. The three ops are each other's gradients, so second
derivatives work. Pooling uses the same tap slices.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, reshape

# --- geometry -------------------------------------------------------------------------------------


def _ints(value: Any, n: int, what: str, opname: str) -> tuple[int, ...]:
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


def _geometry(
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


def _tap(i: int, j: int, geo: Any) -> tuple:
    """The slice of the padded NHWC input that kernel tap (i, j) reads for every output pixel."""
    (oh, ow), _, (sh, sw), (dh, dw) = geo
    return (
        slice(None),
        slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
        slice(j * dw, j * dw + sw * (ow - 1) + 1, sw),
        slice(None),
    )


def _tap_cf(i: int, j: int, geo: Any) -> tuple:
    """The same slice of a channels-first (C, N, H, W) padded input."""
    return (slice(None),) + _tap(i, j, geo)[:3]


def _pad(xp: Any, x: Any, pads: Any, value: Any = 0) -> Any:
    if not any(b or a for b, a in pads):
        return x
    return xp.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),), constant_values=value)


def _crop(xp: Any, xpad: Any, pads: Any, shape: tuple[int, ...]) -> Any:
    (t, _), (left, _) = pads
    return xpad[:, t : t + shape[1], left : left + shape[2], :]


# The patch matrix is (KH*KW*C, N*OH*OW): rows ordered (i, j, c) as the filter [KH, KW, C, O]
# reshapes, one column per output pixel. Built from a channels-first copy of the input, every
# tap copies whole runs of contiguous pixels (an NHWC layout would copy one float at a time with
# a stride of KH*KW*C floats when C is small, ten times slower), and every product below is one
# GEMM on contiguous or plainly transposed operands.


def _cf(xp: Any, a: Any) -> Any:
    """The (C, N, H, W) contiguous form of an NHWC array: free when `a` is a channels-first
    array seen through a transpose, as every output of this module is."""
    return xp.ascontiguousarray(a.transpose(3, 0, 1, 2))


def _im2col(xp: Any, x: Any, kh: int, kw: int, geo: Any) -> Any:
    (oh, ow), ((t, b), (left, r)), _, _ = geo
    n, h, w, c = x.shape
    if t or b or left or r:
        xt = xp.zeros((c, n, h + t + b, w + left + r), dtype=x.dtype)
        xt[:, :, t : t + h, left : left + w] = x.transpose(3, 0, 1, 2)
    else:
        xt = _cf(xp, x)
    cols = xp.empty((kh, kw, c, n, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[i, j] = xt[_tap_cf(i, j, geo)]
    return cols.reshape(kh * kw * c, n * oh * ow)


def _col2im(xp: Any, dcols: Any, x_shape: tuple[int, ...], kh: int, kw: int, geo: Any) -> Any:
    (oh, ow), ((t, b), (left, r)), (sh, sw), (dh, dw) = geo
    n, h, w, c = x_shape
    hp, wp = h + t + b, w + left + r
    if dcols.shape[1] == n * oh * wp != n * oh * ow:
        # Rows as wide as the padded input (`_dcols(..., wide=True)`, stride 1), the extra
        # columns zero: every tap's patch gradient then lands on ONE contiguous run of the
        # flattened input, one add of oh * wp floats instead of oh * N * C adds of ow floats.
        # The zeros spill onto the next row's first pixels, adding nothing; past the image's
        # end there are only such zeros, which the clipped slice leaves out.
        d = dcols.reshape(kh, kw, c * n, oh * wp)
        flat = xp.zeros((c * n, hp * wp), dtype=dcols.dtype)
        for i in range(kh):
            for j in range(kw):
                dst = flat[:, i * dh * wp + j * dw :][:, : oh * wp]
                dst += d[i, j][:, : dst.shape[1]]
        dxt = flat.reshape(c, n, hp, wp)
    else:
        d6 = dcols.reshape(kh, kw, c, n, oh, ow)
        dxt = xp.zeros((c, n, hp, wp), dtype=dcols.dtype)
        for i in range(kh):
            for j in range(kw):
                dxt[_tap_cf(i, j, geo)] += d6[i, j]
    if t or b or left or r:
        dxt = xp.ascontiguousarray(dxt[:, :, t : t + h, left : left + w])
    return dxt.transpose(1, 2, 3, 0)


# --- the three convolution ops (each is the others' gradient) -------------------------------------


def _contract(xp: Any, cols: Any, w: Any, out_hw: tuple, depthwise: bool) -> Any:
    kh, kw, c, m = w.shape
    p = cols.shape[1]
    n = p // (out_hw[0] * out_hw[1])
    if depthwise:
        out = xp.einsum("kcp,kcm->pcm", cols.reshape(kh * kw, c, p), w.reshape(kh * kw, c, m),
                        optimize=True)  # fmt: skip
        return out.reshape(n, *out_hw, c * m)
    # (O, K) @ (K, P): the output is channels-first, handed on as an NHWC view of it, so the
    # bias, the activation, the next pool and the next im2col all read whole rows.
    out = w.reshape(kh * kw * c, m).T @ cols
    return out.reshape(m, n, *out_hw).transpose(1, 2, 3, 0)


def _dcols(xp: Any, dy: Any, w: Any, depthwise: bool, wide: int = 0) -> Any:
    """The patch gradients (KH*KW*C, P); with `wide`, each dy row is zero-padded to `wide`
    columns first, the layout `_col2im`'s contiguous runs need."""
    kh, kw, c, m = w.shape
    if depthwise:
        dy3 = dy.reshape(-1, c, m)
        d = xp.einsum("pcm,kcm->kcp", dy3, w.reshape(kh * kw, c, m), optimize=True)
        return d.reshape(kh * kw * c, -1)
    dyc = _cf(xp, dy)
    if wide > dyc.shape[3]:
        padded = xp.zeros(dyc.shape[:3] + (wide,), dtype=dyc.dtype)
        padded[..., : dyc.shape[3]] = dyc
        dyc = padded
    return w.reshape(kh * kw * c, m) @ dyc.reshape(m, -1)


def _dfilter(xp: Any, cols: Any, dy: Any, w_shape: tuple[int, ...], depthwise: bool) -> Any:
    kh, kw, c, m = w_shape
    if depthwise:
        dy3 = dy.reshape(-1, c, m)
        d = xp.einsum("kcp,pcm->kcm", cols.reshape(kh * kw, c, -1), dy3, optimize=True)
        return d.reshape(w_shape)
    return (cols @ _cf(xp, dy).reshape(m, -1).T).reshape(w_shape)


def _geo_for(x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: tuple, name: str) -> Any:
    strides, dilations, padding = attrs
    outs, pads = _geometry(x_shape[1:3], w_shape[:2], strides, dilations, padding, name)
    return outs, pads, strides, dilations


# Patches built by a recorded forward, for the filter gradient of the same input and geometry:
# {(id(x), kh, kw, attrs): (x, cols)}. An entry lives as long as the forward's output array (a
# finalizer drops it), that is as long as a tape can still ask for the gradient; without a
# recording tape nothing is kept.
_PATCHES: dict[tuple, tuple[Any, Any]] = {}


def _patches(xp: Any, x: Any, kh: int, kw: int, geo: Any, attrs: tuple) -> Any:
    entry = _PATCHES.get((id(x), kh, kw, attrs))
    if entry is not None and entry[0] is x:
        return entry[1]
    return _im2col(xp, x, kh, kw, geo)


@op("conv2d", 2)
def _conv(xp: Any, x: Any, w: Any, attrs: tuple, depthwise: bool) -> Any:
    geo = _geo_for(x.shape, w.shape, attrs, "conv2d")
    kh, kw = w.shape[0], w.shape[1]
    cols = _im2col(xp, x, kh, kw, geo)
    out = _contract(xp, cols, w, geo[0], depthwise)
    if _tape._state.tapes:
        key = (id(x), kh, kw, attrs)
        try:
            weakref.finalize(out, _PATCHES.pop, key, None)
        except TypeError:  # an array type without weak references: recompute instead
            return out
        _PATCHES[key] = (x, cols)
    return out


@_conv.grad
def _(dy: Any, out: Any, x: Any, w: Any, attrs: tuple, depthwise: bool) -> Any:
    # The first layer's input is the data batch: its col2im is skipped unless someone asks.
    x_shape, w_shape = tuple(x._data.shape), tuple(w._data.shape)
    return (
        _conv_input_grad(dy, w, x_shape, attrs, depthwise) if input_needed(0) else None,
        _conv_filter_grad(x, dy, w_shape, attrs, depthwise) if input_needed(1) else None,
    )


@op("conv2d_backprop_input", 2)
def _conv_input_grad(xp: Any, dy: Any, w: Any, x_shape: tuple, attrs: tuple,
                     depthwise: bool) -> Any:  # fmt: skip
    geo = _geo_for(x_shape, w.shape, attrs, "conv2d_backprop_input")
    if tuple(dy.shape[1:3]) != geo[0]:
        raise ValueError(
            f"the gradient has spatial shape {tuple(dy.shape[1:3])} but an input of shape "
            f"{x_shape} gives {geo[0]}"
        )
    (left, r), strides = geo[1][1], geo[2]
    wide = x_shape[2] + left + r if strides == (1, 1) and not depthwise else 0
    dcols = _dcols(xp, dy, w, depthwise, wide)
    return _col2im(xp, dcols, x_shape, w.shape[0], w.shape[1], geo)


@_conv_input_grad.grad
def _(g: Any, out: Any, dy: Any, w: Any, x_shape: tuple, attrs: tuple, depthwise: bool) -> Any:
    w_shape = tuple(w._data.shape)
    return (
        _conv(g, w, attrs, depthwise) if input_needed(0) else None,
        _conv_filter_grad(g, dy, w_shape, attrs, depthwise) if input_needed(1) else None,
    )


@op("conv2d_backprop_filter", 2)
def _conv_filter_grad(xp: Any, x: Any, dy: Any, w_shape: tuple, attrs: tuple,
                      depthwise: bool) -> Any:  # fmt: skip
    geo = _geo_for(x.shape, w_shape, attrs, "conv2d_backprop_filter")
    cols = _patches(xp, x, w_shape[0], w_shape[1], geo, attrs)
    return _dfilter(xp, cols, dy, w_shape, depthwise)


@_conv_filter_grad.grad
def _(g: Any, out: Any, x: Any, dy: Any, w_shape: tuple, attrs: tuple, depthwise: bool) -> Any:
    x_shape = tuple(x._data.shape)
    return (
        _conv_input_grad(dy, g, x_shape, attrs, depthwise) if input_needed(0) else None,
        _conv(x, g, attrs, depthwise) if input_needed(1) else None,
    )


# --- public convolutions --------------------------------------------------------------------------


def _is_channels_first(x: Any, data_format: str | None, opname: str) -> bool:
    fmt = (data_format or "NHWC").upper()
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"{opname}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}.")
    return fmt == "NCHW"


def conv2d(input: Any, filters: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
           dilations: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """2-D convolution of `input` [N, H, W, C] with `filters` [KH, KW, C, O].

    >>> import layerflow as tf
    >>> x = tf.ones((1, 3, 3, 1)); k = tf.ones((2, 2, 1, 1))
    >>> tf.nn.conv2d(x, k, strides=1, padding="VALID").shape
    TensorShape([1, 2, 2, 1])
    """
    x, w = _as_tensor(input), _as_tensor(filters)
    nchw = _is_channels_first(x, data_format, "conv2d")
    if nchw:
        x = transpose(x, (0, 2, 3, 1))
    _check_ranks(x, w, "conv2d", "filters [KH, KW, C_in, C_out]")
    if x._data.shape[3] != w._data.shape[2]:
        raise errors.InvalidArgumentError(
            None,
            "conv2d",
            f"conv2d: the input has {x._data.shape[3]} channels (shape {tuple(x._data.shape)}) "
            f"but the filters expect {w._data.shape[2]} (shape {tuple(w._data.shape)}).",
        )
    attrs = (_ints(strides, 2, "strides", "conv2d"),
             _ints(1 if dilations is None else dilations, 2, "dilations", "conv2d"),
             _padding_attr(padding))  # fmt: skip
    y = _conv(x, w, attrs, False)
    return transpose(y, (0, 3, 1, 2)) if nchw else y


def _padding_attr(padding: Any) -> Any:
    if isinstance(padding, str):
        return padding.upper()
    return tuple(tuple(int(v) for v in p) for p in padding)


def _check_ranks(x: Any, w: Any, opname: str, wdesc: str) -> None:
    if x._data.ndim != 4 or w._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname} needs input [N, H, W, C] and {wdesc} (rank 4), got shapes "
            f"{tuple(x._data.shape)} and {tuple(w._data.shape)}.",
        )


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                     data_format: str | None = None, dilations: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """Per-channel convolution: `filter` [KH, KW, C, M] gives C * M output channels."""
    x, w = _as_tensor(input), _as_tensor(filter)
    nchw = _is_channels_first(x, data_format, "depthwise_conv2d")
    if nchw:
        x = transpose(x, (0, 2, 3, 1))
    _check_ranks(x, w, "depthwise_conv2d", "filter [KH, KW, C, M]")
    if x._data.shape[3] != w._data.shape[2]:
        raise errors.InvalidArgumentError(
            None,
            "depthwise_conv2d",
            f"depthwise_conv2d: the input has {x._data.shape[3]} channels but the filter "
            f"{tuple(w._data.shape)} expects {w._data.shape[2]}.",
        )
    attrs = (_ints(strides, 2, "strides", "depthwise_conv2d"),
             _ints(1 if dilations is None else dilations, 2, "dilations", "depthwise_conv2d"),
             _padding_attr(padding))  # fmt: skip
    y = _conv(x, w, attrs, True)
    return transpose(y, (0, 3, 1, 2)) if nchw else y


def conv1d(input: Any, filters: Any, stride: Any, padding: Any, data_format: str = "NWC",  # noqa: A002
           dilations: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """1-D convolution of `input` [N, W, C] with `filters` [K, C, O] (as conv2d with H = 1)."""
    x, w = _as_tensor(input), _as_tensor(filters)
    ncw = (data_format or "NWC").upper() == "NCW"
    if ncw:
        x = transpose(x, (0, 2, 1))
    if x._data.ndim != 3 or w._data.ndim != 3:
        raise errors.InvalidArgumentError(
            None,
            "conv1d",
            f"conv1d needs input [N, W, C] and filters [K, C_in, C_out], got shapes "
            f"{tuple(x._data.shape)} and {tuple(w._data.shape)}.",
        )
    s = _ints(stride, 1, "stride", "conv1d")[0]
    d = _ints(1 if dilations is None else dilations, 1, "dilations", "conv1d")[0]
    pad = padding if isinstance(padding, str) else [[0, 0]] + [list(p) for p in padding][-1:]
    x4 = reshape(x, (x._data.shape[0], 1) + tuple(x._data.shape[1:]))
    w4 = reshape(w, (1,) + tuple(w._data.shape))
    y = conv2d(x4, w4, [1, s], pad, dilations=[1, d])
    y = reshape(y, (y._data.shape[0],) + tuple(y._data.shape[2:]))
    return transpose(y, (0, 2, 1)) if ncw else y


def conv2d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NHWC", dilations: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """The gradient of conv2d with respect to its input: `filters` [KH, KW, O, C] maps
    `input` [N, H, W, C] to `output_shape` [N, OH, OW, O]."""
    x, w = _as_tensor(input), _as_tensor(filters)
    if _is_channels_first(x, data_format, "conv2d_transpose"):
        raise NotImplementedError("conv2d_transpose supports data_format='NHWC' only.")
    out_shape = tuple(int(v) for v in (output_shape.numpy() if hasattr(output_shape, "numpy")
                                       else output_shape))  # fmt: skip
    attrs = (_ints(strides, 2, "strides", "conv2d_transpose"),
             _ints(1 if dilations is None else dilations, 2, "dilations", "conv2d_transpose"),
             _padding_attr(padding))  # fmt: skip
    return _conv_input_grad(x, w, out_shape, attrs, False)


# --- pooling --------------------------------------------------------------------------------------


def _pool_geo(x_shape: tuple, ksize: tuple, strides: tuple, padding: Any, name: str) -> Any:
    outs, pads = _geometry(x_shape[1:3], ksize, strides, (1, 1), padding, name)
    return outs, pads, strides, (1, 1)


def _lowest(xp: Any, dtype: Any) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_tap(xp: Any, x: Any, ksize: tuple, geo: Any) -> Any:
    """(max value, index of the first tap that holds it) for every output element."""
    xpad = _pad(xp, x, geo[1], _lowest(xp, x.dtype))
    best = None
    arg = None
    for t in range(ksize[0] * ksize[1]):
        v = xpad[_tap(t // ksize[1], t % ksize[1], geo)]
        if best is None:
            best = v.copy()
            arg = xp.zeros(v.shape, dtype=np.int32)
        else:
            better = v > best
            best = xp.where(better, v, best)
            arg[better] = t
    return best, arg


@op("max_pool")
def _max_pool(xp: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool")
    return _max_tap(xp, x, ksize, geo)[0]


@_max_pool.grad
def _(dy: Any, out: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    return _max_pool_grad(dy, x, ksize, strides, padding)


@op("max_pool_grad", 2)
def _max_pool_grad(xp: Any, dy: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool_grad")
    _, arg = _max_tap(xp, x, ksize, geo)
    (t, b), (left, r) = geo[1]
    dxpad = xp.zeros((x.shape[0], x.shape[1] + t + b, x.shape[2] + left + r, x.shape[3]), dy.dtype)
    zero = dy.dtype.type(0)
    for k in range(ksize[0] * ksize[1]):
        dxpad[_tap(k // ksize[1], k % ksize[1], geo)] += xp.where(arg == k, dy, zero)
    return _crop(xp, dxpad, geo[1], x.shape)


@_max_pool_grad.grad
def _(g: Any, out: Any, dy: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    return _max_pool_select(g, x, ksize, strides, padding), None


@op("max_pool_select", 2)
def _max_pool_select(xp: Any, g: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    """For every pooling window, the value of `g` where `x` has its maximum."""
    geo = _pool_geo(x.shape, ksize, strides, padding, "max_pool")
    _, arg = _max_tap(xp, x, ksize, geo)
    gpad = _pad(xp, g, geo[1])
    out = xp.zeros(arg.shape, dtype=g.dtype)
    for k in range(ksize[0] * ksize[1]):
        v = gpad[_tap(k // ksize[1], k % ksize[1], geo)]
        out = xp.where(arg == k, v, out)
    return out


@_max_pool_select.grad
def _(dy: Any, out: Any, g: Any, x: Any, ksize: tuple, strides: tuple, padding: Any) -> Any:
    return _max_pool_grad(dy, x, ksize, strides, padding), None


def _window_counts(xp: Any, x_shape: tuple, ksize: tuple, geo: Any, dtype: Any) -> Any:
    """How many real (unpadded) inputs each window covers: TF's SAME average ignores padding."""
    ones = xp.ones((1, x_shape[1], x_shape[2], 1), dtype=dtype)
    opad = _pad(xp, ones, geo[1])
    total = xp.zeros((1,) + tuple(geo[0]) + (1,), dtype=dtype)
    for k in range(ksize[0] * ksize[1]):
        total += opad[_tap(k // ksize[1], k % ksize[1], geo)]
    return total


def _blocks(ksize: tuple, strides: tuple, geo: Any, dtype: Any) -> bool:
    """Whether the windows tile the input without overlap or padding (stride == pool size)."""
    return ksize == strides and not any(b or a for b, a in geo[1]) and dtype.kind == "f"


def _block_mean(xp: Any, x: Any, ksize: tuple, out_hw: tuple) -> Any:
    """Mean of non-overlapping windows by a reshape of the channels-first form: KH + KW - 2
    adds of whole rows, no padding, no window counts; the result is channels-first too."""
    (kh, kw), (oh, ow) = ksize, out_hw
    xc = _cf(xp, x)[:, :, : oh * kh, : ow * kw]
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
    share = _cf(xp, dy) * dy.dtype.type(1.0 / (kh * kw))
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
    xpad = _pad(xp, x, geo[1])
    total = xp.zeros((x.shape[0],) + tuple(geo[0]) + (x.shape[3],), dtype=x.dtype)
    for k in range(ksize[0] * ksize[1]):
        total += xpad[_tap(k // ksize[1], k % ksize[1], geo)]
    return total / _window_counts(xp, x.shape, ksize, geo, x.dtype)


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
    (t, b), (left, r) = geo[1]
    dxpad = xp.zeros((x_shape[0], x_shape[1] + t + b, x_shape[2] + left + r, x_shape[3]), dy.dtype)
    for k in range(ksize[0] * ksize[1]):
        dxpad[_tap(k // ksize[1], k % ksize[1], geo)] += share
    return _crop(xp, dxpad, geo[1], x_shape)


@_avg_pool_grad.grad
def _(g: Any, out: Any, dy: Any, x_shape: tuple, ksize: tuple, strides: tuple,
      padding: Any) -> Any:  # fmt: skip
    return _avg_pool(g, ksize, strides, padding)


def _pool(prim: Any, opname: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
          data_format: str | None) -> Any:  # fmt: skip
    x = _as_tensor(input)
    rank = x._data.ndim
    if rank == 3:  # [N, W, C]: pool over W as an image of height 1
        fmt = "NCW" if (data_format or "").upper() == "NCW" else "NWC"
        if fmt == "NCW":
            x = transpose(x, (0, 2, 1))
        k = (1,) + _ints(ksize, 1, "ksize", opname)
        s = (1,) + _ints(strides, 1, "strides", opname)
        y = prim(reshape(x, (x._data.shape[0], 1) + tuple(x._data.shape[1:])), k, s,
                 _padding_attr(padding))  # fmt: skip
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
    y = prim(x, _ints(ksize, 2, "ksize", opname), _ints(strides, 2, "strides", opname),
             _padding_attr(padding))  # fmt: skip
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
