"""`StructuredTensor.from_pyval`: nested Python dicts and lists to a StructuredTensor, with an
optional `StructuredTensor.Spec` saying each field's type (TF's algorithm and messages)."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TensorSpec
from layerflow._src.ops.ragged.ragged_ops import constant as ragged_constant
from layerflow._src.ops.ragged.ragged_shape import RowPartition
from layerflow._src.ops.ragged.ragged_spec import RaggedTensorSpec
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.ops.structured.structured_spec import StructuredTensorSpec
from layerflow._src.ops.structured.structured_tensor import StructuredTensor


def _mismatch(path: tuple, a: Any, b: Any) -> ValueError:
    return ValueError(f"Value at {path!r} does not match typespec: {a!r} vs {b!r}")


def _parse_error(path: tuple) -> ValueError:
    return ValueError(f"Error parsing path {path!r}")


def from_pyval(pyval: Any, typespec: Any, path: tuple) -> Any:
    if isinstance(pyval, dict):
        return _from_pydict(pyval, typespec, path)
    if isinstance(pyval, list | tuple):
        keys: dict = {}
        rank = _find_struct_keys_and_depth(pyval, keys)
        if rank is not None:
            return _from_pylist_of_dict(pyval, list(keys), rank, typespec, path)
        return _from_pylist_of_value(pyval, typespec, path)
    return _from_pyscalar(pyval, typespec, path)


def _from_pydict(pyval: dict, typespec: Any, path: tuple) -> StructuredTensor:
    if typespec is None:
        fields = {k: from_pyval(v, None, path + (k,)) for k, v in pyval.items()}
    else:
        if not (
            isinstance(typespec, StructuredTensorSpec)
            and typespec.shape.rank == 0
            and set(pyval) == set(typespec._field_specs)
        ):
            raise _mismatch(path, pyval, typespec)
        specs = typespec._field_specs
        fields = {k: from_pyval(v, specs[k], path + (k,)) for k, v in pyval.items()}
    return StructuredTensor.from_fields(fields=fields, shape=(), validate=False)


def _from_pylist_of_dict(pyval: Any, keys: list, rank: int, typespec: Any,
                         path: tuple) -> StructuredTensor:  # fmt: skip
    fields: dict = {key: [] for key in keys}
    for child in pyval:
        _update_fields(child, fields, 1)
    if typespec is None:
        shape = TensorShape([None] * rank)
        for key, target in fields.items():
            fields[key] = from_pyval(target, None, path + (key,))
    else:
        if not isinstance(typespec, StructuredTensorSpec) or set(fields) - set(
            typespec._field_specs
        ):
            raise _mismatch(path, pyval, typespec)
        shape = typespec.shape
        if shape.rank < rank:
            raise ValueError(
                f"Value at {path!r} does not match typespec (rank mismatch): {pyval!r} vs "
                f"{typespec!r}"
            )
        for key, spec in typespec._field_specs.items():
            fields[key] = from_pyval(fields.get(key, []), spec, path + (key,))
    try:
        if not fields and typespec is None:
            return _from_pylist_of_empty_dict(pyval, rank)
        return StructuredTensor.from_fields(fields=fields, shape=shape, validate=False)
    except Exception as err:
        raise _parse_error(path) from err


def _from_pylist_of_empty_dict(pyval: Any, rank: int) -> StructuredTensor:
    if rank == 0:
        return StructuredTensor.from_fields(fields={}, shape=())
    if rank == 1:
        return StructuredTensor.from_fields(fields={}, shape=(len(pyval),), nrows=len(pyval))
    zeros = ragged_constant(_dicts_to_zeros(pyval))
    parts = []
    level: Any = zeros
    while isinstance(level, RaggedTensor):
        parts.append(RowPartition(level.row_splits, level._uniform))
        level = level.values
    shape = TensorShape([len(pyval)] + [None] * (rank - 1))
    return StructuredTensor.from_fields(
        fields={}, shape=shape, row_partitions=parts[: rank - 1], nrows=len(pyval)
    )


def _from_pylist_of_value(pyval: Any, typespec: Any, path: tuple) -> Any:
    if typespec is None:
        try:
            return ragged_constant(pyval)
        except Exception as err:
            raise _parse_error(path) from err
    if isinstance(typespec, TensorSpec):
        try:
            result = convert_to_tensor(pyval, dtype=typespec.dtype)
        except Exception as err:
            raise _parse_error(path) from err
        if not typespec.shape.is_compatible_with(result.shape):
            raise _mismatch(path, typespec, pyval)
        return result
    if isinstance(typespec, RaggedTensorSpec):
        try:
            return ragged_constant(
                pyval,
                dtype=typespec.dtype,
                ragged_rank=typespec.ragged_rank,
                row_splits_dtype=typespec.row_splits_dtype,
                inner_shape=tuple(typespec.shape[typespec.ragged_rank + 1 :]),
            )
        except Exception as err:
            raise _parse_error(path) from err
    if isinstance(typespec, StructuredTensorSpec):
        empty_rank = _empty_list_depth(pyval)
        if empty_rank is None:
            raise _mismatch(path, typespec, pyval)
        return _from_pylist_of_dict(pyval, [], empty_rank, typespec, path)
    raise _mismatch(path, typespec, pyval)


def _from_pyscalar(pyval: Any, typespec: Any, path: tuple) -> Any:
    if typespec is None:
        try:
            return convert_to_tensor(pyval)
        except Exception as err:
            raise _parse_error(path) from err
    if not (isinstance(typespec, TensorSpec) and typespec.shape.rank == 0):
        raise _mismatch(path, typespec, pyval)
    return convert_to_tensor(pyval, dtype=typespec.dtype)


def _find_struct_keys_and_depth(pyval: Any, keys: dict) -> int | None:
    """The nesting depth of the dicts in `pyval` (None if it has none); `keys` collects their
    keys in first-seen order (TF collects them in a set)."""
    if isinstance(pyval, dict):
        keys.update(dict.fromkeys(pyval))
        return 0
    if isinstance(pyval, list | tuple):
        depth = None
        for child in pyval:
            child_depth = _find_struct_keys_and_depth(child, keys)
            if child_depth is not None:
                if depth is None:
                    depth = child_depth + 1
                elif depth != child_depth + 1:
                    raise ValueError("Inconsistent depth of dictionaries")
        return depth
    return None


def _update_fields(pyval: Any, fields: dict, depth: int) -> None:
    if not isinstance(pyval, dict | list | tuple):
        raise ValueError("Expected dict or nested list/tuple of dict")
    for key, target in fields.items():
        for _ in range(1, depth):
            target = target[-1]
        target.append(pyval[key] if isinstance(pyval, dict) else [])
    if isinstance(pyval, list | tuple):
        for child in pyval:
            _update_fields(child, fields, depth + 1)


def _empty_list_depth(pyval: Any) -> int | None:
    if isinstance(pyval, list):
        if not pyval:
            return 1
        depths = [_empty_list_depth(v) for v in pyval]
        if any(d is None for d in depths):
            return None
        return max(depths) + 1
    return None


def _dicts_to_zeros(pyval: Any) -> Any:
    if isinstance(pyval, dict):
        return 0
    return [_dicts_to_zeros(x) for x in pyval]
