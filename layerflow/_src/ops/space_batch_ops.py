"""Space-to-batch and back, `with_space_to_batch`, and the N-D `pool` built on them.

`space_to_batch_nd` pads the spatial block and moves each of the `prod(block_shape)` offsets
within a block into the batch dimension; `batch_to_space` undoes it and crops. Both are a pad or
a slice, a reshape and a transpose, so their gradients are each other's, from the ops composed.
A dilated ("atrous") op on the input equals the plain op on the space-to-batch form, which is
how TF's `with_space_to_batch` and dilated `pool` work, and how they work here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops.array_ops import constant, transpose
from layerflow._src.ops.conv3d_ops import avg_pool3d, host_ints, max_pool3d
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import _as_tensor, reshape
from layerflow._src.ops.pool_ops import avg_pool, max_pool

__all__ = [
    "batch_to_space",
    "pool",
    "required_space_to_batch_paddings",
    "space_to_batch",
    "space_to_batch_nd",
    "with_space_to_batch",
]


def _pairs(value: Any, m: int, what: str, opname: str) -> np.ndarray:
    arr = np.asarray(host_ints(value, what, opname), dtype=np.int64)
    if arr.size != 2 * m:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what} must have shape [{m}, 2] (one [start, end] per "
            f"block dimension), got {arr.size} values.",
        )  # fmt: skip
    arr = arr.reshape(m, 2)
    if (arr < 0).any():
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what} must be non-negative, got {arr.tolist()}."
        )
    return arr


def _block(block_shape: Any, x: Any, opname: str) -> tuple[int, ...]:
    block = host_ints(block_shape, "block_shape", opname)
    if not block or any(b < 1 for b in block):
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: block_shape must be positive ints, got {list(block)}."
        )
    if x._data.ndim < len(block) + 1:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: an input of shape {tuple(x._data.shape)} has fewer than "
            f"{len(block)} spatial dimensions after the batch.",
        )  # fmt: skip
    return block


def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any,  # noqa: A002
                      name: str | None = None) -> Any:  # fmt: skip
    """Pad the spatial dims `1..M` by `paddings`, cut them into `block_shape` blocks and move
    each offset within a block to the batch: [B, *S, *R] -> [B * prod(b), *(S + pads) / b, *R].

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(4.0), (1, 2, 2, 1))
    >>> tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]])[:, 0, 0, 0].numpy()
    array([0., 1., 2., 3.], dtype=float32)
    """
    x = _as_tensor(input)
    block = _block(block_shape, x, "space_to_batch_nd")
    m = len(block)
    pads = _pairs(paddings, m, "paddings", "space_to_batch_nd")
    shape = [int(v) for v in x._data.shape]
    padded = [shape[1 + i] + int(pads[i].sum()) for i in range(m)]
    bad = [i for i in range(m) if padded[i] % block[i]]
    if bad:
        i = bad[0]
        raise errors.InvalidArgumentError(
            None, "space_to_batch_nd", f"space_to_batch_nd: padded spatial dimension {i} "
            f"({padded[i]}) is not divisible by block_shape[{i}] = {block[i]}; choose paddings "
            "with tf.required_space_to_batch_paddings.",
        )  # fmt: skip
    if pads.any():
        x = pad(x, [[0, 0], *pads.tolist(), *([[0, 0]] * (len(shape) - 1 - m))])
    rest = shape[1 + m :]
    split = [shape[0]]
    for i in range(m):
        split += [padded[i] // block[i], block[i]]
    x = reshape(x, (*split, *rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    x = transpose(x, perm)
    return reshape(x, (shape[0] * int(np.prod(block)), *(p // b for p, b in zip(padded, block)),
                       *rest))  # fmt: skip


def space_to_batch(input: Any, block_shape: Any, paddings: Any,  # noqa: A002
                   name: str | None = None) -> Any:  # fmt: skip
    """`tf.space_to_batch` (TF 2): the same as `space_to_batch_nd`.

    >>> import layerflow as tf
    >>> tf.space_to_batch(tf.ones((1, 4, 4, 3)), [2, 2], [[0, 0], [0, 0]]).shape
    TensorShape([4, 2, 2, 3])
    """
    return space_to_batch_nd(input, block_shape, paddings)


def batch_to_space(input: Any, block_shape: Any, crops: Any,  # noqa: A002
                   name: str | None = None) -> Any:  # fmt: skip
    """The inverse of `space_to_batch_nd`: [B * prod(b), *S, *R] -> [B, *(S * b - crops), *R].

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(4.0), (4, 1, 1, 1))
    >>> tf.batch_to_space(x, [2, 2], [[0, 0], [0, 0]])[0, :, :, 0].numpy()
    array([[0., 1.],
           [2., 3.]], dtype=float32)
    """
    x = _as_tensor(input)
    block = _block(block_shape, x, "batch_to_space")
    m = len(block)
    crop = _pairs(crops, m, "crops", "batch_to_space")
    shape = [int(v) for v in x._data.shape]
    nb = int(np.prod(block))
    if shape[0] % nb:
        raise errors.InvalidArgumentError(
            None, "batch_to_space", f"batch_to_space: the batch ({shape[0]}) must be divisible "
            f"by the product of block_shape {list(block)} ({nb}).",
        )  # fmt: skip
    batch, spatial, rest = shape[0] // nb, shape[1 : 1 + m], shape[1 + m :]
    full = [s * b for s, b in zip(spatial, block)]
    if any(int(crop[i].sum()) > full[i] for i in range(m)):
        raise errors.InvalidArgumentError(
            None, "batch_to_space", f"batch_to_space: crops {crop.tolist()} exceed the "
            f"uncropped spatial shape {full}.",
        )  # fmt: skip
    x = reshape(x, (*block, batch, *spatial, *rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    x = reshape(transpose(x, perm), (batch, *full, *rest))
    if crop.any():
        key = (slice(None),) + tuple(slice(int(c0), f - int(c1)) for (c0, c1), f in zip(crop, full))
        x = x[key]
    return x


def required_space_to_batch_paddings(input_shape: Any, block_shape: Any, base_paddings: Any = None,
                                     name: str | None = None) -> Any:  # fmt: skip
    """`(paddings, crops)`: the paddings that make `input_shape` (spatial dims only) plus
    `base_paddings` divisible by `block_shape`, and the crops that undo the extra.

    >>> import layerflow as tf
    >>> p, c = tf.required_space_to_batch_paddings([5, 4], [2, 3])
    >>> p.numpy().tolist(), c.numpy().tolist()
    ([[0, 1], [0, 2]], [[0, 1], [0, 2]])
    """
    shape = np.asarray(host_ints(input_shape, "input_shape", "required_space_to_batch_paddings"))
    block = np.asarray(host_ints(block_shape, "block_shape", "required_space_to_batch_paddings"))
    if shape.shape != block.shape:
        raise ValueError(
            f"required_space_to_batch_paddings: input_shape {shape.tolist()} and block_shape "
            f"{block.tolist()} must have the same length."
        )
    base = (np.zeros((len(block), 2), np.int64) if base_paddings is None
            else _pairs(base_paddings, len(block), "base_paddings",
                        "required_space_to_batch_paddings"))  # fmt: skip
    full = shape + base[:, 0] + base[:, 1]
    extra = (block - full % block) % block
    paddings = np.stack([base[:, 0], base[:, 1] + extra], axis=1)
    crops = np.stack([np.zeros_like(extra), extra], axis=1)
    return constant(paddings.astype(np.int32)), constant(crops.astype(np.int32))


def with_space_to_batch(input: Any, dilation_rate: Any, padding: str, op: Any,  # noqa: A002
                        filter_shape: Any = None, spatial_dims: Any = None,
                        data_format: str | None = None) -> Any:  # fmt: skip
    """`op(input, num_spatial_dims, padding)` with its window dilated by `dilation_rate`: run
    `op` with padding "VALID" on `space_to_batch_nd(input)` and move the result back (TF's
    trick for atrous ops). "SAME" needs `filter_shape` to size the padding.

    >>> import layerflow as tf
    >>> x, k = tf.ones((1, 7, 7, 1)), tf.ones((3, 3, 1, 1))
    >>> y = tf.nn.with_space_to_batch(x, [2, 2], "VALID",
    ...                               lambda t, n, p: tf.nn.conv2d(t, k, 1, p))
    >>> y.shape
    TensorShape([1, 3, 3, 1])
    """
    x = _as_tensor(input)
    rate = np.asarray(host_ints(dilation_rate, "dilation_rate", "with_space_to_batch"))
    n = len(rate)
    if n == 0 or (rate < 1).any():
        raise ValueError(f"with_space_to_batch: dilation_rate must be positive ints, got {rate}.")
    padding = str(padding).upper()
    if padding not in ("SAME", "VALID"):
        raise ValueError(
            f"with_space_to_batch: padding must be 'SAME' or 'VALID', got {padding!r}."
        )
    if (rate == 1).all():
        return op(x, n, padding)
    first = data_format is not None and str(data_format).upper().startswith("NC")
    if spatial_dims is None:
        spatial_dims = list(range(2, n + 2)) if first else list(range(1, n + 1))
    dims = [int(d) for d in spatial_dims]
    if len(dims) != n or dims != sorted(set(dims)) or dims[0] < 1:
        raise ValueError(
            f"with_space_to_batch: spatial_dims must be {n} increasing dims >= 1, got {dims}."
        )
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("with_space_to_batch: padding='SAME' needs filter_shape.")
        fs = np.asarray(host_ints(filter_shape, "filter_shape", "with_space_to_batch"))[:n]
        extra = (fs - 1) * rate
        base = np.stack([extra // 2, extra - extra // 2], axis=1)
    else:
        base = np.zeros((n, 2), np.int64)
    # Dims between the batch and the last spatial dim that are not spatial get block 1.
    full_rate = np.ones(dims[-1], np.int64)
    full_base = np.zeros((dims[-1], 2), np.int64)
    full_rate[np.array(dims) - 1] = rate
    full_base[np.array(dims) - 1] = base
    in_shape = [int(v) for v in x._data.shape[1 : dims[-1] + 1]]
    paddings, crops = required_space_to_batch_paddings(in_shape, full_rate, full_base)
    converted = space_to_batch_nd(x, full_rate, paddings)
    result = op(converted, n, "VALID")
    return batch_to_space(result, full_rate, crops)


_POOL_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def pool(input: Any, window_shape: Any, pooling_type: str, strides: Any = None,  # noqa: A002
         padding: str = "VALID", data_format: str | None = None, dilations: Any = None,
         name: str | None = None) -> Any:  # fmt: skip
    """N-D ("MAX" or "AVG") pooling, N = 1, 2, 3; `dilations` > 1 (with strides 1) pools a
    dilated window through `with_space_to_batch`, as TF does.

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> tf.nn.pool(x, [2, 2], "MAX", strides=[2, 2])[0, :, :, 0].numpy()
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    x = _as_tensor(input)
    window = host_ints(window_shape, "window_shape", "pool")
    n = len(window)
    if n not in _POOL_FORMATS or x._data.ndim != n + 2:
        raise ValueError(
            f"pool: window_shape must have 1, 2 or 3 entries matching the input's spatial rank; "
            f"got window {list(window)} for an input of shape {tuple(x._data.shape)}."
        )
    kind = str(pooling_type).upper()
    if kind not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}.")
    fmt = (data_format or _POOL_FORMATS[n][0]).upper()
    if fmt not in _POOL_FORMATS[n]:
        raise ValueError(
            f"pool: data_format must be one of {_POOL_FORMATS[n]}, got {data_format!r}."
        )
    s = _k.ints(1 if strides is None else strides, n, "strides", "pool")
    d = _k.ints(1 if dilations is None else dilations, n, "dilations", "pool")
    if max(s) > 1 and max(d) > 1:
        raise ValueError(
            f"pool: strides > 1 ({list(s)}) together with dilations > 1 ({list(d)}) is not "
            "supported (as in TF)."
        )
    if max(d) > 1 and str(padding).upper() == "SAME":
        raise ValueError(
            f"pool: padding='SAME' is not implemented for dilations > 1 (got {list(d)}), as in "
            "TF; use padding='VALID' or pad the input first."
        )
    fn = {1: (max_pool, avg_pool), 2: (max_pool, avg_pool), 3: (max_pool3d, avg_pool3d)}[n]
    fn = fn[0] if kind == "MAX" else fn[1]

    def run(t: Any, _n: int, p: str) -> Any:
        return fn(t, window, s, p, data_format=fmt)

    if max(d) == 1:
        return run(x, n, padding)
    return with_space_to_batch(x, d, padding, run, filter_shape=window, data_format=fmt)
