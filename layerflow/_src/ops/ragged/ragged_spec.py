"""`tf.RaggedTensorSpec`: the type of a RaggedTensor (shape with None for ragged dimensions,
dtype, ragged rank, row-splits dtype), as `tf.function` signatures and `tf.data` see it.

>>> import layerflow as tf
>>> tf.RaggedTensorSpec(shape=[None, None], dtype=tf.int32)
RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, tf.int64)
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TypeSpec
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor


class RaggedTensorSpec(TypeSpec):
    """The type of a RaggedTensor; see the module docstring."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype", "_flat_values_spec")

    def __init__(
        self,
        shape: Any = None,
        dtype: Any = "float32",
        ragged_rank: Any = None,
        row_splits_dtype: Any = "int64",
        flat_values_spec: Any = None,
    ) -> None:
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
        if self._row_splits_dtype not in (dtypes.int32, dtypes.int64):
            raise ValueError(
                f"RaggedTensorSpec: row_splits_dtype must be int32 or int64, got "
                f"{self._row_splits_dtype.name}."
            )
        rank = self._shape.rank
        if ragged_rank is None:
            if rank is None:
                raise ValueError(
                    "RaggedTensorSpec: pass ragged_rank when the shape's rank is unknown."
                )
            ragged_rank = rank - 1
        ragged_rank = int(ragged_rank)
        if ragged_rank < 0 or (rank is not None and ragged_rank >= max(rank, 1)):
            raise ValueError(
                f"RaggedTensorSpec: ragged_rank must be in [0, {rank}) for shape "
                f"{self._shape}, got {ragged_rank}."
            )
        self._ragged_rank = ragged_rank
        self._flat_values_spec = flat_values_spec

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def ragged_rank(self) -> int:
        return self._ragged_rank

    @property
    def row_splits_dtype(self) -> dtypes.DType:
        return self._row_splits_dtype

    @property
    def flat_values_spec(self) -> Any:
        return self._flat_values_spec

    @property
    def value_type(self) -> type:
        return RaggedTensor

    def _serialize(self) -> tuple[Any, ...]:
        return (self._shape, self._dtype, self._ragged_rank, self._row_splits_dtype)

    @classmethod
    def from_value(cls, value: Any) -> RaggedTensorSpec:
        if not isinstance(value, RaggedTensor):
            raise TypeError(f"RaggedTensorSpec.from_value: expected a RaggedTensor, got {value!r}.")
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits_dtype)

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if isinstance(other, RaggedTensor):
            other = RaggedTensorSpec.from_value(other)
        if not isinstance(other, RaggedTensorSpec):
            return False
        return (
            other._dtype == self._dtype
            and other._ragged_rank == self._ragged_rank
            and other._row_splits_dtype == self._row_splits_dtype
            and self._shape.is_compatible_with(other._shape)
        )

    def to_tensors(self, value: Any) -> list[Any]:
        return [value.flat_values, *value.nested_row_splits]

    def from_tensors(self, tensors: Any) -> RaggedTensor:
        flat = next(tensors)
        splits = [next(tensors) for _ in range(self._ragged_rank)]
        return RaggedTensor.from_nested_row_splits(flat, splits, validate=False)

    def __repr__(self) -> str:
        return (
            f"RaggedTensorSpec({self._shape!r}, {self._dtype!r}, {self._ragged_rank}, "
            f"{self._row_splits_dtype!r})"
        )
