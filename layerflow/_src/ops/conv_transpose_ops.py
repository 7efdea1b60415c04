"""The rest of TF's convolution family, composed from the 2-D and 3-D convolution ops.

`convolution` and `tf.conv` pick conv1d/conv2d/conv3d by rank; `conv1d_transpose` and
`conv_transpose` are transposed convolutions (the input gradient of a convolution); atrous
(dilated) and separable convolutions; and the raw gradient ops TF exports
(`depthwise_conv2d_backprop_*`, `conv2d_backprop_*_v2`), which are `conv_ops`' gradient ops
with TF's argument order. Every gradient comes from the ops composed.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import errors
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops import conv_ops
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.conv3d_ops import conv3d, conv3d_transpose, host_ints
from layerflow._src.ops.conv_ops import conv1d, conv2d, conv2d_transpose, depthwise_conv2d
from layerflow._src.ops.math_ops import _as_tensor, reshape

__all__ = [
    "atrous_conv2d",
    "atrous_conv2d_transpose",
    "conv",
    "conv1d_transpose",
    "conv2d_backprop_filter_v2",
    "conv2d_backprop_input_v2",
    "conv_transpose",
    "convolution",
    "depthwise_conv2d_backprop_filter",
    "depthwise_conv2d_backprop_input",
    "separable_conv2d",
]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _spatial_rank(x: Any, opname: str, offset: int = 2) -> int:
    n = x._data.ndim - offset
    if n not in _FORMATS:
        raise ValueError(
            f"{opname}: the input must have 1, 2 or 3 spatial dimensions (rank 3, 4 or 5), got "
            f"shape {tuple(x._data.shape)}."
        )
    return n


def _check_format(data_format: Any, n: int, opname: str) -> bool:
    """True for channels-first. Accepts the rank's two TF spellings (None: channels last)."""
    if data_format is None:
        return False
    fmt = str(data_format).upper()
    if fmt not in _FORMATS[n]:
        raise ValueError(
            f"{opname}: data_format for a {n}-D input must be one of {_FORMATS[n]}, got "
            f"{data_format!r}."
        )
    return fmt.startswith("NC")


def convolution(input: Any, filters: Any, strides: Any = None, padding: str = "VALID",  # noqa: A002
                data_format: str | None = None, dilations: Any = None,
                name: str | None = None) -> Any:  # fmt: skip
    """N-D convolution (N = 1, 2, 3 by the input's rank): conv1d, conv2d or conv3d.

    >>> import layerflow as tf
    >>> tf.nn.convolution(tf.ones((1, 5, 5, 2)), tf.ones((3, 3, 2, 4)), padding="SAME").shape
    TensorShape([1, 5, 5, 4])
    """
    x = _as_tensor(input)
    n = _spatial_rank(x, "convolution")
    first = _check_format(data_format, n, "convolution")
    fmt = _FORMATS[n][1 if first else 0]
    strides = 1 if strides is None else strides
    if n == 1:
        return conv1d(x, filters, strides, padding, data_format=fmt, dilations=dilations)
    if n == 2:
        return conv2d(x, filters, strides, padding, data_format=fmt, dilations=dilations)
    return conv3d(x, filters, strides, padding, data_format=fmt, dilations=dilations)


