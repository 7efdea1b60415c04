"""`tf.TypeSpec` and its simplest kinds: `tf.TensorSpec`, `tf.NoneTensorSpec`, and
`tf.type_spec_from_value`.

A TypeSpec describes a value without holding it: the `tf.function` signature type of a tensor
(shape and dtype), of `None`, of an `IndexedSlices` or a `TensorArray` (their specs live with
their values). The relations (`is_subtype_of`, `most_specific_common_supertype`) and the
component protocol (`flatten`, `to_tensors`, `from_tensors`) follow TF's TraceType.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor, host_array
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape


class TypeSpec:
    """The base class of value specs. A subclass says what it describes (`value_type`) and
    serializes its fields (`_serialize`), from which equality, hashing and the relations follow.

    >>> TensorSpec([2]).is_subtype_of(TensorSpec([None]))
    True
    """

    __slots__ = ()

    @property
    def value_type(self) -> type:
        raise NotImplementedError(f"{type(self).__name__} must define value_type.")

    def _serialize(self) -> tuple[Any, ...]:
        raise NotImplementedError(f"{type(self).__name__} must define _serialize().")

    def _from_fields(self, fields: tuple[Any, ...]) -> TypeSpec:
        return type(self)(*fields)

    # --- relations, field by field (shapes and dtypes by their own relations) ----------------
    def is_subtype_of(self, other: Any) -> bool:
        if type(other) is not type(self):
            return False
        return all(_field_subtype(a, b) for a, b in zip(self._serialize(), other._serialize()))

    def most_specific_common_supertype(self, others: Any) -> TypeSpec | None:
        fields = list(self._serialize())
        for other in others:
            if type(other) is not type(self):
                return None
            for i, b in enumerate(other._serialize()):
                merged = _field_supertype(fields[i], b)
                if merged is _NONE:
                    return None
                fields[i] = merged
        return self._from_fields(tuple(fields))

    def most_specific_compatible_type(self, other: Any) -> TypeSpec:
        """Deprecated in TF for `most_specific_common_supertype`; raises when there is none."""
        found = self.most_specific_common_supertype([other])
        if found is None:
            raise ValueError(f"No TypeSpec is compatible with both {self!r} and {other!r}")
        return found

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value if isinstance(spec_or_value, TypeSpec) else None
        if other is None:
            try:
                other = type_spec_from_value(spec_or_value)
            except TypeError:
                return False
        return self.most_specific_common_supertype([other]) is not None

    # --- components (a spec without tensors has none) -----------------------------------------
    def flatten(self) -> list[Any]:
        return [self]

    def to_tensors(self, value: Any) -> list[Any]:
        return [value]

    def from_tensors(self, tensors: Any) -> Any:
        return next(tensors)

    def placeholder_value(self, placeholder_context: Any = None) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}.placeholder_value: layerflow traces tf.function with real "
            "values, never placeholders."
        )

    def cast(self, value: Any, casting_context: Any = None) -> Any:
        return value

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._serialize() == other._serialize()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, _hashable(self._serialize())))

    def __reduce__(self) -> Any:
        return type(self), self._serialize()


_NONE = object()  # "no common supertype" for one field


def _hashable(fields: Any) -> Any:
    return tuple(tuple(f) if isinstance(f, TensorShape) else f for f in fields)


def _field_subtype(a: Any, b: Any) -> bool:
    if isinstance(a, TensorShape | dtypes.DType | TypeSpec):
        return a.is_subtype_of(b)
    return a == b


def _field_supertype(a: Any, b: Any) -> Any:
    if isinstance(a, TensorShape | dtypes.DType | TypeSpec):
        found = a.most_specific_common_supertype([b])
        return _NONE if found is None else found
    return a if a == b else _NONE


class TensorSpec(TypeSpec):
    """The shape, dtype and optional name of a tensor (`tf.TensorSpec`).

    >>> TensorSpec([None, 28], "float32")
    TensorSpec(shape=(None, 28), dtype=tf.float32, name=None)
    >>> TensorSpec([2, 3]).most_specific_common_supertype([TensorSpec([4, 3])])
    TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)
    """

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape: Any, dtype: Any = "float32", name: str | None = None) -> None:
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_spec(cls, spec: Any, name: str | None = None) -> TensorSpec:
        """A TensorSpec with the shape and dtype of `spec` (and its name unless `name`)."""
        name = name if name is not None else getattr(spec, "name", None)
        return cls(spec.shape, spec.dtype, name)

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> TensorSpec:
        if not isinstance(tensor, TensorLike):
            raise ValueError(f"`tensor` should be a tf.Tensor, but got type {type(tensor)}.")
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def value_type(self) -> type:
        return Tensor

    def _serialize(self) -> tuple[Any, ...]:
        return (self.shape, self.dtype, self.name)

    def is_compatible_with(self, spec_or_tensor: Any) -> bool:
        """Same dtype and a compatible shape; a value must be a Tensor (or spec), as in TF."""
        value = spec_or_tensor
        if not isinstance(value, TensorSpec | TensorLike):
            return False
        return value.dtype == self.dtype and self.shape.is_compatible_with(value.shape)

    def to_tensors(self, value: Any) -> list[Any]:
        return [value]

    def cast(self, value: Any, casting_context: Any = None) -> Any:
        """`value` as a Tensor of this spec; ValueError when its dtype or shape do not fit."""
        tensor = convert_to_tensor(value) if not isinstance(value, TensorLike) else value
        if tensor.dtype != self.dtype or not self.shape.is_compatible_with(tensor.shape):
            raise ValueError(
                f"Can not cast a value of shape {tensor.shape} and dtype {tensor.dtype.name} to "
                f"{self!r}."
            )
        return tensor

    def __hash__(self) -> int:
        return hash((tuple(self.shape), self.dtype.name, self.name))

    def __repr__(self) -> str:
        shape = "<unknown>" if self.shape.rank is None else str(self.shape)
        return f"TensorSpec(shape={shape}, dtype=tf.{self.dtype.name}, name={self.name!r})"


class NoneTensorSpec(TypeSpec):
    """The spec of `None` as a component of a structure (`tf.NoneTensorSpec`).

    >>> type_spec_from_value(None)
    NoneTensorSpec()
    """

    __slots__ = ()

    @property
    def value_type(self) -> type:
        return type(None)

    def _serialize(self) -> tuple[Any, ...]:
        return ()

    def _from_fields(self, fields: tuple[Any, ...]) -> NoneTensorSpec:
        return NoneTensorSpec()

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        return spec_or_value is None or isinstance(spec_or_value, NoneTensorSpec)

    def flatten(self) -> list[Any]:
        return []

    def to_tensors(self, value: Any) -> list[Any]:
        return []

    def from_tensors(self, tensors: Any) -> None:
        return None

    def __repr__(self) -> str:
        return "NoneTensorSpec()"


def type_spec_from_value(value: Any) -> TypeSpec:
    """The TypeSpec of `value` (`tf.type_spec_from_value`): a value's own `_type_spec` when it
    has one (IndexedSlices, TensorArray, Optional), `NoneTensorSpec` for None, else the
    TensorSpec of `tf.convert_to_tensor(value)` (a Variable gives its value's TensorSpec).

    >>> type_spec_from_value([1, 2])
    TensorSpec(shape=(2,), dtype=tf.int32, name=None)
    """
    if value is None:
        return NoneTensorSpec()
    own = getattr(type(value), "_type_spec", None)
    if own is not None:
        return value._type_spec
    if isinstance(value, TensorLike):
        return TensorSpec(value.shape, value.dtype)
    try:
        arr = host_array(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"Could not build a TypeSpec for {value!r} of unsupported type {type(value)}."
        ) from None
    return TensorSpec(np.shape(arr), dtypes.from_numpy(arr.dtype))
