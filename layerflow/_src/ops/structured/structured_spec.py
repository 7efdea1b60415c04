"""`tf.experimental.StructuredTensor.Spec` (TF's `StructuredTensorSpec(shape, field_specs)`):
the type of a StructuredTensor: its static shape, the spec of each field, and the static row
partitions (nrows, nvals, uniform row length, dtype), printed as TF prints them.

>>> import layerflow as tf
>>> StructuredTensorSpec([2], {"a": tf.TensorSpec([2], tf.int32)}).rank
1
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TypeSpec, type_spec_from_value
from layerflow._src.ops.ragged.ragged_tensor import _host
from layerflow._src.ops.structured.structured_tensor import StructuredTensor


class StructuredTensorSpec(TypeSpec):
    """The type of a StructuredTensor; see the module docstring."""

    __slots__ = ("_shape", "_fields", "_partitions", "_dtype")

    def __init__(self, shape: Any, field_specs: Any, *, _partitions: Any = None,
                 _dtype: Any = "int64") -> None:  # fmt: skip
        if not isinstance(field_specs, dict):
            raise TypeError("field_specs must be a dictionary.")
        for k in field_specs:
            if not isinstance(k, str):
                raise TypeError("field_specs must be a dictionary with string keys.")
        for v in field_specs.values():
            if not isinstance(v, TypeSpec):
                raise TypeError("field_specs must be a dictionary with TypeSpec values.")
        shape = TensorShape(shape)
        rank = shape.rank
        if rank is None:
            raise TypeError("StructuredTensor's shape must have known rank.")
        dims = list(shape)
        for k, v in field_specs.items():
            field_shape = v.shape
            if field_shape.rank is not None and field_shape.rank < rank:
                raise ValueError(
                    f"Rank of field {k} is {field_shape.rank}, but must be at least {rank}."
                )
            for i in range(rank):
                a, b = dims[i], None if field_shape.rank is None else field_shape[i]
                if a is not None and b is not None and a != b:
                    raise ValueError(
                        f"StructuredTensorSpec: field {k} has shape {field_shape}, which does "
                        f"not start with the shape {shape}."
                    )
                dims[i] = a if a is not None else b
        self._shape = TensorShape(dims)
        self._fields = dict(field_specs)
        self._dtype = dtypes.as_dtype(_dtype)
        if _partitions is None:
            _partitions, count = [], dims[0] if dims else None
            for d in dims[1:]:
                nvals = None if count is None or d is None else count * d
                _partitions.append((count, nvals, d))
                count = nvals
        self._partitions = tuple(_partitions)

    @classmethod
    def from_value(cls, value: Any) -> StructuredTensorSpec:
        if not isinstance(value, StructuredTensor):
            raise TypeError(f"StructuredTensor.Spec.from_value: expected a StructuredTensor, got "
                            f"{type(value).__name__}.")  # fmt: skip
        fields = {k: type_spec_from_value(v) for k, v in value._fields.items()}
        parts = [
            (p.static_nrows, int(_host(p.row_splits())[-1]), p._uniform)
            for p in value.row_partitions
        ]
        return cls(value.shape, fields, _partitions=parts, _dtype=value._dtype)

    @property
    def value_type(self) -> type:
        return StructuredTensor

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def rank(self) -> int:
        return self._shape.rank

    @property
    def _field_specs(self) -> dict:
        return self._fields

    def _serialize(self) -> tuple[Any, ...]:
        return (self._shape, tuple(self._fields.items()), self._partitions, self._dtype)

    def _from_fields(self, fields: tuple[Any, ...]) -> StructuredTensorSpec:
        shape, items, parts, dt = fields
        return StructuredTensorSpec(shape, dict(items), _partitions=parts, _dtype=dt)

    def is_subtype_of(self, other: Any) -> bool:
        return self.most_specific_common_supertype([other]) == other

    def most_specific_common_supertype(self, others: Any) -> StructuredTensorSpec | None:
        result = self
        for other in others:
            if type(other) is not type(self) or set(other._fields) != set(result._fields):
                return None
            if other._shape.rank != result._shape.rank or other._dtype != result._dtype:
                return None
            shape = result._shape.most_specific_common_supertype([other._shape])
            fields = {}
            for k, spec in result._fields.items():
                merged = spec.most_specific_common_supertype([other._fields[k]])
                if merged is None:
                    return None
                fields[k] = merged
            parts = [
                tuple(x if x == y else None for x, y in zip(a, b, strict=True))
                for a, b in zip(result._partitions, other._partitions, strict=True)
            ]
            result = StructuredTensorSpec(shape, fields, _partitions=parts, _dtype=result._dtype)
        return result

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if isinstance(other, StructuredTensor):
            other = StructuredTensorSpec.from_value(other)
        if not isinstance(other, StructuredTensorSpec) or set(other._fields) != set(self._fields):
            return False
        return (
            other._dtype == self._dtype
            and self._shape.is_compatible_with(other._shape)
            and all(spec.is_compatible_with(other._fields[k]) for k, spec in self._fields.items())
        )

    def __repr__(self) -> str:
        dt = f"tf.{self._dtype.name}"
        parts = ", ".join(
            f"RowPartitionSpec(nrows={n}, nvals={v}, uniform_row_length={u}, dtype={dt})"
            for n, v, u in self._partitions
        )
        if len(self._partitions) == 1:
            parts += ","
        rank = self._shape.rank
        if rank == 0:
            inner = "TensorShape([])"
        elif rank == 1:
            inner = repr(TensorShape(self._shape[:1]))
        else:
            inner = repr(TensorShape([self._partitions[-1][1]]))
        fields = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self._fields.items()) + "}"
        return (
            f"StructuredTensor.Spec(_fields={fields}, _ragged_shape=DynamicRaggedShape.Spec("
            f"row_partitions=({parts}), static_inner_shape={inner}, dtype={dt}))"
        )


StructuredTensor.Spec = StructuredTensorSpec