def conv(input: Any, filter: Any, strides: Any, padding: str, explicit_paddings: Any = (),  # noqa: A002
         data_format: str = "CHANNELS_LAST", dilations: Any = (), batch_dims: int = 1,
         groups: int = 1, name: str | None = None) -> Any:  # fmt: skip
    """`tf.conv`, the raw N-D convolution (N = 2 or 3): `batch_dims` leading batch axes,
    `strides`/`dilations` of length N + 2, padding "SAME", "VALID" or "EXPLICIT".

    >>> import layerflow as tf
    >>> tf.conv(tf.ones((1, 4, 4, 1)), tf.ones((2, 2, 1, 1)), [1, 1, 1, 1], "VALID").shape
    TensorShape([1, 3, 3, 1])
    """
    x, w = _as_tensor(input), _as_tensor(filter)
    n = w._data.ndim - 2
    if n not in (2, 3) or x._data.ndim != n + 1 + batch_dims:
        raise errors.InvalidArgumentError(
            None, "conv", f"conv: filter of rank {w._data.ndim} needs an input of rank "
            f"{w._data.ndim - 1 + batch_dims} (batch_dims={batch_dims}, 2 or 3 spatial dims), "
            f"got shapes {tuple(x._data.shape)} and {tuple(w._data.shape)}.",
        )  # fmt: skip
    fmt = str(data_format).upper()
    if fmt not in ("CHANNELS_LAST", "CHANNELS_FIRST"):
        raise ValueError(
            f"conv: data_format must be 'CHANNELS_LAST' or 'CHANNELS_FIRST', got {data_format!r}."
        )
    batch = tuple(int(v) for v in x._data.shape[:batch_dims])
    x = reshape(x, (-1, *(int(v) for v in x._data.shape[batch_dims:])))
    if fmt == "CHANNELS_FIRST":
        x = transpose(x, (0, *range(2, n + 2), 1))
    pad_arg: Any = str(padding).upper()
    if pad_arg == "EXPLICIT":
        flat = [int(v) for v in explicit_paddings]
        if len(flat) != 2 * (n + 2):
            raise ValueError(
                f"conv: explicit_paddings must have {2 * (n + 2)} entries, got {flat}."
            )
        pairs = [flat[i : i + 2] for i in range(0, len(flat), 2)]
        if fmt == "CHANNELS_FIRST":
            pairs = [pairs[0], *pairs[2:], pairs[1]]
        pad_arg = pairs
    dil = list(dilations) or 1
    strides = list(strides)
    if fmt == "CHANNELS_FIRST":
        strides = [strides[0], *strides[2:], strides[1]]
        dil = dil if dil == 1 else [dil[0], *dil[2:], dil[1]]
    if n == 2:
        y = conv2d(x, w, strides, pad_arg, dilations=dil, groups=groups)
    else:
        if groups != 1 and int(x._data.shape[-1]) != groups * int(w._data.shape[3]):
            raise errors.InvalidArgumentError(
                None, "conv", f"conv: groups={groups} does not divide the input's channels."
            )
        if not isinstance(pad_arg, str):
            raise ValueError("conv: explicit padding is supported for 2-D convolutions only.")
        y = conv3d(x, w, strides, pad_arg, dilations=dil)
    if fmt == "CHANNELS_FIRST":
        y = transpose(y, (0, n + 1, *range(1, n + 1)))
    return reshape(y, (*batch, *(int(v) for v in y._data.shape[1:])))


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NWC", dilations: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """The transpose of conv1d: `filters` [K, O, C] map `input` [N, W, C] to `output_shape`
    [N, OW, O] (conv2d_transpose with height 1).

    >>> import layerflow as tf
    >>> tf.nn.conv1d_transpose(tf.ones((2, 4, 3)), tf.ones((3, 5, 3)), [2, 8, 5], 2).shape
    TensorShape([2, 8, 5])
    """
    x, w = _as_tensor(input), _as_tensor(filters)
    first = _check_format(data_format, 1, "conv1d_transpose")
    out = host_ints(output_shape, "output_shape", "conv1d_transpose")
    if len(out) != 3 or x._data.ndim != 3 or w._data.ndim != 3:
        raise ValueError(
            f"conv1d_transpose: needs input [N, W, C], filters [K, O, C] and output_shape "
            f"[N, W, O]; got shapes {tuple(x._data.shape)}, {tuple(w._data.shape)} and {out}."
        )
    if first:
        x = transpose(x, (0, 2, 1))
        out = (out[0], out[2], out[1])
    s = _k.ints(strides, 1, "strides", "conv1d_transpose")[0]
    d = _k.ints(1 if dilations is None else dilations, 1, "dilations", "conv1d_transpose")[0]
    x4 = reshape(x, (int(x._data.shape[0]), 1, *(int(v) for v in x._data.shape[1:])))
    w4 = reshape(w, (1, *(int(v) for v in w._data.shape)))
    y = conv2d_transpose(x4, w4, (out[0], 1, out[1], out[2]), [1, s], padding, dilations=[1, d])
    y = reshape(y, out)
    return transpose(y, (0, 2, 1)) if first else y


def conv_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                   padding: str = "SAME", data_format: str | None = None, dilations: Any = None,
                   name: str | None = None) -> Any:  # fmt: skip
    """Transposed convolution of any rank (1, 2, 3 spatial dims, by `output_shape`'s length).

    >>> import layerflow as tf
    >>> tf.nn.conv_transpose(tf.ones((1, 2, 2, 3)), tf.ones((2, 2, 4, 3)), [1, 4, 4, 4],
    ...                      strides=2).shape
    TensorShape([1, 4, 4, 4])
    """
    out = host_ints(output_shape, "output_shape", "conv_transpose")
    n = len(out) - 2
    if n not in _FORMATS:
        raise ValueError(
            f"conv_transpose: output_shape must have 3, 4 or 5 entries, got {len(out)} ({out})."
        )
    first = _check_format(data_format, n, "conv_transpose")
    fmt = _FORMATS[n][1 if first else 0]
    if n == 1:
        return conv1d_transpose(input, filters, out, strides, padding, fmt, dilations)
    if n == 3:
        return conv3d_transpose(input, filters, out, strides, padding, fmt, dilations)
    x = _as_tensor(input)
    if not first:
        return conv2d_transpose(x, filters, out, strides, padding, dilations=dilations)
    dil = None if dilations is None else _nhwc(dilations, "dilations")
    y = conv2d_transpose(transpose(x, (0, 2, 3, 1)), filters, (out[0], out[2], out[3], out[1]),
                         _nhwc(strides, "strides"), padding, dilations=dil)  # fmt: skip
    return transpose(y, (0, 3, 1, 2))


def _nhwc(value: Any, what: str) -> Any:
    """A 4-int NCHW attribute in NHWC order (1 and 2-int forms are spatial already)."""
    if isinstance(value, int) or len(value) != 4:
        return value
    return [value[0], value[2], value[3], value[1]]


def atrous_conv2d(value: Any, filters: Any, rate: int, padding: str,
                  name: str | None = None) -> Any:  # fmt: skip
    """conv2d with dilation `rate` in both spatial dimensions (NHWC).

    >>> import layerflow as tf
    >>> tf.nn.atrous_conv2d(tf.ones((1, 7, 7, 1)), tf.ones((3, 3, 1, 1)), 2, "VALID").shape
    TensorShape([1, 3, 3, 1])
    """
    r = _rate(rate, "atrous_conv2d")
    return conv2d(value, filters, 1, padding, dilations=[r, r])


def atrous_conv2d_transpose(value: Any, filters: Any, output_shape: Any, rate: int,
                            padding: str, name: str | None = None) -> Any:  # fmt: skip
    """The transpose of atrous_conv2d: `filters` [KH, KW, O, C] map `value` [N, H, W, C] to
    `output_shape` [N, OH, OW, O].

    >>> import layerflow as tf
    >>> tf.nn.atrous_conv2d_transpose(tf.ones((1, 3, 3, 1)), tf.ones((3, 3, 1, 1)),
    ...                               [1, 7, 7, 1], 2, "VALID").shape
    TensorShape([1, 7, 7, 1])
    """
    r = _rate(rate, "atrous_conv2d_transpose")
    return conv2d_transpose(value, filters, output_shape, 1, padding, dilations=[r, r])


def _rate(rate: Any, opname: str) -> int:
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        raise ValueError(f"{opname}: rate must be a positive integer, got {rate!r}.")
    return rate


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any, strides: Any,  # noqa: A002
                     padding: str, data_format: str | None = None, dilations: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """A depthwise convolution ([KH, KW, C, M]) then a 1x1 convolution ([1, 1, C * M, O]).

    >>> import layerflow as tf
    >>> tf.nn.separable_conv2d(tf.ones((1, 5, 5, 3)), tf.ones((3, 3, 3, 2)),
    ...                        tf.ones((1, 1, 6, 4)), [1, 1, 1, 1], "VALID").shape
    TensorShape([1, 3, 3, 4])
    """
    p = _as_tensor(pointwise_filter)
    d = _as_tensor(depthwise_filter)
    shape_p, shape_d = tuple(p._data.shape), tuple(d._data.shape)
    if (
        len(shape_p) != 4
        or shape_p[:2] != (1, 1)
        or len(shape_d) != 4
        or (shape_p[2] != shape_d[2] * shape_d[3])
    ):
        raise ValueError(
            f"separable_conv2d: the pointwise filter must have shape [1, 1, C * M, O] for a "
            f"depthwise filter [KH, KW, C, M] = {list(shape_d)}, got {list(shape_p)}."
        )
    y = depthwise_conv2d(input, d, strides, padding, data_format=data_format, dilations=dilations)
    return conv2d(y, p, 1, "VALID", data_format=data_format or "NHWC")


def _depthwise_attrs(c: int, strides: Any, padding: Any, dilations: Any, opname: str) -> tuple:
    return (_k.ints(strides, 2, "strides", opname),
            _k.ints(1 if dilations is None else dilations, 2, "dilations", opname),
            _k.padding_attr(padding), c)  # fmt: skip


def depthwise_conv2d_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,  # noqa: A002
                                    strides: Any, padding: Any, data_format: str = "NHWC",
                                    dilations: Any = (1, 1, 1, 1),
                                    name: str | None = None) -> Any:  # fmt: skip
    """The gradient of depthwise_conv2d with respect to its input (of shape `input_sizes`).

    >>> import layerflow as tf
    >>> tf.nn.depthwise_conv2d_backprop_input([1, 4, 4, 2], tf.ones((3, 3, 2, 1)),
    ...                                       tf.ones((1, 2, 2, 2)), [1, 1, 1, 1], "VALID").shape
    TensorShape([1, 4, 4, 2])
    """
    w, dy = _as_tensor(filter), _as_tensor(out_backprop)
    sizes = host_ints(input_sizes, "input_sizes", "depthwise_conv2d_backprop_input")
    first = _check_format(data_format, 2, "depthwise_conv2d_backprop_input")
    if first:
        dy = transpose(dy, (0, 2, 3, 1))
        sizes = (sizes[0], sizes[2], sizes[3], sizes[1])
        strides, dilations = _nhwc(strides, "strides"), _nhwc(dilations, "dilations")
    kh, kw, c, m = (int(v) for v in w._data.shape)
    attrs = _depthwise_attrs(c, strides, padding, dilations, "depthwise_conv2d_backprop_input")
    dx = conv_ops._conv_input_grad(dy, reshape(w, (kh, kw, 1, c * m)), tuple(sizes), attrs)
    return transpose(dx, (0, 3, 1, 2)) if first else dx


def depthwise_conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                     strides: Any, padding: Any, data_format: str = "NHWC",
                                     dilations: Any = (1, 1, 1, 1),
                                     name: str | None = None) -> Any:  # fmt: skip
    """The gradient of depthwise_conv2d with respect to its filter (of shape `filter_sizes`).

    >>> import layerflow as tf
    >>> tf.nn.depthwise_conv2d_backprop_filter(tf.ones((1, 4, 4, 2)), [3, 3, 2, 1],
    ...                                        tf.ones((1, 2, 2, 2)), [1, 1, 1, 1], "VALID").shape
    TensorShape([3, 3, 2, 1])
    """
    x, dy = _as_tensor(input), _as_tensor(out_backprop)
    kh, kw, c, m = host_ints(filter_sizes, "filter_sizes", "depthwise_conv2d_backprop_filter")
    if _check_format(data_format, 2, "depthwise_conv2d_backprop_filter"):
        x, dy = transpose(x, (0, 2, 3, 1)), transpose(dy, (0, 2, 3, 1))
        strides, dilations = _nhwc(strides, "strides"), _nhwc(dilations, "dilations")
    attrs = _depthwise_attrs(c, strides, padding, dilations, "depthwise_conv2d_backprop_filter")
    dw = conv_ops._conv_filter_grad(x, dy, (kh, kw, 1, c * m), attrs)
    return reshape(dw, (kh, kw, c, m))


def _v2_attrs(x_shape: tuple, w_shape: tuple, strides: Any, padding: Any, explicit: Any,
              dilations: Any, opname: str) -> tuple:  # fmt: skip
    pad_arg: Any = str(padding).upper()
    if pad_arg == "EXPLICIT":
        flat = [int(v) for v in explicit]
        pad_arg = tuple(tuple(flat[i : i + 2]) for i in range(2, 6, 2))
    c, cg = int(x_shape[3]), int(w_shape[2])
    if cg == 0 or c % cg:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: the input has {c} channels but the filter expects {cg}."
        )
    return (_k.ints(strides, 2, "strides", opname),
            _k.ints(1 if dilations is None else dilations, 2, "dilations", opname),
            _k.padding_attr(pad_arg), c // cg)  # fmt: skip


def conv2d_backprop_input_v2(input: Any, filter: Any, out_backprop: Any, strides: Any,  # noqa: A002
                             padding: str, use_cudnn_on_gpu: bool = True,
                             explicit_paddings: Any = (), data_format: str = "NHWC",
                             dilations: Any = (1, 1, 1, 1),
                             name: str | None = None) -> Any:  # fmt: skip
    """The gradient of conv2d(input, filter) with respect to `input` (only its shape is read).

    >>> import layerflow as tf
    >>> dx = tf.conv2d_backprop_input_v2(tf.ones((1, 4, 4, 1)), tf.ones((2, 2, 1, 1)),
    ...                                  tf.ones((1, 3, 3, 1)), [1, 1, 1, 1], "VALID")
    >>> dx[0, :, 0, 0].numpy()
    array([1., 2., 2., 1.], dtype=float32)
    """
    x, w, dy = _as_tensor(input), _as_tensor(filter), _as_tensor(out_backprop)
    x_shape = tuple(int(v) for v in x._data.shape)
    first = _check_format(data_format, 2, "conv2d_backprop_input_v2")
    if first:
        x_shape = (x_shape[0], x_shape[2], x_shape[3], x_shape[1])
        dy = transpose(dy, (0, 2, 3, 1))
        strides, dilations = _nhwc(strides, "strides"), _nhwc(dilations, "dilations")
    attrs = _v2_attrs(x_shape, tuple(w._data.shape), strides, padding, explicit_paddings,
                      dilations, "conv2d_backprop_input_v2")  # fmt: skip
    dx = conv_ops._conv_input_grad(dy, w, x_shape, attrs)
    return transpose(dx, (0, 3, 1, 2)) if first else dx


def conv2d_backprop_filter_v2(input: Any, filter: Any, out_backprop: Any, strides: Any,  # noqa: A002
                              padding: str, use_cudnn_on_gpu: bool = True,
                              explicit_paddings: Any = (), data_format: str = "NHWC",
                              dilations: Any = (1, 1, 1, 1),
                             name: str | None = None) -> Any:  # fmt: skip
    """The gradient of conv2d(input, filter) with respect to `filter` (only its shape is read).

    >>> import layerflow as tf
    >>> tf.conv2d_backprop_filter_v2(tf.ones((1, 4, 4, 1)), tf.ones((2, 2, 1, 1)),
    ...                              tf.ones((1, 3, 3, 1)), [1, 1, 1, 1], "VALID").shape
    TensorShape([2, 2, 1, 1])
    """
    x, w, dy = _as_tensor(input), _as_tensor(filter), _as_tensor(out_backprop)
    if _check_format(data_format, 2, "conv2d_backprop_filter_v2"):
        x, dy = transpose(x, (0, 2, 3, 1)), transpose(dy, (0, 2, 3, 1))
        strides, dilations = _nhwc(strides, "strides"), _nhwc(dilations, "dilations")
    w_shape = tuple(int(v) for v in w._data.shape)
    attrs = _v2_attrs(tuple(x._data.shape), w_shape, strides, padding, explicit_paddings,
                      dilations, "conv2d_backprop_filter_v2")  # fmt: skip
    return conv_ops._conv_filter_grad(x, dy, w_shape, attrs)
