"""Shapes known only when a traced program runs (`tf.function` with unknown dimensions).

`tf.shape`, `tf.size`, `expand_dims` and `reshape` of tensors whose static shape holds None
record these ops, which read the sizes from the arrays at run time. Eagerly, shapes are always
known and these ops are not used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework.convert import is_symbolic_value
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.compare_ops import cast


@op("shape")
def _shape_of(xp: Any, x: Any, dtype: Any = np.int32) -> Any:
    return xp.asarray(x.shape, dtype=dtype)


@_shape_of.spec
def _(x: Any, dtype: Any = np.int32) -> Any:
    return ArraySpec((x.ndim,), dtype)


@op("size")
def _size_of(xp: Any, x: Any, dtype: Any = np.int32) -> Any:
    return xp.asarray(x.size, dtype=dtype)


@_size_of.spec
def _(x: Any, dtype: Any = np.int32) -> Any:
    return ArraySpec((), dtype)


@op("expand_dims", may_alias=True)
def _expand_dims(xp: Any, x: Any, axis: int) -> Any:
    return xp.expand_dims(x, axis)


@_expand_dims.spec
def _(x: Any, axis: int) -> Any:
    shape = list(x.shape)
    shape.insert(axis % (len(shape) + 1), 1)
    return ArraySpec(shape, x.dtype)


@_expand_dims.grad
def _(dy: Any, out: Any, x: Any, axis: int) -> Any:
    return _squeeze(dy, axis)


@op("squeeze_axis", may_alias=True)
def _squeeze(xp: Any, x: Any, axis: int) -> Any:
    return xp.squeeze(x, axis)


@_squeeze.spec
def _(x: Any, axis: int) -> Any:
    shape = list(x.shape)
    del shape[axis % len(shape)]
    return ArraySpec(shape, x.dtype)


@_squeeze.grad
def _(dy: Any, out: Any, x: Any, axis: int) -> Any:
    return _expand_dims(dy, axis)


def traced_reshape(tensor: Any, shape: Any, static_reshape: Any) -> Any:
    """`reshape` inside a tf.function trace: a target computed from a static shape with one
    unknown dimension gets -1 there; a target holding symbolic sizes (`tf.shape(x)[0]`) is
    read when the program runs."""
    dims = list(shape) if isinstance(shape, list | tuple) else None
    if dims is None or not any(is_symbolic_value(d) for d in dims):
        if dims is not None and dims.count(None) == 1 and -1 not in dims:
            dims = [-1 if d is None else d for d in dims]
        return static_reshape(tensor, dims if dims is not None else shape)
    static = tuple(d if isinstance(d, int) and d >= 0 else None for d in dims)
    device = _device_of(tensor)
    parts = [
        _expand_dims(cast(d, np.int64), 0)
        if is_symbolic_value(d)
        else Tensor(np.asarray([int(d)], np.int64), device)
        for d in dims
    ]
    return _reshape_dynamic(tensor, _concat_vectors(parts), static)


def _device_of(x: Any) -> Any:
    return x._device if hasattr(x, "_device") else backend.current_device()


@op("concat_vectors", list_input=True)
def _concat_vectors(xp: Any, parts: list[Any]) -> Any:
    return xp.concatenate(parts)


@_concat_vectors.spec
def _(parts: list[Any]) -> Any:
    return ArraySpec((len(parts),), parts[0].dtype)


@op("reshape_dynamic", 2, same_dtype=False, may_alias=True)
def _reshape_dynamic(xp: Any, x: Any, shape: Any, static: tuple = ()) -> Any:
    return x.reshape(tuple(int(d) for d in shape.tolist()))


@_reshape_dynamic.spec
def _(x: Any, shape: Any, static: tuple = ()) -> Any:
    return ArraySpec(static if static else (None,) * shape.shape[0], x.dtype)


@_reshape_dynamic.grad
def _(dy: Any, out: Any, x: Any, shape: Any, static: tuple = ()) -> Any:
    return _reshape_dynamic(dy, _shape_of(x, np.int64), tuple(x._data.shape)), None
