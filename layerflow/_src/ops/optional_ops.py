"""`tf.experimental.Optional` (a value that may be absent, as `Iterator.get_next_as_optional`
returns), `tf.OptionalSpec`, and DLPack exchange (`tf.experimental.dlpack`)."""

from __future__ import annotations

from typing import Any

from layerflow._src.backend import device_info
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.type_spec import TypeSpec, type_spec_from_value
from layerflow._src.utils import nest


class Optional:
    """Either a value (a structure of tensors) or nothing, with the value's spec.

    >>> import layerflow as tf
    >>> tf.experimental.Optional.from_value(tf.constant(1.0)).get_value().numpy()
    np.float32(1.0)
    >>> bool(tf.experimental.Optional.empty(tf.TensorSpec([], tf.float32)).has_value())
    False
    """

    __slots__ = ("_value", "_element_spec")

    def __init__(self, value: Any, element_spec: Any) -> None:
        self._value = value
        self._element_spec = element_spec

    @staticmethod
    def from_value(value: Any) -> Optional:
        value = nest.map_structure(
            lambda v: v if isinstance(v, TensorLike) else convert_to_tensor(v), value
        )
        return Optional(value, nest.map_structure(type_spec_from_value, value))

    @staticmethod
    def empty(element_spec: Any) -> Optional:
        return Optional(None, element_spec)

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    @property
    def _type_spec(self) -> OptionalSpec:
        return OptionalSpec(self._element_spec)

    def has_value(self, name: str | None = None) -> Tensor:
        return convert_to_tensor(self._value is not None)

    def get_value(self, name: str | None = None) -> Any:
        if self._value is None:
            raise errors.InvalidArgumentError(
                None, "OptionalGetValue", "The given optional does not have a value."
            )
        return self._value

    def __repr__(self) -> str:
        state = "empty" if self._value is None else "with a value"
        return f"<tf.experimental.Optional {state}, element_spec={self._element_spec!r}>"


class OptionalSpec(TypeSpec):
    """The type of an Optional: the spec of the value it may hold.

    >>> import layerflow as tf
    >>> tf.OptionalSpec(tf.TensorSpec([], tf.float32))
    OptionalSpec(TensorSpec(shape=(), dtype=tf.float32, name=None),)
    """

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec: Any) -> None:
        self._element_spec = element_spec

    @property
    def value_type(self) -> type:
        return Optional

    def _serialize(self) -> tuple[Any, ...]:
        return (self._element_spec,)

    def __hash__(self) -> int:
        return hash(("OptionalSpec", repr(self._element_spec)))

    def __repr__(self) -> str:
        return f"OptionalSpec({self._element_spec!r},)"


def to_dlpack(tf_tensor: Any) -> Any:
    """A DLPack capsule sharing the tensor's memory (CPU or GPU), for another framework.

    >>> import layerflow as tf
    >>> x = tf.experimental.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(tf.range(3)))
    >>> x.numpy().tolist()
    [0, 1, 2]
    """
    if not isinstance(tf_tensor, TensorLike):
        tf_tensor = convert_to_tensor(tf_tensor)
    if tf_tensor.dtype.name == "string":
        raise errors.InvalidArgumentError(
            None, "to_dlpack", "to_dlpack: string tensors cannot be exported through DLPack."
        )
    data = tf_tensor._data if type(tf_tensor) is Tensor else tf_tensor._data.copy()
    return device_info.to_dlpack(data)


def from_dlpack(dlcapsule: Any) -> Tensor:
    """A tensor viewing the memory of a DLPack capsule, or of any object with `__dlpack__`
    (a NumPy or CuPy array, a torch or JAX tensor), on that object's device."""
    array, device = device_info.from_dlpack(dlcapsule)
    return Tensor(array, device)
