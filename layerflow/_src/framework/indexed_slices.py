"""`tf.IndexedSlices`: rows `values` of a dense tensor at `indices` (a sparse update or gradient),
and its spec `tf.IndexedSlicesSpec`.

The dense value is `unsorted_segment_sum(values, indices, dense_shape[0])` (duplicate indices
add up, as in TF). `tf.convert_to_tensor(slices)` builds it with a differentiable op that the
ops layer installs (`IndexedSlices._densify`), so gradients reach `values`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TypeSpec


class IndexedSlices:
    """A sparse representation of a tensor's rows: `dense[indices[i]] += values[i]`.

    >>> import layerflow as tf
    >>> s = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([2]), tf.constant([3, 2]))
    >>> s.shape, tf.convert_to_tensor(s).numpy().tolist()
    (TensorShape([3, 2]), [[0.0, 0.0], [0.0, 0.0], [1.0, 2.0]])
    """

    __slots__ = ("_values", "_indices", "_dense_shape")

    # Installed by the ops layer (`ops/indexed_slices_ops.py`): the differentiable densify.
    _densify: Any = None

    def __init__(self, values: Any, indices: Any, dense_shape: Any = None) -> None:
        self._values = _as_tensor(values)
        self._indices = _as_tensor(indices)
        if self._indices.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(
                f"IndexedSlices: indices must be int32 or int64, got {self._indices.dtype.name}."
            )
        self._dense_shape = None if dense_shape is None else _as_tensor(dense_shape)
        if self._dense_shape is not None and self._dense_shape.dtype not in (
            dtypes.int32,
            dtypes.int64,
        ):
            raise TypeError(
                "IndexedSlices: dense_shape must be int32 or int64, got "
                f"{self._dense_shape.dtype.name}."
            )

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Tensor | None:
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def name(self) -> str:
        return self._values.name  # raises AttributeError eagerly, as TF

    @property
    def shape(self) -> TensorShape:
        """The dense shape when it is known, else TensorShape(None) (TF's static shape)."""
        if self._dense_shape is None:
            return TensorShape(None)
        return TensorShape(backend.to_host(self._dense_shape._data).tolist())

    @property
    def _type_spec(self) -> IndexedSlicesSpec:
        values_shape = self._values.shape
        if self._dense_shape is None:
            shape = TensorShape([None, *values_shape[1:]])
            dense_dtype = None
        else:
            shape = self.shape
            dense_dtype = self._dense_shape.dtype
        return IndexedSlicesSpec(
            shape, self.dtype, self._indices.dtype, dense_dtype, self._indices.shape
        )

    def __neg__(self) -> IndexedSlices:
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def _dense_tensor(self) -> Tensor:
        """The dense value (`tf.convert_to_tensor(slices)`); ValueError without dense_shape."""
        if self._dense_shape is None:
            raise ValueError(
                "Tensor conversion requested for IndexedSlices for argument `value` without "
                f"dense_shape: {self}"
            )
        return type(self)._densify(self._values, self._indices, self._dense_shape)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = backend.to_host(self._dense_tensor()._data)
        return out if dtype is None else out.astype(dtype)

    def __str__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    def __repr__(self) -> str:
        return self.__str__()

    def __reduce__(self) -> Any:
        return IndexedSlices, (self._values, self._indices, self._dense_shape)


def _as_tensor(value: Any) -> Tensor:
    return value if type(value) is Tensor else convert_to_tensor(value)


class IndexedSlicesSpec(TypeSpec):
    """The type of an IndexedSlices: dense `shape`, `dtype`, `indices_dtype`,
    `dense_shape_dtype` (None when it has no dense_shape) and `indices_shape`.

    >>> IndexedSlicesSpec([3, 2])
    IndexedSlicesSpec(TensorShape([3, 2]), tf.float32, tf.int64, None, TensorShape([None]))
    """

    __slots__ = ("_shape", "_values_dtype", "_indices_dtype", "_dense_shape_dtype",
                 "_indices_shape")  # fmt: skip

    def __init__(self, shape: Any = None, dtype: Any = "float32", indices_dtype: Any = "int64",
                 dense_shape_dtype: Any = None, indices_shape: Any = None) -> None:  # fmt: skip
        self._shape = TensorShape(shape)
        self._values_dtype = dtypes.as_dtype(dtype)
        self._indices_dtype = dtypes.as_dtype(indices_dtype)
        self._dense_shape_dtype = (
            None if dense_shape_dtype is None else dtypes.as_dtype(dense_shape_dtype)
        )
        self._indices_shape = TensorShape(indices_shape).with_rank(1)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values_dtype

    @property
    def value_type(self) -> type:
        return IndexedSlices

    def _serialize(self) -> tuple[Any, ...]:
        return (self._shape, self._values_dtype, self._indices_dtype, self._dense_shape_dtype,
                self._indices_shape)  # fmt: skip

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if isinstance(other, IndexedSlices):
            other = other._type_spec
        if not isinstance(other, IndexedSlicesSpec):
            return False
        return (
            other.dtype == self.dtype
            and other._indices_dtype == self._indices_dtype
            and self._shape.is_compatible_with(other._shape)
        )

    def flatten(self) -> list[Any]:
        return [self]

    def to_tensors(self, value: Any) -> list[Any]:
        out = [value.values, value.indices]
        return out if value.dense_shape is None else [*out, value.dense_shape]

    def from_tensors(self, tensors: Any) -> IndexedSlices:
        values, indices = next(tensors), next(tensors)
        dense_shape = next(tensors) if self._dense_shape_dtype is not None else None
        return IndexedSlices(values, indices, dense_shape)

    def __repr__(self) -> str:
        dense = None if self._dense_shape_dtype is None else repr(self._dense_shape_dtype)
        return (
            f"IndexedSlicesSpec({self._shape!r}, {self._values_dtype!r}, "
            f"{self._indices_dtype!r}, {dense}, {self._indices_shape!r})"
        )
