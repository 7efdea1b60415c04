"""Convolution ops, NHWC (TF's default), SAME/VALID/explicit padding, strides, dilations, groups.

The arithmetic lives in `conv_kernels` (chunked im2col + one batched GEMM per chunk, in a fixed
temporary budget). Here are the ops: the convolution, its two gradients (each is the others'
gradient, so second derivatives work), and the convolution with bias and relu fused, which the
Keras layers use so that a layer keeps one activation instead of three. Depthwise convolution
is the grouped convolution with one input channel per group.

Pooling moved to `pool_ops`; its public functions are re-exported here for old imports.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.autodiff.op import input_needed, op, recording
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, reduce_sum, relu, reshape
from layerflow._src.ops.pool_ops import (  # noqa: F401 - re-exported: the old import path
    avg_pool,
    avg_pool1d,
    avg_pool2d,
    max_pool,
    max_pool1d,
    max_pool2d,
)

# Old private names some callers used.
_ints, _geometry, _padding_attr = _k.ints, _k.geometry, _k.padding_attr
_im2col, _col2im = _k.im2col, _k.col2im

# attrs of every conv op: (strides, dilations, padding, groups).


def _plan(x_shape: tuple, w_shape: tuple, attrs: tuple, name: str) -> _k.Conv:
    return _k.plan(x_shape, w_shape, attrs, name)


# Residuals (see autodiff/op.py): a recorded forward saves `(cols, mask)` for its gradient:
# the im2col patches when they were built in one chunk (within the temporary budget; larger
# convolutions rebuild them chunk by chunk in the backward pass), and for the fused relu the
# mask of positive outputs, one bit per value, so the gradient needs neither the output nor a
# full-size mask. Without a recording tape nothing is saved.


def _forward(xp: Any, x: Any, w: Any, b: Any, attrs: tuple, relu: bool, name: str) -> Any:
    cv = _plan(x.shape, w.shape, attrs, name)
    out, cols, mask = _k.conv_forward(xp, x, w, cv, b, relu, keep=recording())
    return out, (None if cols is None and mask is None else (cols, mask))


def _backward(dy: Any, x: Any, w: Any, attrs: tuple, saved: Any, need: tuple) -> tuple:
    """(dx, dw, db) tensors on arrays, one chunked pass (no outer tape records)."""
    device = dy._device
    xa, wa = x._data, w._data
    cols, mask = saved if saved is not None else (None, None)
    cv = _plan(xa.shape, wa.shape, attrs, "conv2d_backprop")
    grads = _k.conv_backward(device.xp, xa, wa, dy._data, cv, x_shape=tuple(xa.shape),
                             need_x=need[0], need_w=need[1], need_b=need[2], mask=mask,
                             cols=cols if need[1] else None)  # fmt: skip
    return tuple(None if g is None else Tensor(g, device) for g in grads)


def _op_grads(dz: Any, x: Any, w: Any, attrs: tuple, cols: Any, need: tuple) -> tuple:
    """(dx, dw, db) written with ops, for a backward pass that an outer tape records."""
    x_shape, w_shape = tuple(x._data.shape), tuple(w._data.shape)
    return (
        _conv_input_grad(dz, w, x_shape, attrs) if need[0] else None,
        _conv_filter_grad(x, dz, w_shape, attrs, cols) if need[1] else None,
        reduce_sum(dz, axis=[0, 1, 2]) if need[2] else None,
    )


@op("conv2d", 2, saves=True, grad_uses_out=False)
def _conv(xp: Any, x: Any, w: Any, attrs: tuple) -> Any:
    return _forward(xp, x, w, None, attrs, False, "conv2d")


@_conv.grad
def _(dy: Any, out: Any, x: Any, w: Any, attrs: tuple, saved: Any = None) -> Any:
    # The first layer's input is the data batch: its col2im is skipped unless someone asks.
    need = (input_needed(0), input_needed(1), False)
    if not recording():
        return _backward(dy, x, w, attrs, saved, need)[:2]
    return _op_grads(dy, x, w, attrs, saved[0] if saved else None, need)[:2]


@op("conv2d_bias_activation", 3, saves=True, grad_uses_out=False)
def _conv_bias_act(xp: Any, x: Any, w: Any, b: Any, attrs: tuple, relu: bool) -> Any:
    return _forward(xp, x, w, b, attrs, relu, "conv2d")


@_conv_bias_act.grad
def _(dy: Any, out: Any, x: Any, w: Any, b: Any, attrs: tuple, relu: bool,
      saved: Any = None) -> Any:  # fmt: skip
    need = (input_needed(0), input_needed(1), input_needed(2))
    saved = _saved_or_recomputed(saved, x, w, b, attrs, relu)
    if not recording():
        return _backward(dy, x, w, attrs, saved, need)
    # An outer tape records this backward pass: differentiable ops only. The relu mask is
    # piecewise constant in x, w and b (its derivative is zero), so multiplying by it as a
    # constant is exact, as relu's own gradient is.
    cols, mask = saved
    dz = dy
    if relu:
        cv = _plan(tuple(x._data.shape), tuple(w._data.shape), attrs, "conv2d_backprop")
        dz = dy * Tensor(_k.relu_mask(dy._device.xp, mask, cv, dy._data.dtype), dy._device)
    return _op_grads(dz, x, w, attrs, cols, need)


def _saved_or_recomputed(saved: Any, x: Any, w: Any, b: Any, attrs: tuple, relu: bool) -> Any:
    """The forward's residuals; rebuilt from the inputs if a relu's mask was not saved (the
    gradient gets no output to read it from)."""
    if relu and (saved is None or saved[1] is None):
        cv = _plan(tuple(x._data.shape), tuple(w._data.shape), attrs, "conv2d_backprop")
        _, cols, mask = _k.conv_forward(x._device.xp, x._data, w._data, cv, b._data, True,
                                        keep=True)  # fmt: skip
        return cols, mask
    return saved if saved is not None else (None, None)


@op("conv2d_backprop_input", 2, grad_uses_out=False)
def _conv_input_grad(xp: Any, dy: Any, w: Any, x_shape: tuple, attrs: tuple) -> Any:
    cv = _plan(x_shape, w.shape, attrs, "conv2d_backprop_input")
    if tuple(dy.shape[1:3]) != cv.geo[0] or dy.shape[3] != cv.m:
        raise ValueError(
            f"the gradient has shape {tuple(dy.shape)} but an input of shape {x_shape} and "
            f"filters {tuple(w.shape)} give spatial shape {cv.geo[0]} with {cv.m} channels"
        )
    return _k.conv_backward(xp, None, w, dy, cv, x_shape=tuple(x_shape), need_x=True,
                            need_w=False)[0]  # fmt: skip


@_conv_input_grad.grad
def _(g: Any, out: Any, dy: Any, w: Any, x_shape: tuple, attrs: tuple) -> Any:
    w_shape = tuple(w._data.shape)
    return (
        _conv(g, w, attrs) if input_needed(0) else None,
        _conv_filter_grad(g, dy, w_shape, attrs) if input_needed(1) else None,
    )


@op("conv2d_backprop_filter", 2, grad_uses_out=False)
def _conv_filter_grad(xp: Any, x: Any, dy: Any, w_shape: tuple, attrs: tuple,
                      cols: Any = None) -> Any:  # fmt: skip
    """The filter gradient; `cols`, when given, are x's patches saved by the forward (a memo:
    the value is the same without it)."""
    cv = _plan(x.shape, w_shape, attrs, "conv2d_backprop_filter")
    return _k.conv_backward(xp, x, None, dy, cv, x_shape=tuple(x.shape), need_x=False,
                            need_w=True, cols=cols)[1]  # fmt: skip


@_conv_filter_grad.grad
def _(g: Any, out: Any, x: Any, dy: Any, w_shape: tuple, attrs: tuple, cols: Any = None) -> Any:
    x_shape = tuple(x._data.shape)
    return (
        _conv_input_grad(dy, g, x_shape, attrs) if input_needed(0) else None,
        _conv(x, g, attrs) if input_needed(1) else None,
    )


# --- public convolutions --------------------------------------------------------------------------


def _is_channels_first(x: Any, data_format: str | None, opname: str) -> bool:
    fmt = (data_format or "NHWC").upper()
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"{opname}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}.")
    return fmt == "NCHW"


def _check_ranks(x: Any, w: Any, opname: str, wdesc: str) -> None:
    if x._data.ndim != 4 or w._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname} needs input [N, H, W, C] and {wdesc} (rank 4), got shapes "
            f"{tuple(x._data.shape)} and {tuple(w._data.shape)}.",
        )


def _groups(x: Any, w: Any, groups: Any, opname: str) -> int:
    """TF's rule: the input's channels are `groups` times the filters' input channels (groups
    inferred when not given); the output channels must split evenly too."""
    c, cg, m = int(x._data.shape[3]), int(w._data.shape[2]), int(w._data.shape[3])
    shapes = f"(input {tuple(x._data.shape)}, filters {tuple(w._data.shape)})"
    if groups is None:
        if cg == 0 or c % cg:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: the input has {c} channels but the filters expect "
                f"{cg} {shapes}: the input's channels must equal the filters' third dimension, "
                "or be a multiple of it for a grouped convolution.",
            )  # fmt: skip
        groups = c // cg
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{opname}: groups must be a positive integer, got {groups!r}.")
    if cg * groups != c:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: with groups={groups} the filters' third dimension must be "
            f"{c} / {groups} input channels per group, but the input has {c} channels and the "
            f"filters expect {cg} {shapes}.",
        )  # fmt: skip
    if m % groups:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: the filters' {m} output channels cannot be split into "
            f"groups={groups} equal groups {shapes}; use a multiple of {groups} filters.",
        )  # fmt: skip
    return groups


def _prepare(input: Any, filters: Any, strides: Any, padding: Any, data_format: Any,  # noqa: A002
             dilations: Any, groups: Any, opname: str) -> tuple:  # fmt: skip
    x, w = _as_tensor(input), _as_tensor(filters)
    nchw = _is_channels_first(x, data_format, opname)
    if nchw:
        x = transpose(x, (0, 2, 3, 1))
    _check_ranks(x, w, opname, "filters [KH, KW, C_in / groups, C_out]")
    g = _groups(x, w, groups, opname)
    attrs = (_k.ints(strides, 2, "strides", opname),
             _k.ints(1 if dilations is None else dilations, 2, "dilations", opname),
             _k.padding_attr(padding), g)  # fmt: skip
    return x, w, attrs, nchw


def conv2d(input: Any, filters: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
           dilations: Any = None, name: str | None = None,
           groups: int | None = None) -> Any:  # fmt: skip
    """2-D convolution of `input` [N, H, W, C] with `filters` [KH, KW, C / groups, O].

    `groups` splits the channels into that many independent convolutions (inferred, as TF
    does, from C and the filters' third dimension when not given).

    >>> import layerflow as tf
    >>> x = tf.ones((1, 3, 3, 1)); k = tf.ones((2, 2, 1, 1))
    >>> tf.nn.conv2d(x, k, strides=1, padding="VALID").shape
    TensorShape([1, 2, 2, 1])
    >>> tf.nn.conv2d(tf.ones((1, 3, 3, 4)), tf.ones((1, 1, 2, 6)), 1, "SAME", groups=2).shape
    TensorShape([1, 3, 3, 6])
    """
    x, w, attrs, nchw = _prepare(input, filters, strides, padding, data_format, dilations,
                                 groups, "conv2d")  # fmt: skip
    y = _conv(x, w, attrs)
    return transpose(y, (0, 3, 1, 2)) if nchw else y


def fused_conv2d(input: Any, filters: Any, bias: Any, strides: Any, padding: Any,  # noqa: A002
                 data_format: str = "NHWC", dilations: Any = None, groups: int | None = None,
                 activation: str | None = None) -> Any:  # fmt: skip
    """`activation(conv2d(input, filters) + bias)` as one op (`activation` None or "relu";
    `bias` [O] or None): the layer keeps one activation, and the backward pass applies the relu
    mask chunk by chunk instead of allocating it.

    >>> import layerflow as tf
    >>> from layerflow._src.ops.conv_ops import fused_conv2d
    >>> y = fused_conv2d(tf.ones((1, 2, 2, 1)), tf.ones((1, 1, 1, 2)), tf.constant([-2.0, 1.0]),
    ...                  1, "VALID", activation="relu")
    >>> y[0, 0, 0].numpy()
    array([0., 2.], dtype=float32)
    """
    if activation not in (None, "relu"):
        raise ValueError(f"fused_conv2d: activation must be None or 'relu', got {activation!r}.")
    x, w, attrs, nchw = _prepare(input, filters, strides, padding, data_format, dilations,
                                 groups, "conv2d")  # fmt: skip
    if bias is None:
        y = _conv(x, w, attrs)
        if activation == "relu":
            y = relu(y)
    else:
        b = _as_tensor(bias)
        if tuple(b._data.shape) != (w._data.shape[3],):
            raise errors.InvalidArgumentError(
                None, "conv2d", f"conv2d: the bias must have shape ({w._data.shape[3]},), one "
                f"value per filter, got {tuple(b._data.shape)}.",
            )  # fmt: skip
        y = _conv_bias_act(x, w, b, attrs, activation == "relu")
    return transpose(y, (0, 3, 1, 2)) if nchw else y


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                     data_format: str | None = None, dilations: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """Per-channel convolution: `filter` [KH, KW, C, M] gives C * M output channels (channel
    c * M + m is input channel c convolved with filter[:, :, c, m]): the grouped convolution
    with groups = C and the filter seen as [KH, KW, 1, C * M].

    >>> import layerflow as tf
    >>> tf.nn.depthwise_conv2d(tf.ones((1, 4, 4, 3)), tf.ones((3, 3, 3, 2)), [1, 1, 1, 1],
    ...                        "VALID").shape
    TensorShape([1, 2, 2, 6])
    """
    x, w = _as_tensor(input), _as_tensor(filter)
    nchw = _is_channels_first(x, data_format, "depthwise_conv2d")
    if nchw:
        x = transpose(x, (0, 2, 3, 1))
    _check_ranks(x, w, "depthwise_conv2d", "filter [KH, KW, C, M]")
    kh, kw, c, m = (int(v) for v in w._data.shape)
    if x._data.shape[3] != c:
        raise errors.InvalidArgumentError(
            None,
            "depthwise_conv2d",
            f"depthwise_conv2d: the input has {x._data.shape[3]} channels but the filter "
            f"{tuple(w._data.shape)} expects {c}.",
        )
    attrs = (_k.ints(strides, 2, "strides", "depthwise_conv2d"),
             _k.ints(1 if dilations is None else dilations, 2, "dilations", "depthwise_conv2d"),
             _k.padding_attr(padding), c)  # fmt: skip
    y = _conv(x, reshape(w, (kh, kw, 1, c * m)), attrs)
    return transpose(y, (0, 3, 1, 2)) if nchw else y


def conv1d(input: Any, filters: Any, stride: Any, padding: Any, data_format: str = "NWC",  # noqa: A002
           dilations: Any = None, name: str | None = None,
           groups: int | None = None) -> Any:  # fmt: skip
    """1-D convolution of `input` [N, W, C] with `filters` [K, C / groups, O] (conv2d, H = 1).

    >>> import layerflow as tf
    >>> tf.nn.conv1d(tf.ones((2, 10, 3)), tf.ones((3, 3, 4)), 1, "VALID").shape
    TensorShape([2, 8, 4])
    """
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
    s = _k.ints(stride, 1, "stride", "conv1d")[0]
    d = _k.ints(1 if dilations is None else dilations, 1, "dilations", "conv1d")[0]
    pad = padding if isinstance(padding, str) else [[0, 0]] + [list(p) for p in padding][-1:]
    x4 = reshape(x, (x._data.shape[0], 1) + tuple(x._data.shape[1:]))
    w4 = reshape(w, (1,) + tuple(w._data.shape))
    y = conv2d(x4, w4, [1, s], pad, dilations=[1, d], groups=groups)
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
    attrs = (_k.ints(strides, 2, "strides", "conv2d_transpose"),
             _k.ints(1 if dilations is None else dilations, 2, "dilations", "conv2d_transpose"),
             _k.padding_attr(padding), 1)  # fmt: skip
    return _conv_input_grad(x, w, out_shape, attrs)
