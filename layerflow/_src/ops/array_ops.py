"""Creating tensors and moving their elements around: constant, zeros, slicing, concat, ..."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.dispatch import public_api
from layerflow._src.autodiff.op import op
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.convert import (
    as_int,
    as_ints,
    convert_to_tensor,
    host_array,
    is_symbolic_value,
)
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import Variable
from layerflow._src.ops.math_ops import _norm_axis, reshape, zeros_like
from layerflow._src.ops.shape_ops import _shape_of, _size_of

# --- creation ------------------------------------------------------------------------------------


def _shape_tuple(shape: Any, opname: str = "shape", what: str = "shape") -> tuple[int, ...]:
    """A shape of a tensor to create, checked: integers (never rounded), none negative, and at
    most 2**63 - 1 elements in all (TF's limits and error classes)."""
    dims = as_ints(shape, what, opname)
    if any(d < 0 for d in dims):
        raise ValueError(f"{opname}: a {what} cannot have negative dimensions, got {list(dims)}.")
    count = 1
    for d in dims:
        count *= d
    if count > 2**63 - 1:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what} {list(dims)} would have more than 2**63 - 1 elements."
        )
    return dims


def _allocate(opname: str, shape: Any, dtype: Any, make: Any) -> Any:
    """`make()`, with an allocation failure raised as TF's ResourceExhaustedError (also a
    MemoryError) naming the op, the shape and the size."""
    try:
        return make()
    except (MemoryError, ValueError) as err:
        if isinstance(err, ValueError) and "too big" not in str(err) and "Maximum" not in str(err):
            raise
        raise _out_of_memory(opname, shape, dtype) from None


def _out_of_memory(opname: str, shape: Any, dtype: Any) -> errors.OutOfMemoryError:
    nbytes = np.dtype(dtypes.as_dtype(dtype).np).itemsize * int(np.prod(shape, dtype=object))
    return errors.OutOfMemoryError(
        None,
        opname,
        f"{opname}: out of memory allocating a tensor of shape {list(shape)} and dtype "
        f"{dtypes.as_dtype(dtype).name} ({nbytes:,} bytes). Use a smaller shape, or free "
        "memory first.",
    )


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor holding `value` (Python int -> int32, float -> float32, arrays keep their dtype).

    >>> import layerflow as tf
    >>> tf.constant([1, 2, 3])
    <tf.Tensor: shape=(3,), dtype=int32, numpy=array([1, 2, 3], dtype=int32)>
    """
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    device = backend.current_device()
    if isinstance(value, TensorLike):
        arr = backend.to_host(value._data)
        arr = arr if dt is None else arr.astype(dt.np)
    else:
        arr = host_array(value, dt)
    if shape is not None:
        target = _shape_tuple(shape, "constant")
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), target)
        elif arr.size == int(np.prod(target)):
            arr = arr.reshape(target)
        else:
            raise TypeError(
                f"constant: {arr.size} values cannot fill shape {list(target)} (expected 1 or "
                f"{int(np.prod(target))} values)."
            )
    arr = _allocate("constant", arr.shape, arr.dtype, lambda: np.array(arr))
    return Tensor(backend.to_device(arr, device), device)


def _filled(shape: Any, dtype: Any, fill: Any, opname: str) -> Tensor:
    device = backend.current_device()
    dt = dtypes.as_dtype(dtype)
    dims = _shape_tuple(shape, opname)
    if np.dtype(dt.np).kind == "O" and not isinstance(fill, bytes | np.ndarray):
        if fill != 0:  # TF: zeros of tf.string is b""; ones has no string kernel
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: dtype string is not allowed; use tf.fill(dims, b'...')."
            )
        fill = b""
    return Tensor(_allocate(opname, dims, dt.np, lambda: device.xp.full(dims, fill, dt.np)), device)


def zeros(shape: Any, dtype: Any = "float32", name: str | None = None) -> Tensor:
    """A tensor of zeros (float32 unless `dtype` says otherwise); `shape` must be integers.

    >>> import layerflow as tf
    >>> tf.zeros([2]).numpy()
    array([0., 0.], dtype=float32)
    """
    return _filled(shape, dtype, 0, "zeros")


def ones(shape: Any, dtype: Any = "float32", name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 1, "ones")


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape `dims` filled with `value`, in the value's dtype (tensors keep theirs).

    >>> import layerflow as tf
    >>> tf.fill([2], tf.constant(3, tf.int64)).dtype
    tf.int64
    """
    v = backend.to_host(value._data) if isinstance(value, TensorLike) else host_array(value)
    return _filled(dims, dtypes.from_numpy(v.dtype), v, "fill")


