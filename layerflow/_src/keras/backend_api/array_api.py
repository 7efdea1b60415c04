"""Keras backend shape manipulation: reshape, concatenate, padding, resizing, repeats."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.keras.backend_api.math_api import _t, cast, ndim
from layerflow._src.keras.engine.backend_config import image_data_format
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    core_ops,
    gather_ops,
    image_ops,
    manip_ops,
    sparse_ops,
)


def shape(x: Any) -> Any:
    """The dynamic shape of `x` as an int32 tensor."""
    return array_ops.shape(x)


def is_sparse(tensor: Any) -> bool:
    """True for a `tf.SparseTensor`."""
    return isinstance(tensor, SparseTensor)


def to_dense(tensor: Any) -> Any:
    """A sparse tensor made dense; anything else unchanged."""
    return sparse_ops.to_dense(tensor) if is_sparse(tensor) else tensor


def zeros_like(x: Any, dtype: Any = None, name: str | None = None) -> Any:
    return compare_ops.zeros_like(x, dtype=dtype, name=name)


def ones_like(x: Any, dtype: Any = None, name: str | None = None) -> Any:
    return compare_ops.ones_like(x, dtype=dtype, name=name)


def gather(reference: Any, indices: Any) -> Any:
    return gather_ops.gather(reference, indices)


def concatenate(tensors: Any, axis: int = -1) -> Any:
    """Concatenate along `axis`; sparse inputs are densified first."""
    if axis < 0:
        rank = ndim(_t(tensors[0]))
        axis = axis % rank if rank else 0
    return array_ops.concat([to_dense(x) for x in tensors], axis)


def reshape(x: Any, shape: Any) -> Any:
    return core_ops.reshape(x, shape)


def permute_dimensions(x: Any, pattern: Any) -> Any:
    return array_ops.transpose(x, perm=pattern)


_INTERPOLATIONS = ("area", "bicubic", "bilinear", "gaussian", "lanczos3", "lanczos5",
                   "mitchellcubic", "nearest")  # fmt: skip


def _check_format(data_format: Any) -> str:
    if data_format is None:
        data_format = image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


def resize_images(
    x: Any, height_factor: int, width_factor: int, data_format: str, interpolation: str = "nearest"
) -> Any:
    """Upsample the two spatial axes of a 4-D tensor by integer factors."""
    x = _t(x)
    if data_format == "channels_first":
        rows, cols = 2, 3
    elif data_format == "channels_last":
        rows, cols = 1, 2
    else:
        raise ValueError(f"Invalid `data_format` argument: {data_format}")
    if interpolation not in _INTERPOLATIONS:
        listed = '"' + '", "'.join(_INTERPOLATIONS) + '"'
        raise ValueError(
            f'`interpolation` argument should be one of: {listed}. Received: "{interpolation}".'
        )
    new_shape = [int(x.shape[rows]) * height_factor, int(x.shape[cols]) * width_factor]
    if data_format == "channels_first":
        x = permute_dimensions(x, [0, 2, 3, 1])
    method = "nearest" if interpolation == "nearest" else interpolation
    x = image_ops.resize(x, new_shape, method=method)
    if data_format == "channels_first":
        x = permute_dimensions(x, [0, 3, 1, 2])
    return x


def resize_volumes(
    x: Any, depth_factor: int, height_factor: int, width_factor: int, data_format: str
) -> Any:
    """Repeat the three spatial axes of a 5-D tensor by integer factors."""
    if data_format == "channels_first":
        first = 2
    elif data_format == "channels_last":
        first = 1
    else:
        raise ValueError("Invalid data_format: " + str(data_format))
    out = repeat_elements(x, depth_factor, axis=first)
    out = repeat_elements(out, height_factor, axis=first + 1)
    return repeat_elements(out, width_factor, axis=first + 2)


def repeat_elements(x: Any, rep: int, axis: int) -> Any:
    """Repeat each element `rep` times along `axis`, like `np.repeat`."""
    return manip_ops.repeat(x, rep, axis=axis)


def repeat(x: Any, n: int) -> Any:
    """Repeat a 2-D `(batch, features)` tensor `n` times into `(batch, n, features)`."""
    x = _t(x)
    if ndim(x) != 2:
        raise ValueError(f"K.repeat expects a 2-D tensor, got shape {tuple(x.shape)}.")
    return manip_ops.tile(array_ops.expand_dims(x, 1), [1, n, 1])


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = "int32") -> Any:
    """`range` as a tensor; a negative `start` alone gives an empty result, as in Keras."""
    if stop is None and start < 0:
        start = 0
    result = array_ops.range(start, limit=stop, delta=step, name="arange")
    if dtype != "int32":
        result = cast(result, dtype)
    return result


def tile(x: Any, n: Any) -> Any:
    if isinstance(n, int):
        n = [n]
    return manip_ops.tile(x, n)


def flatten(x: Any) -> Any:
    return core_ops.reshape(x, [-1])


def batch_flatten(x: Any) -> Any:
    """Reshape to `(batch, -1)`."""
    x = _t(x)
    return core_ops.reshape(x, [-1, int(_prod(x.shape[1:]))])


def _prod(dims: Any) -> int:
    out = 1
    for d in dims:
        out *= int(d)
    return out


def expand_dims(x: Any, axis: int = -1) -> Any:
    return array_ops.expand_dims(x, axis)


def squeeze(x: Any, axis: int) -> Any:
    return array_ops.squeeze(x, [axis])


def stack(x: Any, axis: int = 0) -> Any:
    return array_ops.stack(x, axis=axis)


def one_hot(indices: Any, num_classes: int) -> Any:
    return gather_ops.one_hot(indices, depth=num_classes, axis=-1)


def reverse(x: Any, axes: Any) -> Any:
    if isinstance(axes, int):
        axes = [axes]
    return manip_ops.reverse(x, axes)


def _pairs(padding: Any, n: int, fn: str) -> list:
    ok = len(padding) == n and all(len(p) == 2 for p in padding)
    if not ok:
        raise ValueError(f"{fn} expects padding as {n} pairs of ints, got {padding!r}.")
    return [list(p) for p in padding]


def temporal_padding(x: Any, padding: Any = (1, 1)) -> Any:
    """Pad the middle axis of a 3-D tensor with zeros."""
    if len(padding) != 2:
        raise ValueError(f"temporal_padding expects padding as 2 ints, got {padding!r}.")
    return manip_ops.pad(x, [[0, 0], [padding[0], padding[1]], [0, 0]])


def spatial_2d_padding(x: Any, padding: Any = ((1, 1), (1, 1)), data_format: Any = None) -> Any:
    """Pad the 2 spatial axes of a 4-D tensor with zeros."""
    pads = _pairs(padding, 2, "spatial_2d_padding")
    if _check_format(data_format) == "channels_first":
        return manip_ops.pad(x, [[0, 0], [0, 0]] + pads)
    return manip_ops.pad(x, [[0, 0]] + pads + [[0, 0]])


def spatial_3d_padding(
    x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: Any = None
) -> Any:
    """Pad the 3 spatial axes of a 5-D tensor with zeros."""
    pads = _pairs(padding, 3, "spatial_3d_padding")
    if _check_format(data_format) == "channels_first":
        return manip_ops.pad(x, [[0, 0], [0, 0]] + pads)
    return manip_ops.pad(x, [[0, 0]] + pads + [[0, 0]])
