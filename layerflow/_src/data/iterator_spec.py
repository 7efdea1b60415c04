"""`tf.data.IteratorSpec`: the type of a `tf.data.Iterator`, described by its element spec.

>>> import layerflow as tf
>>> it = iter(tf.data.Dataset.range(3))
>>> tf.type_spec_from_value(it)
IteratorSpec(TensorSpec(shape=(), dtype=tf.int64, name=None),)
>>> tf.data.IteratorSpec(tf.TensorSpec([], tf.int64)).is_compatible_with(it)
True
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.type_spec import TypeSpec
from layerflow._src.utils import nest

# The iterator class (`dataset.Iterator_`), registered by the module that defines it, so that
# this module needs no import of `dataset` (which imports this one).
_iterator_type: list[type] = [object]


def register_iterator_type(cls: type) -> None:
    """Declare the class whose instances IteratorSpecs describe."""
    _iterator_type[0] = cls


def _same_structure(a: Any, b: Any) -> bool:
    try:
        nest.assert_same_structure(a, b)
    except (TypeError, ValueError):
        return False
    return True


class IteratorSpec(TypeSpec):
    """The TypeSpec of an iterator over elements of `element_spec` (`tf.data.IteratorSpec`).

    Specs relate component by component: `IteratorSpec(TensorSpec([3]))` is a subtype of
    `IteratorSpec(TensorSpec([None]))`, and two iterator specs have a common supertype when
    their element structures match and every pair of components has one.
    """

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec: Any) -> None:
        for leaf in nest.flatten(element_spec):
            if not isinstance(leaf, TypeSpec):
                raise TypeError(
                    f"IteratorSpec: element_spec must be a structure of TypeSpecs (e.g. "
                    f"tf.TensorSpec), got a leaf {leaf!r} of type {type(leaf).__name__}. Use a "
                    "dataset's `element_spec`."
                )
        self._element_spec = element_spec

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    @property
    def value_type(self) -> type:
        return _iterator_type[0]

    def _serialize(self) -> tuple[Any, ...]:
        return (self._element_spec,)

    @staticmethod
    def from_value(value: Any) -> IteratorSpec:
        """The spec of an iterator (`iter(dataset)`)."""
        spec = getattr(value, "element_spec", None)
        if spec is None or not hasattr(value, "get_next"):
            raise TypeError(
                f"IteratorSpec.from_value expects a tf.data iterator (iter(dataset)), got "
                f"{type(value).__name__}."
            )
        return IteratorSpec(spec)

    # --- relations over the element structure -------------------------------------------------
    def is_subtype_of(self, other: Any) -> bool:
        if type(other) is not IteratorSpec:
            return False
        if not _same_structure(self._element_spec, other._element_spec):
            return False
        return all(
            a.is_subtype_of(b)
            for a, b in zip(nest.flatten(self._element_spec), nest.flatten(other._element_spec))
        )

    def most_specific_common_supertype(self, others: Any) -> IteratorSpec | None:
        merged = nest.flatten(self._element_spec)
        for other in others:
            if type(other) is not IteratorSpec:
                return None
            if not _same_structure(self._element_spec, other._element_spec):
                return None
            for i, b in enumerate(nest.flatten(other._element_spec)):
                found = merged[i].most_specific_common_supertype([b])
                if found is None:
                    return None
                merged[i] = found
        return IteratorSpec(nest.pack_sequence_as(self._element_spec, merged))

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if not isinstance(other, TypeSpec):
            try:
                other = IteratorSpec.from_value(other)
            except TypeError:
                return False
        return self.most_specific_common_supertype([other]) is not None

    def __hash__(self) -> int:
        return hash(("IteratorSpec", repr(self._element_spec)))

    def __repr__(self) -> str:
        return f"IteratorSpec({self._element_spec!r},)"


__all__ = ["IteratorSpec"]