def eye(num_rows: int, num_columns: int | None = None, batch_shape: Any = None,
        dtype: Any = "float32", name: str | None = None) -> Tensor:  # fmt: skip
    device = backend.current_device()
    rows = as_int(num_rows, "num_rows", "eye")
    cols = rows if num_columns is None else as_int(num_columns, "num_columns", "eye")
    batch = () if batch_shape is None else _shape_tuple(batch_shape, "eye", "batch_shape")
    shape = _shape_tuple(batch + (rows, cols), "eye")
    dt = dtypes.as_dtype(dtype).np

    def make() -> Any:
        m = device.xp.eye(rows, cols, dtype=dt)
        return device.xp.broadcast_to(m, shape).copy() if batch else m

    return Tensor(_allocate("eye", shape, dt, make), device)


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001
          name: str | None = None) -> Tensor:  # fmt: skip
    """`tf.range`: like Python's range; int32 for ints, float32 if any bound is a float."""
    if limit is None:
        start, limit = 0, start
    tracer = backend.flags.tracer
    if tracer is not None and any(is_symbolic_value(v) for v in (start, limit, delta)):
        return _traced_range(tracer, (start, limit, delta), dtype)
    vals = [float(v) if isinstance(v, TensorLike) and v.dtype.is_floating else v
            for v in (start, limit, delta)]  # fmt: skip
    vals = [int(v) if isinstance(v, TensorLike) else v for v in vals]
    if delta == 0:
        raise errors.InvalidArgumentError(None, "range", "range: delta must not be 0.")
    dt = _range_dtype((start, limit, delta), dtype)
    device = backend.current_device()
    return Tensor(device.xp.arange(*vals, dtype=dt), device)


_RANGE_ORDER = ("int32", "int64", "float16", "bfloat16", "float32", "float64")


def _range_dtype(bounds: tuple, dtype: Any) -> Any:
    """`tf.range`'s dtype: `dtype` if given, else TF's widest of the bounds' dtypes
    (int32 < int64 < float16 < float32 < float64), Python ints counting as int32 and floats as
    float32."""
    if dtype is not None:
        return dtypes.as_dtype(dtype).np
    inferred = "int32"
    for v in bounds:
        if isinstance(v, float):
            name_ = "float32"
        elif getattr(v, "dtype", None) is not None and not isinstance(v, (int, bool)):
            name_ = dtypes.as_dtype(v.dtype).name
        else:
            name_ = "int32"
        if name_ in _RANGE_ORDER and _RANGE_ORDER.index(name_) > _RANGE_ORDER.index(inferred):
            inferred = name_
    return dtypes.as_dtype(inferred).np


def _traced_range(tracer: Any, bounds: tuple, dtype: Any) -> Any:
    """`tf.range` on a tensor bound inside a `tf.function` trace: a step computed at each call
    (its length is unknown while tracing), with `_range_dtype`'s dtype."""
    dt = _range_dtype(bounds, dtype)

    def run(xp: Any, start: Any, limit: Any, delta: Any) -> Any:
        if delta == 0:
            raise errors.InvalidArgumentError(None, "range", "range: delta must not be 0.")
        return xp.arange(start.item(), limit.item(), delta.item(), dtype=dt)

    return tracer.array_call(run, list(bounds), ArraySpec((None,), dt), "range")


