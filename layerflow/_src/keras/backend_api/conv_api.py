"""Keras backend convolutions, pooling, `bias_add`, locally-connected products and CTC."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.keras.backend_api.array_api import (
    _check_format,
    concatenate,
    permute_dimensions,
    reshape,
    temporal_padding,
)
from layerflow._src.keras.backend_api.math_api import _t, batch_dot, int_shape, ndim
from layerflow._src.keras.engine.backend_config import epsilon
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    conv3d_ops,
    conv_ops,
    conv_transpose_ops,
    ctc_ops,
    gather_ops,
    math_ops,
    nn_ops,
    pool_ops,
    sparse_ops,
)

# Keras computes in channels-last on the CPU: channels_first inputs are transposed in and out.
_TO_LAST = {3: (0, 2, 1), 4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}
_TO_FIRST = {3: (0, 2, 1), 4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}


def _padding(padding: Any) -> str:
    if padding == "same":
        return "SAME"
    if padding == "valid":
        return "VALID"
    raise ValueError("Invalid padding: " + str(padding))


def _tuple(v: Any, n: int) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


def _run(x: Any, data_format: Any, rank: int, fn: Any) -> Any:
    first = _check_format(data_format) == "channels_first"
    x = _t(x)
    if first:
        x = array_ops.transpose(x, _TO_LAST[rank])
    y = fn(x)
    return array_ops.transpose(y, _TO_FIRST[rank]) if first else y


def conv1d(
    x: Any, kernel: Any, strides: Any = 1, padding: str = "valid", data_format: Any = None,
    dilation_rate: Any = 1,
) -> Any:  # fmt: skip
    """1-D convolution; `padding='causal'` pads left by `dilation_rate * (k - 1)`."""
    kernel = _t(kernel)
    if padding == "causal":
        left = _tuple(dilation_rate, 1)[0] * (int(kernel.shape[0]) - 1)
        x = _run(x, data_format, 3, lambda t: temporal_padding(t, (left, 0)))
        padding = "valid"
    pad = _padding(padding)
    return _run(x, data_format, 3, lambda t: conv_transpose_ops.convolution(
        t, kernel, strides=_tuple(strides, 1), padding=pad, data_format="NWC",
        dilations=_tuple(dilation_rate, 1)))  # fmt: skip


def conv2d(
    x: Any, kernel: Any, strides: Any = (1, 1), padding: str = "valid", data_format: Any = None,
    dilation_rate: Any = (1, 1),
) -> Any:  # fmt: skip
    """2-D convolution with a `(kh, kw, in, out)` kernel."""
    pad = _padding(padding)
    return _run(x, data_format, 4, lambda t: conv_transpose_ops.convolution(
        t, kernel, strides=_tuple(strides, 2), padding=pad, data_format="NHWC",
        dilations=_tuple(dilation_rate, 2)))  # fmt: skip


def conv3d(
    x: Any, kernel: Any, strides: Any = (1, 1, 1), padding: str = "valid",
    data_format: Any = None, dilation_rate: Any = (1, 1, 1),
) -> Any:  # fmt: skip
    pad = _padding(padding)
    return _run(x, data_format, 5, lambda t: conv_transpose_ops.convolution(
        t, kernel, strides=_tuple(strides, 3), padding=pad, data_format="NDHWC",
        dilations=_tuple(dilation_rate, 3)))  # fmt: skip


def conv2d_transpose(
    x: Any, kernel: Any, output_shape: Any, strides: Any = (1, 1), padding: str = "valid",
    data_format: Any = None, dilation_rate: Any = (1, 1),
) -> Any:  # fmt: skip
    """Transposed 2-D convolution to `output_shape` (in `data_format`, batch may be None)."""
    first = _check_format(data_format) == "channels_first"
    x = _t(x)
    out = list(output_shape)
    if first:
        out = [out[0], out[2], out[3], out[1]]
    if out[0] is None:
        out[0] = int(x.shape[0])
    pad = _padding(padding)
    dil = _tuple(dilation_rate, 2)
    if dil != (1, 1) and dil[0] != dil[1]:
        raise ValueError(
            "Expected the 2 dimensions of the `dilation_rate` argument to be equal to each "
            f"other. Received: dilation_rate={dilation_rate}"
        )
    return _run(x, data_format, 4, lambda t: conv_ops.conv2d_transpose(
        t, kernel, out, (1,) + _tuple(strides, 2) + (1,), padding=pad, data_format="NHWC",
        dilations=None if dil == (1, 1) else list(dil)))  # fmt: skip


def separable_conv2d(
    x: Any, depthwise_kernel: Any, pointwise_kernel: Any, strides: Any = (1, 1),
    padding: str = "valid", data_format: Any = None, dilation_rate: Any = (1, 1),
) -> Any:  # fmt: skip
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    pad = _padding(padding)
    return _run(x, data_format, 4, lambda t: conv_transpose_ops.separable_conv2d(
        t, depthwise_kernel, pointwise_kernel, strides=(1,) + tuple(strides) + (1,),
        padding=pad, dilations=_tuple(dilation_rate, 2), data_format="NHWC"))  # fmt: skip


def depthwise_conv2d(
    x: Any, depthwise_kernel: Any, strides: Any = (1, 1), padding: str = "valid",
    data_format: Any = None, dilation_rate: Any = (1, 1),
) -> Any:  # fmt: skip
    pad = _padding(padding)
    return _run(x, data_format, 4, lambda t: conv_ops.depthwise_conv2d(
        t, depthwise_kernel, strides=(1,) + tuple(strides) + (1,), padding=pad,
        dilations=_tuple(dilation_rate, 2), data_format="NHWC"))  # fmt: skip


def pool2d(
    x: Any, pool_size: Any, strides: Any = (1, 1), padding: str = "valid",
    data_format: Any = None, pool_mode: str = "max",
) -> Any:  # fmt: skip
    """2-D max or average pooling (`pool_mode='max'|'avg'`)."""
    _check_format(data_format)
    if len(pool_size) != 2:
        raise ValueError("`pool_size` must be a tuple of 2 integers.")
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    if pool_mode not in ("max", "avg"):
        raise ValueError("Invalid pooling mode: " + str(pool_mode))
    fn = pool_ops.max_pool2d if pool_mode == "max" else pool_ops.avg_pool2d
    pad = _padding(padding)
    return _run(x, data_format, 4, lambda t: fn(
        t, (1,) + tuple(pool_size) + (1,), (1,) + tuple(strides) + (1,), pad))  # fmt: skip


def pool3d(
    x: Any, pool_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
    data_format: Any = None, pool_mode: str = "max",
) -> Any:  # fmt: skip
    _check_format(data_format)
    if pool_mode not in ("max", "avg"):
        raise ValueError("Invalid pooling mode: " + str(pool_mode))
    fn = conv3d_ops.max_pool3d if pool_mode == "max" else conv3d_ops.avg_pool3d
    pad = _padding(padding)
    return _run(x, data_format, 5, lambda t: fn(
        t, (1,) + tuple(pool_size) + (1,), (1,) + tuple(strides) + (1,), padding=pad))  # fmt: skip


def bias_add(x: Any, bias: Any, data_format: Any = None) -> Any:
    """Add a 1-D bias on the channel axis, or an `ndim(x) - 1`-D bias to each sample."""
    data_format = _check_format(data_format)
    x, bias = _t(x), _t(bias)
    bias_shape = int_shape(bias)
    if len(bias_shape) != 1 and len(bias_shape) != ndim(x) - 1:
        raise ValueError(
            f"Unexpected bias dimensions {len(bias_shape)}, expect to be 1 or {ndim(x) - 1} "
            "dimensions"
        )
    if len(bias_shape) == 1:
        fmt = "NCHW" if data_format == "channels_first" and ndim(x) > 2 else "NHWC"
        return nn_ops.bias_add(x, bias, data_format=fmt)
    if data_format == "channels_first" and ndim(x) in (3, 4, 5):
        return x + reshape(bias, (1, bias_shape[-1]) + bias_shape[:-1])
    return x + reshape(bias, (1,) + bias_shape)


def local_conv(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, output_shape: Any,
    data_format: Any = None,
) -> Any:  # fmt: skip
    data_format = _check_format(data_format)
    inputs, kernel = _t(inputs), _t(kernel)
    kernel_shape = int_shape(kernel)
    feature_dim, channels_out = kernel_shape[1], kernel_shape[-1]
    nd = len(output_shape)
    spatial = list(range(nd))
    xs = []
    for pos in itertools.product(*[range(m) for m in output_shape]):
        slices = [slice(None)]
        if data_format == "channels_first":
            slices.append(slice(None))
        slices.extend(
            slice(pos[d] * strides[d], pos[d] * strides[d] + kernel_size[d]) for d in spatial
        )
        if data_format == "channels_last":
            slices.append(slice(None))
        xs.append(reshape(inputs[tuple(slices)], (1, -1, feature_dim)))
    output = batch_dot(concatenate(xs, axis=0), kernel)
    output = reshape(output, tuple(output_shape) + (-1, channels_out))
    if data_format == "channels_first":
        perm = [nd, nd + 1] + spatial
    else:
        perm = [nd] + spatial + [nd + 1]
    return permute_dimensions(output, perm)


def local_conv1d(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, data_format: Any = None
) -> Any:
    return local_conv(inputs, kernel, kernel_size, strides, (int(kernel.shape[0]),), data_format)


def local_conv2d(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, output_shape: Any,
    data_format: Any = None,
) -> Any:  # fmt: skip
    return local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format)


def ctc_label_dense_to_sparse(labels: Any, label_lengths: Any) -> SparseTensor:
    """The first `label_lengths[b]` labels of each row of dense `labels`, as a SparseTensor."""
    labels = _t(labels)
    lengths = compare_ops.cast(label_lengths, "int32")
    max_len = int(labels.shape[1])
    mask = array_ops.expand_dims(array_ops.range(max_len), 0) < array_ops.expand_dims(lengths, 1)
    indices = compare_ops.cast(math_ops.where(mask), "int64")
    values = gather_ops.gather_nd(labels, indices)
    return SparseTensor(indices, values, compare_ops.cast(array_ops.shape(labels), "int64"))


def ctc_batch_cost(y_true: Any, y_pred: Any, input_length: Any, label_length: Any) -> Any:
    """CTC loss per batch element, shape `(batch, 1)`, from softmax outputs `y_pred`."""
    label_length = compare_ops.cast(array_ops.squeeze(label_length, axis=-1), "int32")
    input_length = compare_ops.cast(array_ops.squeeze(input_length, axis=-1), "int32")
    logits = math_ops.log(array_ops.transpose(y_pred, perm=[1, 0, 2]) + epsilon())
    num_classes = int(logits.shape[-1])
    # TF 1's ctc_loss (which Keras calls) takes the last class as the blank.
    loss = ctc_ops.ctc_loss(
        labels=compare_ops.cast(y_true, "int32"),
        logits=logits,
        label_length=label_length,
        logit_length=input_length,
        blank_index=num_classes - 1,
    )
    return array_ops.expand_dims(loss, 1)


def ctc_decode(
    y_pred: Any, input_length: Any, greedy: bool = True, beam_width: int = 100,
    top_paths: int = 1,
) -> tuple:  # fmt: skip
    """Decode softmax outputs; returns (list of dense `(batch, steps)` paths padded with -1,
    log probabilities)."""
    y_pred = _t(y_pred)
    num_samples, num_steps = int(y_pred.shape[0]), int(y_pred.shape[1])
    logits = math_ops.log(array_ops.transpose(y_pred, perm=[1, 0, 2]) + epsilon())
    input_length = compare_ops.cast(input_length, "int32")
    if greedy:
        decoded, log_prob = ctc_ops.ctc_greedy_decoder(logits, input_length)
    else:
        decoded, log_prob = ctc_ops.ctc_beam_search_decoder(
            logits, input_length, beam_width=beam_width, top_paths=top_paths
        )
    dense = []
    for st in decoded:
        if not greedy:
            st = _merge_repeated(st)
        st = SparseTensor(st.indices, st.values, (num_samples, num_steps))
        dense.append(sparse_ops.to_dense(st, default_value=-1))
    return dense, log_prob


def _merge_repeated(st: Any) -> SparseTensor:
    # Keras calls TF 1's beam search, whose merge_repeated=True emits a run of one class once.
    idx, vals = np.asarray(st.indices), np.asarray(st.values)
    keep = np.ones(len(vals), dtype=bool)
    keep[1:] = (idx[1:, 0] != idx[:-1, 0]) | (vals[1:] != vals[:-1])
    rows, vals = idx[keep, 0], vals[keep]
    cols = np.zeros_like(rows)
    for r in np.unique(rows):
        cols[rows == r] = np.arange(int((rows == r).sum()))
    return SparseTensor(np.stack([rows, cols], axis=1), vals, st.dense_shape)
