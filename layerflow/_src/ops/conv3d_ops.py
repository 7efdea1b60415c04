"""3-D convolution and pooling (NDHWC, TF's default; NCDHW by transposes), composed from 2-D ops.

A 3-D window is a stack of 2-D windows, one per depth tap. For tap `kd` the input planes it
reads for output planes `0 .. OD-1` are one strided slice along the depth axis, so the 3-D op is
one 2-D convolution of the taps stacked along the channels (see `_stacked_taps`), or the maximum
(max pooling) or count-weighted sum (average pooling) over the KD depth taps of one 2-D op each
on `N * OD` images. The 2-D ops are the chunked im2col kernels
of `conv_ops`/`pool_ops` with their own gradients; slicing, padding and reshaping are
differentiable, so every op here has first and second derivatives without new gradient code.
The transposed convolution scatters each tap's `conv2d_transpose` back to its depth planes
(zeros interleaved for the stride, a pad for the offset).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops.array_ops import stack, transpose
from layerflow._src.ops.compare_ops import zeros_like
from layerflow._src.ops.conv_ops import conv2d, conv2d_transpose
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import _as_tensor, maximum, reshape
from layerflow._src.ops.pool_ops import avg_pool2d, max_pool2d

__all__ = ["conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d", "host_ints"]


def host_ints(value: Any, what: str, opname: str) -> tuple[int, ...]:
    """A shape given as a list, tuple, NumPy array or tensor, as Python ints."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    try:
        return tuple(int(v) for v in np.asarray(value).reshape(-1))
    except (TypeError, ValueError):
        raise TypeError(f"{opname}: {what} must be a list of ints, got {value!r}.") from None


def _channels_first(data_format: Any, last: str, first: str, opname: str) -> bool:
    fmt = (data_format or last).upper()
    if fmt not in (last, first):
        raise ValueError(
            f"{opname}: data_format must be {last!r} or {first!r}, got {data_format!r}."
        )
    return fmt == first


def _rank5(x: Any, opname: str, what: str = "input [N, D, H, W, C]") -> None:
    if x._data.ndim != 5:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname} needs a rank-5 {what}, got shape {tuple(x._data.shape)}."
        )


def _string_padding(padding: Any, opname: str) -> str:
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}.")
    return padding.upper()


def _depth_taps(x: Any, k: int, s: int, d: int, padding: str, fill: float, opname: str) -> tuple:
    """The depth slices tap by tap, each reshaped to `N * OD` images, and OD with its pads."""
    n, depth = int(x._data.shape[0]), int(x._data.shape[1])
    (od,), ((before, after),) = _k.geometry((depth,), (k,), (s,), (d,), padding, opname)
    if before or after:
        x = pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]], constant_values=fill)
    rest = tuple(int(v) for v in x._data.shape[2:])
    taps = [reshape(x[:, t * d : t * d + (od - 1) * s + 1 : s], (n * od, *rest)) for t in range(k)]
    return taps, od, (before, after)


# conv3d as ONE 2-D convolution: the KD depth taps of every output plane are stacked along the
# channels (group by group: channel (g, t, c) is channel c of group g at depth tap t), and the
# filter [KD, KH, KW, Cg, O] becomes [KH, KW, KD * Cg, O] in the same order, so the chunked
# im2col / shifted-frame kernels of `conv_kernels` run one GEMM of K = KD*KH*KW*Cg per chunk
# (instead of KD convolutions of K = KH*KW*Cg, their outputs summed). The stacked input is
# built channels-first, as the 2-D kernels read it (no transpose copy there); it holds KD
# times the input, the patches stay within the 2-D kernels' temporary budget.