def linspace(start: Any, stop: Any, num: int, name: str | None = None, axis: int = 0) -> Tensor:
    device = backend.current_device()
    s = float(start)
    dt = start.dtype.np if isinstance(start, TensorLike) else np.float32
    return Tensor(device.xp.linspace(s, float(stop), int(num)).astype(dt), device)


# --- identity and gradient control ----------------------------------------------------------------


@op("identity", may_alias=True)
def identity(xp: Any, x: Any) -> Any:
    """The same value as a new tensor (a Variable is read)."""
    return x


@identity.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return dy


@op("stop_gradient", may_alias=True)
def stop_gradient(xp: Any, x: Any) -> Any:
    """The same value, through which no gradient flows."""
    return x


# No gradient rule is registered, so tapes never record stop_gradient: its output is a constant.


# --- slicing --------------------------------------------------------------------------------------


def _normalize_key(key: Any) -> Any:
    if isinstance(key, tuple):
        return tuple(_normalize_key(k) for k in key)
    if isinstance(key, TensorLike):
        arr = key._data
        if arr.dtype.kind == "b":
            return arr
        return arr if arr.ndim else int(backend.to_host(arr))
    if isinstance(key, list):
        return np.asarray(key)
    if isinstance(key, slice):
        parts = [
            int(p) if isinstance(p, TensorLike) else p for p in (key.start, key.stop, key.step)
        ]
        return slice(*parts)
    return key


@op("strided_slice", 1, may_alias=True)
def _getitem(xp: Any, x: Any, key: Any) -> Any:
    # A scalar takes only new axes and ellipses (`x[..., None]` has shape (1,), as in TF).
    if x.ndim == 0 and not _new_axes_only(key):
        raise errors.InvalidArgumentError(
            None, "strided_slice", "Index out of range: cannot index a scalar (rank-0) tensor."
        )
    try:
        return x[key]
    except IndexError as err:
        raise errors.InvalidArgumentError(
            None, "strided_slice", f"Slicing a tensor of shape {tuple(x.shape)} with {key!r}: {err}"
        ) from None


@_getitem.grad
def _(dy: Any, out: Any, x: Any, key: Any) -> Any:
    return _getitem_grad(dy, tuple(x._data.shape), key)


@op("strided_slice_grad")
def _getitem_grad(xp: Any, dy: Any, shape: tuple[int, ...], key: Any) -> Any:
    dx = xp.zeros(shape, dtype=dy.dtype)
    if _is_basic(key):
        dx[key] = dy
    else:
        xp.add.at(dx, key, dy)
    return dx


@_getitem_grad.grad
def _(ddx: Any, out: Any, dy: Any, shape: Any, key: Any) -> Any:
    return _getitem(ddx, key)


def _new_axes_only(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis for k in keys)


def _is_basic(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, int | slice) for k in keys)


def getitem(x: Any, key: Any) -> Tensor:
    """`x[key]`: ints, slices (negative steps too), `...`, `None`, int and bool index tensors."""
    return _getitem(x, _normalize_key(key))


def _variable_getitem(v: Variable, key: Any) -> Tensor:
    key = _normalize_key(key)
    out = _getitem(v, key)
    out._src = (v, key)
    return out


# --- shape manipulation ---------------------------------------------------------------------------


@op("transpose", 1, may_alias=True)
def _transpose(xp: Any, x: Any, perm: tuple[int, ...]) -> Any:
    return xp.transpose(x, perm)


@_transpose.grad
def _(dy: Any, out: Any, x: Any, perm: tuple[int, ...]) -> Any:
    return _transpose(dy, tuple(int(i) for i in np.argsort(perm)))


def transpose(a: Any, perm: Any = None, conjugate: bool = False, name: str | None = None) -> Tensor:
    """Permute axes (reverse them when `perm` is None)."""
    x = a if isinstance(a, TensorLike) else convert_to_tensor(a)
    nd = x._data.ndim
    if perm is None:
        perm = tuple(reversed(np.arange(nd).tolist()))
    else:
        perm = tuple(int(p) for p in (perm.numpy() if isinstance(perm, TensorLike) else perm))
        if sorted(p % nd for p in perm) != list(np.arange(nd)):
            raise errors.InvalidArgumentError(
                None,
                "transpose",
                f"transpose: perm {list(perm)} is not a permutation of {nd} axes.",
            )
        perm = tuple(p % nd for p in perm)
    return _transpose(x, perm)


