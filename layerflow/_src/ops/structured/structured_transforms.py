"""StructuredTensor indexing and transforms (TF's `__getitem__`, `with_updates`, `promote`,
`partition_outer_dimension`, `merge_dims`), on the fields and the row partitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.core_ops import reshape
from layerflow._src.ops.ragged.ragged_shape import RowPartition
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _host
from layerflow._src.ops.structured.structured_tensor import StructuredTensor


def _full_slice(k: Any) -> bool:
    return isinstance(k, slice) and k.start is None and k.stop is None and k.step is None


def _index(value: Any, key: tuple) -> Any:
    if not key:
        return value
    return value[key]


def getitem(st: StructuredTensor, key: tuple) -> Any:
    if st.rank == 0:
        if _full_slice(key[0]):
            fields = {k: _index(v, key[1:]) for k, v in st._fields.items()}
            return StructuredTensor.from_fields(fields, st.shape)
        if not isinstance(key[0], str | bytes):
            raise ValueError(
                "Key for indexing a StructuredTensor must be a string or a full slice (':')"
            )
        return _index(st._fields[_name(key[0])], key[1:])
    rank = st.rank
    if len(key) <= rank:
        for k in key:
            # TF's message (its first field's indexing error), with a hint
            if isinstance(k, str | bytes) and st._fields:
                raise TypeError(
                    "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                    f"scalar tf.int32/tf.int64 tensors are valid indices, got {k!r}. A "
                    f"StructuredTensor of rank {rank} takes a field name after {rank} indices, "
                    f"e.g. st[{', '.join([':'] * rank)}, {k!r}]."
                )
        fields = {k: v[key] for k, v in st._fields.items()}  # first: their errors come first
        new_shape = list(st.shape)
        for d, k in enumerate(key):
            if isinstance(k, slice):
                if not _full_slice(k):
                    new_shape[d] = None
            elif isinstance(k, int | np.integer | TensorLike) and not isinstance(k, bool):
                new_shape[d] = -1  # dropped
            elif k is None:
                raise ValueError("Slicing not supported for tf.newaxis")
            else:
                raise ValueError(f"Slicing not supported for {k!r}")
        new_shape = [d for d in new_shape if d != -1]
        return StructuredTensor.from_fields(fields, new_shape)
    if not isinstance(key[rank], str | bytes):
        raise ValueError("Key for indexing a StructuredTensor must be a string")
    return _index(st._fields[_name(key[rank])], key[:rank] + key[rank + 1 :])


def _name(key: Any) -> str:
    return key.decode() if isinstance(key, bytes) else key


# --- with_updates and promote ---------------------------------------------------------------------


def _as_path(name: Any) -> tuple:
    if isinstance(name, str):
        return (name,)
    if isinstance(name, list):
        return tuple(name)
    if not isinstance(name, tuple):
        raise TypeError(
            f"StructuredTensor.with_updates: a field name is a string or a tuple of strings, "
            f"got {name!r}."
        )
    return name


def with_updates(st: StructuredTensor, updates: dict, validate: bool) -> StructuredTensor:
    items = sorted(((_as_path(n), v) for n, v in updates.items()), key=lambda item: item[0])
    for i in range(1, len(items)):
        name, prev = items[i][0], items[i - 1][0]
        if name[: len(prev)] == prev:
            raise ValueError(
                "`StructuredTensor.with_updates` does not allow both parent and child nodes to "
                f"be updated: parent={prev}, child={name}. If needed you can update child nodes "
                "in the parent update value."
            )
    return _with_updates_impl(st, (), items, validate)


def _with_updates_impl(st: StructuredTensor, prefix: tuple, updates: list,
                       validate: bool) -> StructuredTensor:  # fmt: skip
    fields = dict(st._fields)

    def fullpath(name: Any) -> str:
        return str(prefix + (name,))

    for name, value in updates:
        if not name or not name[0]:
            raise ValueError(
                f"`StructuredTensor.with_updates` does not allow empty names {fullpath(name)}."
            )
        if len(name) == 1:
            key = name[0]
            if value is None:
                if key not in fields:
                    raise ValueError(
                        f"`StructuredTensor.with_updates` cannot delete field {fullpath(key)} "
                        "because it is not present."
                    )
                fields.pop(key)
            elif callable(value):
                if key not in fields:
                    raise ValueError(
                        f"`StructuredTensor.with_updates` cannot update the field "
                        f"{fullpath(key)} because a transforming function was given, but that "
                        "field does not already exist."
                    )
                fields[key] = value(fields[key])
            else:
                fields[key] = value
            continue
        head, rest = name[0], name[1:]
        if head not in fields:
            raise ValueError(
                f"`StructuredTensor.with_updates` cannot create new sub-field {prefix + name} if "
                f"parent field {fullpath(head)} is not set."
            )
        current = fields[head]
        if not isinstance(current, StructuredTensor):
            raise ValueError(
                f"`StructuredTensor.with_updates` cannot create new sub-field {prefix + name} if "
                f"parent structure {fullpath(head)} is not a `StructuredTensor` that can contain "
                f"sub-structures -- it is a `{type(current)}`."
            )
        fields[head] = _with_updates_impl(current, prefix + (head,), [(rest, value)], validate)
    try:
        return StructuredTensor.from_fields(
            fields,
            shape=st.shape,
            row_partitions=st.row_partitions,
            nrows=st.nrows(),
            validate=validate,
        )
    except ValueError as err:
        msg = "`StructuredTensor.with_updates` failed"
        if prefix:
            msg = f"{msg} for field {prefix}"
        raise ValueError(msg) from err


def promote(st: StructuredTensor, source_path: Any, new_name: Any) -> StructuredTensor:
    if not isinstance(new_name, str):
        raise ValueError("new_name is not a string")
    if not isinstance(source_path, list | tuple):
        raise ValueError("source_path must be a list or tuple")
    if len(source_path) < 2:
        raise ValueError("source_path must have length at least two")
    source_path = tuple(source_path)
    grandparent = source_path[:-2]
    current = st.field_value(source_path)
    new_parent_rank = st.field_value(grandparent).rank
    parent_rank = st.field_value(source_path[:-1]).rank
    if new_parent_rank != parent_rank:
        inner = min(parent_rank, current.shape.rank - 1)
        if inner > new_parent_rank:
            current = _merge_any(current, new_parent_rank, inner)
    return st.with_updates({grandparent + (new_name,): current})


# --- partition_outer_dimension and merge_dims ---------------------------------------------------


def _partition_value(value: Any, rp: RowPartition) -> Any:
    dtype = rp.dtype
    if isinstance(value, StructuredTensor):
        fields = {k: _partition_value(v, rp) for k, v in value._fields.items()}
        shape = TensorShape([rp.static_nrows, rp._uniform]).concatenate(value.shape[1:])
        parts = (rp, *(p.with_dtype(dtype) for p in value.row_partitions))
        if value.rank == 1:
            parts = (rp,)
        return StructuredTensor(fields, shape, rp.static_nrows, parts, dtype)
    if isinstance(value, TensorLike) and rp._uniform is not None:
        return reshape(value, [rp.static_nrows, rp._uniform, *list(value.shape)[1:]])
    if isinstance(value, RaggedTensor) and value.row_splits_dtype != dtype:
        value = value.with_row_splits_dtype(dtype)
    return RaggedTensor.from_row_splits(value, rp.row_splits(), validate=True)


def partition_outer_dimension(st: StructuredTensor, rp: RowPartition) -> StructuredTensor:
    nvals = int(_host(rp.row_splits())[-1])
    if nvals != st._nrows:
        raise errors.InvalidArgumentError(
            None,
            "StructuredTensor.partition_outer_dimension",
            f"partition_outer_dimension: the row partition holds {nvals} values but the "
            f"StructuredTensor has {st._nrows} rows; give a partition of {st._nrows} values.",
        )
    return _partition_value(st.with_shape_dtype(rp.dtype), rp)


def _positive_axis(axis: Any, rank: int, name: str) -> int:
    if not isinstance(axis, int):
        raise TypeError(f"{name} must be an int; got {type(axis).__name__}")
    if not -rank <= axis < rank:
        raise ValueError(f"{name}={axis} out of bounds: expected {-rank}<={name}<{rank}")
    return axis + rank if axis < 0 else axis


def merge_dims(st: StructuredTensor, outer_axis: Any, inner_axis: Any) -> StructuredTensor:
    rank = st.rank
    outer = _positive_axis(outer_axis, rank, "outer_axis")
    inner = _positive_axis(inner_axis, rank, "inner_axis")
    if not outer <= inner:
        raise ValueError(
            f"Expected outer_axis ({outer}) to be less than or equal to inner_axis ({inner})"
        )
    if outer == inner:
        return st
    return _merge_st(st, outer, inner)


def _merge_any(value: Any, outer: int, inner: int) -> Any:
    if outer == inner:
        return value
    if isinstance(value, StructuredTensor):
        return value.merge_dims(outer, inner)
    if isinstance(value, RaggedTensor):
        return value.merge_dims(outer, inner)
    dims = list(value.shape)
    merged = int(np.prod([int(d) for d in dims[outer : inner + 1]]))
    return reshape(value, [*dims[:outer], merged, *dims[inner + 1 :]])


def _merge_st(st: StructuredTensor, outer: int, inner: int) -> StructuredTensor:
    fields = {k: _merge_any(v, outer, inner) for k, v in st._fields.items()}
    parts = list(st._partitions)
    dims = list(st.shape)
    # partition i splits dimension i into dimension i + 1: drop those inside the merged range
    merged = parts[outer:inner]
    if outer == 0:
        nrows = int(_host(merged[-1].row_splits())[-1])
        new_parts = parts[inner:]
    else:
        nrows = st._nrows
        splits = _host(parts[outer - 1].row_splits())
        uniform = parts[outer - 1]._uniform
        for p in merged:
            splits = _host(p.row_splits())[splits]
            uniform = None if uniform is None or p._uniform is None else uniform * p._uniform
        composed = RowPartition(convert_to_tensor(splits.astype(st._dtype.np)), uniform)
        new_parts = [*parts[: outer - 1], composed, *parts[inner:]]
    size = None
    if all(d is not None for d in dims[outer : inner + 1]):
        size = int(np.prod(dims[outer : inner + 1]))
    shape = TensorShape([*dims[:outer], size, *dims[inner + 1 :]])
    if outer == 0:
        shape = TensorShape([nrows, *list(shape)[1:]])
    return StructuredTensor(fields, shape, nrows, tuple(new_parts), st._dtype)