def _stacked_taps(x: Any, k: int, s: int, d: int, padding: str, groups: int) -> tuple:
    """(x [N, D, H, W, C] as [N*OD, H, W, groups * KD * Cg], channels-first in memory, and OD):
    the depth slices of every tap, read through one transposed view and copied ONCE, by the
    stack (reshaping the slices themselves would copy each of them first)."""
    n, depth = int(x._data.shape[0]), int(x._data.shape[1])
    (od,), ((before, after),) = _k.geometry((depth,), (k,), (s,), (d,), padding, "conv3d")
    if before or after:
        x = pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]])
    h, w, c = (int(v) for v in x._data.shape[2:])
    xt = transpose(x, (4, 0, 1, 2, 3))  # (C, N, D, H, W), a view
    split = (groups, c // groups, n, od, h, w)
    taps = [reshape(xt[:, :, t * d : t * d + (od - 1) * s + 1 : s], split) for t in range(k)]
    st = reshape(stack(taps, axis=1), (k * c, n * od, h, w))  # channel order (g, KD, Cg)
    return transpose(st, (1, 2, 3, 0)), od


def _stack_filter(w: Any) -> Any:
    kd, kh, kw, cg, m = (int(v) for v in w._data.shape)
    return reshape(transpose(w, (1, 2, 0, 3, 4)), (kh, kw, kd * cg, m))


def conv3d(input: Any, filters: Any, strides: Any, padding: Any, data_format: str = "NDHWC",  # noqa: A002
           dilations: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """3-D convolution of `input` [N, D, H, W, C] with `filters` [KD, KH, KW, C, O].

    `strides` and `dilations` are 1, 3 or 5 ints (TF requires the 5-int form; the batch and
    channel entries must be 1). Grouped filters ([KD, KH, KW, C / g, O]) work as in conv2d.

    >>> import layerflow as tf
    >>> tf.nn.conv3d(tf.ones((1, 4, 4, 4, 2)), tf.ones((2, 2, 2, 2, 3)), [1, 1, 1, 1, 1],
    ...              "VALID").shape
    TensorShape([1, 3, 3, 3, 3])
    """
    x, w = _as_tensor(input), _as_tensor(filters)
    ncdhw = _channels_first(data_format, "NDHWC", "NCDHW", "conv3d")
    if ncdhw:
        x = transpose(x, (0, 2, 3, 4, 1))
    _rank5(x, "conv3d")
    _rank5(w, "conv3d", "filter [KD, KH, KW, C_in, C_out]")
    pad_s = _string_padding(padding, "conv3d")
    s = _k.ints(strides, 3, "strides", "conv3d")
    d = _k.ints(1 if dilations is None else dilations, 3, "dilations", "conv3d")
    kd, kh, kw, cg, m = (int(v) for v in w._data.shape)
    c = int(x._data.shape[-1])
    if cg == 0 or c % cg:
        raise errors.InvalidArgumentError(
            None, "conv3d", f"conv3d: the input has {c} channels but the filters "
            f"{tuple(w._data.shape)} expect {cg} (or a divisor of {c} for groups).",
        )  # fmt: skip
    xs, od = _stacked_taps(x, kd, s[0], d[0], pad_s, c // cg)
    y = conv2d(xs, _stack_filter(w), s[1:], pad_s, dilations=d[1:])
    y = reshape(y, (int(x._data.shape[0]), od, *(int(v) for v in y._data.shape[1:])))
    return transpose(y, (0, 4, 1, 2, 3)) if ncdhw else y


def _interleave(z: Any, s: int) -> Any:
    """`z` [N, OD, ...] with `s - 1` zero planes after each plane, the trailing ones dropped."""
    if s == 1:
        return z
    zs = stack([z] + [zeros_like(z)] * (s - 1), axis=2)
    shape = tuple(int(v) for v in z._data.shape)
    full = reshape(zs, (shape[0], shape[1] * s, *shape[2:]))
    return full[:, : (shape[1] - 1) * s + 1]


def conv3d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NDHWC", dilations: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """The gradient of conv3d with respect to its input: `filters` [KD, KH, KW, O, C] map
    `input` [N, D, H, W, C] to `output_shape` [N, OD, OH, OW, O].

    >>> import layerflow as tf
    >>> tf.nn.conv3d_transpose(tf.ones((1, 2, 2, 2, 3)), tf.ones((2, 2, 2, 4, 3)),
    ...                        [1, 4, 4, 4, 4], strides=2).shape
    TensorShape([1, 4, 4, 4, 4])
    """
    y, w = _as_tensor(input), _as_tensor(filters)
    ncdhw = _channels_first(data_format, "NDHWC", "NCDHW", "conv3d_transpose")
    out_shape = host_ints(output_shape, "output_shape", "conv3d_transpose")
    if ncdhw:
        y = transpose(y, (0, 2, 3, 4, 1))
        if len(out_shape) == 5:
            out_shape = (out_shape[0], *out_shape[2:], out_shape[1])
    _rank5(y, "conv3d_transpose")
    _rank5(w, "conv3d_transpose", "filter [KD, KH, KW, C_out, C_in]")
    if len(out_shape) != 5:
        raise ValueError(
            f"conv3d_transpose: output_shape must have 5 entries [N, D, H, W, C], got {out_shape}."
        )
    pad_s = _string_padding(padding, "conv3d_transpose")
    s = _k.ints(strides, 3, "strides", "conv3d_transpose")
    d = _k.ints(1 if dilations is None else dilations, 3, "dilations", "conv3d_transpose")
    n, depth = out_shape[0], out_shape[1]
    kd = int(w._data.shape[0])
    (od,), ((before, after),) = _k.geometry((depth,), (kd,), s[:1], d[:1], pad_s,
                                            "conv3d_transpose")  # fmt: skip
    if tuple(int(v) for v in y._data.shape[:2]) != (n, od):
        raise errors.InvalidArgumentError(
            None, "conv3d_transpose", f"conv3d_transpose: an output of shape {out_shape} with "
            f"these filters, strides and padding comes from inputs of batch {n} and depth {od}, "
            f"but the input has shape {tuple(y._data.shape)}.",
        )  # fmt: skip
    planes = reshape(y, (n * od, *(int(v) for v in y._data.shape[2:])))
    shape2 = (n * od, *out_shape[2:])
    padded = before + depth + after
    total = None
    for t in range(kd):
        z = conv2d_transpose(planes, w[t], shape2, s[1:], pad_s, dilations=d[1:])
        z = _interleave(reshape(z, (n, od, *out_shape[2:])), s[0])
        lo = t * d[0]
        z = pad(z, [[0, 0], [lo, padded - lo - int(z._data.shape[1])], [0, 0], [0, 0], [0, 0]])
        total = z if total is None else total + z
    out = total[:, before : before + depth]
    return transpose(out, (0, 4, 1, 2, 3)) if ncdhw else out


def _pool3d(kind: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
            data_format: Any, opname: str) -> Any:  # fmt: skip
    x = _as_tensor(input)
    ncdhw = _channels_first(data_format, "NDHWC", "NCDHW", opname)
    if ncdhw:
        x = transpose(x, (0, 2, 3, 4, 1))
    _rank5(x, opname)
    pad_s = _string_padding(padding, opname)
    k = _k.ints(ksize, 3, "ksize", opname)
    s = _k.ints(strides, 3, "strides", opname)
    n, depth = int(x._data.shape[0]), int(x._data.shape[1])
    if kind == "max":
        low = float(np.finfo(x._data.dtype).min) if x._data.dtype.kind == "f" else 0.0
        taps, od, _ = _depth_taps(x, k[0], s[0], 1, pad_s, low, opname)
        y = functools.reduce(maximum, [max_pool2d(t, k[1:], s[1:], pad_s) for t in taps])
    else:
        # Padded planes are zeros: each tap's 2-D average is 0 there, and dividing the sum by
        # the number of real planes in each window averages the real inputs only, as TF does.
        taps, od, (before, _) = _depth_taps(x, k[0], s[0], 1, pad_s, 0.0, opname)
        y = functools.reduce(lambda a, b: a + b, [avg_pool2d(t, k[1:], s[1:], pad_s) for t in taps])
        starts = np.arange(od) * s[0] - before
        counts = np.minimum(starts + k[0], depth) - np.maximum(starts, 0)
        scale = np.tile(1.0 / counts, n).reshape(n * od, 1, 1, 1)
        y = y * _as_tensor(scale.astype(x._data.dtype))
    y = reshape(y, (n, od, *(int(v) for v in y._data.shape[1:])))
    return transpose(y, (0, 4, 1, 2, 3)) if ncdhw else y


def max_pool3d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NDHWC",  # noqa: A002
               name: str | None = None) -> Any:  # fmt: skip
    """The maximum of each `ksize` window of `input` [N, D, H, W, C].

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(8.0), (1, 2, 2, 2, 1))
    >>> float(tf.nn.max_pool3d(x, 2, 2, "VALID")[0, 0, 0, 0, 0])
    7.0
    """
    return _pool3d("max", input, ksize, strides, padding, data_format, "max_pool3d")


def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NDHWC",  # noqa: A002
               name: str | None = None) -> Any:  # fmt: skip
    """The mean of each `ksize` window of `input` [N, D, H, W, C] (SAME padding averages the
    real inputs only, as TF).

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(8.0), (1, 2, 2, 2, 1))
    >>> float(tf.nn.avg_pool3d(x, 2, 2, "VALID")[0, 0, 0, 0, 0])
    3.5
    """
    return _pool3d("avg", input, ksize, strides, padding, data_format, "avg_pool3d")