def _expand_dims_spec(input: Any, axis: int, name: str | None = None) -> ArraySpec:  # noqa: A002
    shape = list(input.shape)
    shape.insert(as_int(axis, "axis", "expand_dims") % (len(shape) + 1), 1)
    return ArraySpec(shape, input.dtype)


def _squeeze_spec(input: Any, axis: Any = None, name: str | None = None) -> ArraySpec:  # noqa: A002
    shape = list(input.shape)
    axes = _norm_axis(axis, len(shape), "squeeze")
    if axes is None:  # unknown dims stay (TF's static shape cannot tell whether they are 1)
        return ArraySpec([d for d in shape if d != 1], input.dtype)
    return ArraySpec([d for i, d in enumerate(shape) if i not in axes], input.dtype)


# Public functions that compute attributes from their input's shape declare their name and
# spec, so a symbolic call replays the function itself (never attributes of unknown sizes).
@public_api("expand_dims", spec=_expand_dims_spec)
def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:  # noqa: A002
    x = input if isinstance(input, TensorLike) else convert_to_tensor(input)
    shape = list(x._data.shape)
    nd = len(shape) + 1
    ax = as_int(axis, "axis", "expand_dims")
    if not -nd <= ax < nd:
        raise errors.InvalidArgumentError(
            None, "expand_dims", f"expand_dims: axis {axis} is out of range for rank {nd - 1}."
        )
    shape.insert(ax % nd, 1)
    return reshape(x, shape)


@public_api("squeeze", spec=_squeeze_spec)
def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    x = input if isinstance(input, TensorLike) else convert_to_tensor(input)
    shape = list(x._data.shape)
    axes = _norm_axis(axis, len(shape), "squeeze")
    if axes is None:
        new = [d for d in shape if d != 1]
    else:
        for a in axes:
            if shape[a] != 1:
                raise errors.InvalidArgumentError(
                    None,
                    "squeeze",
                    f"squeeze: cannot squeeze axis {a} of size {shape[a]} (shape {shape}).",
                )
        new = [d for i, d in enumerate(shape) if i not in axes]
    return reshape(x, new)


@op("concat", list_input=True)
def _concat(xp: Any, values: list[Any], axis: int) -> Any:
    last = values[0].ndim - 1
    if axis == last and last > 0 and all(v.transpose(last, *range(last)).flags.c_contiguous
                                          for v in values):  # fmt: skip
        # Channels-first arrays behind channels-last views (conv outputs): joined as they lie,
        # block copies, and the result keeps that layout for the next convolution.
        parts = [v.transpose(last, *range(last)) for v in values]
        return xp.concatenate(parts, axis=0).transpose(*range(1, last + 1), 0)
    return xp.concatenate(values, axis=axis)


@_concat.grad
def _(dy: Any, out: Any, values: list[Any], axis: int) -> Any:
    sizes = [v._data.shape[axis] for v in values]
    return list(split(dy, sizes, axis=axis))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def concat(values: Any, axis: int, name: str | None = None) -> Tensor:
    """Join tensors along an existing axis."""
    values = list(values)
    if not values:
        raise ValueError("concat needs at least one tensor.")
    if len(values) == 1:
        return identity(values[0])
    first = values[0] if isinstance(values[0], TensorLike) else convert_to_tensor(values[0])
    ax = _norm_axis(as_int(axis, "axis", "concat"), first._data.ndim, "concat")[0]
    return _concat(values, ax)


@op("stack", list_input=True)
def _stack(xp: Any, values: list[Any], axis: int) -> Any:
    return xp.stack(values, axis=axis)


