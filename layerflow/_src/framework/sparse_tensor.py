"""`tf.SparseTensor` (COO: int64 `indices` [N, rank], `values` [N], int64 `dense_shape` [rank])
and its spec `tf.SparseTensorSpec`.

The three components are ordinary Tensors; `values` is kept as given (not copied), so a tape
that watches it sees the gradients of the `tf.sparse` ops, which move values with
differentiable ops (gather, segment sums) and compute the index bookkeeping on the host.
Canonical order is row-major (lexicographic on the indices, no repeats); the constructor does
not check it, the ops that need it do (as TF), and `tf.sparse.reorder` establishes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TypeSpec


def _int64(value: Any, what: str) -> Tensor:
    if isinstance(value, TensorLike):
        if value.dtype != dtypes.int64:  # TF does not cast tensors here either
            raise ValueError(
                f"SparseTensor: {what} must be an int64 tensor, got dtype {value.dtype.name}. "
                f"Use tf.cast({what}, tf.int64)."
            )
        return convert_to_tensor(value)
    try:
        return convert_to_tensor(value, dtype=dtypes.int64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"SparseTensor: cannot convert {what} {value!r} to an int64 tensor ({err})."
        ) from None


class SparseTensor:
    """A sparse tensor: `dense[indices[i]] = values[i]`, zero elsewhere.

    >>> import layerflow as tf
    >>> st = tf.SparseTensor(indices=[[0, 1], [1, 2]], values=[1.0, 2.0], dense_shape=[2, 3])
    >>> st.shape, tf.sparse.to_dense(st).numpy().tolist()
    (TensorShape([2, 3]), [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    """

    # `tf.convert_to_tensor(sparse)` raises (as in TF) and names this conversion instead.
    _dense_conversion_fix = "tf.sparse.to_dense(x)"

    # `_memo`: host-side structure that ops derive from the (immutable) indices, e.g. the CSR
    # row pointers of sparse_dense_matmul; it lives and dies with this object.
    __slots__ = ("_indices", "_values", "_dense_shape", "_memo", "__weakref__")

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        indices = _int64(indices, "indices")
        values = values if isinstance(values, TensorLike) else convert_to_tensor(values)
        dense_shape = _int64(dense_shape, "dense_shape")
        if indices.shape.rank != 2:
            raise ValueError(
                f"SparseTensor: indices must have rank 2 ([N, rank]), got shape {indices.shape}."
            )
        if values.shape.rank != 1:
            raise ValueError(
                f"SparseTensor: values must have rank 1 ([N]), got shape {values.shape}."
            )
        if dense_shape.shape.rank != 1:
            raise ValueError(
                f"SparseTensor: dense_shape must have rank 1, got shape {dense_shape.shape}."
            )
        n, rank = indices.shape.as_list()
        if values.shape[0] != n:
            raise ValueError(
                f"SparseTensor: indices has {n} rows but values has {values.shape[0]} elements; "
                "give one value per index (Dimensions are not compatible)."
            )
        if dense_shape.shape[0] != rank:
            raise ValueError(
                f"SparseTensor: indices have {rank} columns but dense_shape has rank "
                f"{dense_shape.shape[0]}; each index needs one coordinate per dimension."
            )
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape
        self._memo: dict[str, Any] | None = None

    @classmethod
    def from_value(cls, value: Any) -> SparseTensor:
        if isinstance(value, SparseTensor):
            return value
        raise TypeError(f"SparseTensor.from_value: expected a SparseTensor, got {value!r}.")

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def shape(self) -> TensorShape:
        return TensorShape(backend.to_host(self._dense_shape._data).tolist())

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _type_spec(self) -> SparseTensorSpec:
        return SparseTensorSpec(self.shape, self.dtype)

    def with_values(self, new_values: Any) -> SparseTensor:
        """The same indices and shape with `new_values` (which must have as many elements)."""
        new_values = (
            new_values if isinstance(new_values, TensorLike) else convert_to_tensor(new_values)
        )
        if new_values.shape.rank != 1 or new_values.shape[0] != self._values.shape[0]:
            raise ValueError(
                f"SparseTensor.with_values: new_values must have shape {self._values.shape}, "
                f"got {new_values.shape}."
            )
        out = SparseTensor(self._indices, new_values, self._dense_shape)
        out._memo = self._memo  # same indices, same structure
        return out

    def consumers(self) -> list[Any]:
        return []

    def eval(self, feed_dict: Any = None, session: Any = None) -> Any:
        raise NotImplementedError(
            "SparseTensor.eval is TF1 graph mode; layerflow is eager. Read .indices, .values "
            "and .dense_shape (or tf.sparse.to_dense(st).numpy())."
        )

    def host_indices(self) -> np.ndarray:
        """The indices as a NumPy int64 array (for host-side index bookkeeping)."""
        return backend.to_host(self._indices._data)

    def host_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in backend.to_host(self._dense_shape._data))

    def __str__(self) -> str:
        return (
            f"SparseTensor(indices={self._indices}, values={self._values}, "
            f"dense_shape={self._dense_shape})"
        )

    __repr__ = __str__

    def __bool__(self) -> bool:
        raise TypeError(
            "The truth value of a SparseTensor is ambiguous; use tf.sparse.to_dense(st) and "
            "reduce it (tf.reduce_any) first."
        )

    def __reduce__(self) -> Any:
        return SparseTensor, (self._indices, self._values, self._dense_shape)

    # `st * dense`, `st / dense` (TF's sparse-dense cwise ops) and `-st` are installed by
    # `ops/sparse_ops.py` (the ops layer), as `IndexedSlices._densify` is.


class SparseTensorSpec(TypeSpec):
    """The type of a SparseTensor: its dense `shape` and `dtype`.

    >>> SparseTensorSpec([2, None])
    SparseTensorSpec(TensorShape([2, None]), tf.float32)
    """

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape: Any = None, dtype: Any = "float32") -> None:
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def value_type(self) -> type:
        return SparseTensor

    def _serialize(self) -> tuple[Any, ...]:
        return (self._shape, self._dtype)

    @classmethod
    def from_value(cls, value: SparseTensor) -> SparseTensorSpec:
        return value._type_spec

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if isinstance(other, SparseTensor):
            other = other._type_spec
        if not isinstance(other, SparseTensorSpec):
            return False
        return other._dtype == self._dtype and self._shape.is_compatible_with(other._shape)

    def flatten(self) -> list[Any]:
        return [self]

    def to_tensors(self, value: Any) -> list[Any]:
        return [value.indices, value.values, value.dense_shape]

    def from_tensors(self, tensors: Any) -> SparseTensor:
        return SparseTensor(next(tensors), next(tensors), next(tensors))

    def __repr__(self) -> str:
        return f"SparseTensorSpec({self._shape!r}, {self._dtype!r})"


def is_sparse(value: Any) -> bool:
    return isinstance(value, SparseTensor)