@_stack.grad
def _(dy: Any, out: Any, values: list[Any], axis: int) -> Any:
    return list(unstack(dy, axis=axis))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def stack(values: Any, axis: int = 0, name: str | None = None) -> Tensor:
    """Join tensors of equal shape along a new axis."""
    values = list(values)
    if not values:
        raise ValueError("stack needs at least one tensor.")
    first = values[0] if isinstance(values[0], TensorLike) else convert_to_tensor(values[0])
    ax = _norm_axis(as_int(axis, "axis", "stack"), first._data.ndim + 1, "stack")[0]
    return _stack(values, ax)


@op("unstack", multi_out=True)
def _unstack(xp: Any, x: Any, axis: int) -> Any:
    return [xp.take(x, i, axis=axis) for i in np.arange(x.shape[axis])]


@_unstack.grad
def _(dys: Any, outs: Any, x: Any, axis: int) -> Any:
    return _stack(list(dys), axis)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str | None = None) -> list:
    x = value if isinstance(value, TensorLike) else convert_to_tensor(value)
    return list(_unstack(x, _norm_axis(axis, x._data.ndim, "unstack")[0]))


@op("split", multi_out=True)
def _split(xp: Any, x: Any, sizes: tuple[int, ...], axis: int) -> Any:
    bounds = np.cumsum(sizes)[:-1].tolist()
    return xp.split(x, bounds, axis=axis)


@_split.grad
def _(dys: Any, outs: Any, x: Any, sizes: Any, axis: int) -> Any:
    return _concat(list(dys), axis)


def split(value: Any, num_or_size_splits: Any, axis: int = 0, num: Any = None,
          name: str | None = None) -> list:  # fmt: skip
    """Split into `n` equal parts or parts of the given sizes (one may be -1)."""
    x = value if isinstance(value, TensorLike) else convert_to_tensor(value)
    ax = _norm_axis(as_int(axis, "axis", "split"), x._data.ndim, "split")[0]
    n = x._data.shape[ax]
    if isinstance(num_or_size_splits, int | np.integer):
        k = int(num_or_size_splits)
        if k <= 0 or n % k:
            raise errors.InvalidArgumentError(
                None,
                "split",
                f"split: dimension {ax} of size {n} cannot be split into {k} equal parts.",
            )
        sizes = (n // k,) * k
    else:
        sizes = list(as_ints(num_or_size_splits, "num_or_size_splits", "split"))
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise errors.InvalidArgumentError(
                None, "split", f"split: sizes {sizes} do not add up to dimension {ax} of size {n}."
            )
    return list(_split(x, tuple(sizes), ax))


# --- shape queries --------------------------------------------------------------------------------


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def shape(input: Any, out_type: Any = "int32", name: str | None = None) -> Tensor:  # noqa: A002
    x = input if isinstance(input, TensorLike) else convert_to_tensor(input)
    if None in x._data.shape and backend.flags.tracer is not None:  # known when it runs
        return _shape_of(x, dtypes.as_dtype(out_type).np)
    device = x._device
    return Tensor(device.xp.asarray(x._data.shape, dtype=dtypes.as_dtype(out_type).np), device)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def size(input: Any, out_type: Any = "int32", name: str | None = None) -> Tensor:  # noqa: A002
    x = input if isinstance(input, TensorLike) else convert_to_tensor(input)
    if x._data.size is None and backend.flags.tracer is not None:  # known when it runs
        return _size_of(x, dtypes.as_dtype(out_type).np)
    return Tensor(x._device.xp.asarray(x._data.size, dtype=dtypes.as_dtype(out_type).np), x._device)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    x = input if isinstance(input, TensorLike) else convert_to_tensor(input)
    return Tensor(x._device.xp.asarray(x._data.ndim, dtype=np.int32), x._device)


__all__ = [
    "TensorShape", "concat", "constant", "expand_dims", "eye", "fill", "getitem", "identity",
    "linspace", "ones", "range", "rank", "shape", "size", "split", "squeeze", "stack",
    "stop_gradient", "transpose", "unstack", "zeros", "zeros_like",
]  # fmt: skip
