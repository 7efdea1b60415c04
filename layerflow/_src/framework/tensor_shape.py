"""`tf.TensorShape`: a tuple of dimensions (int or None) that compares equal to tuples and lists."""

from __future__ import annotations

from typing import Any


class TensorShape(tuple):
    """The shape of a tensor. Known dimensions are ints, unknown ones None.

    >>> s = TensorShape([2, 3])
    >>> s == (2, 3), s == [2, 3], s.rank, s.num_elements(), s.as_list()
    (True, True, 2, 6, [2, 3])
    """

    __slots__ = ()

    def __new__(cls, dims: Any = ()) -> TensorShape:
        if dims is None:
            return _UnknownShape()
        if isinstance(dims, TensorShape):
            return dims
        if isinstance(dims, int):
            dims = (dims,)
        return tuple.__new__(cls, (None if d is None else int(d) for d in dims))

    @property
    def rank(self) -> int | None:
        return len(self)

    @property
    def ndims(self) -> int | None:
        return self.rank

    @property
    def dims(self) -> list[int | None]:
        return list(self)

    def as_list(self) -> list[int | None]:
        return list(self)

    def num_elements(self) -> int | None:
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n

    def is_fully_defined(self) -> bool:
        return all(d is not None for d in self)

    def is_compatible_with(self, other: Any) -> bool:
        other = TensorShape(other)
        if self.rank is None or other.rank is None:
            return True
        if len(self) != len(other):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self, other))

    def merge_with(self, other: Any) -> TensorShape:
        other = TensorShape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible.")
        if self.rank is None:
            return other
        return TensorShape(a if a is not None else b for a, b in zip(self, other))

    def concatenate(self, other: Any) -> TensorShape:
        return TensorShape(tuple(self) + tuple(TensorShape(other)))

    def __getitem__(self, key: Any) -> Any:
        out = tuple.__getitem__(self, key)
        return TensorShape(out) if isinstance(key, slice) else out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TensorShape) and (self.rank is None) != (other.rank is None):
            return False  # TensorShape(None) is not the scalar shape ()
        if isinstance(other, list):
            other = tuple(other)
        if isinstance(other, tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return TensorShape(other).concatenate(self)

    def __bool__(self) -> bool:
        """True when the rank is known (even for a scalar shape `()`), as in TF."""
        return self.rank is not None

    # --- checks that raise (TF's messages) --------------------------------------------------
    def assert_has_rank(self, rank: int) -> None:
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other: Any) -> None:
        other = TensorShape(other)
        if self.rank is not None and other.rank is not None and self.rank != other.rank:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are incompatible")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def with_rank(self, rank: int) -> TensorShape:
        """This shape, or `[None] * rank` for an unknown shape; ValueError on another rank.

        >>> TensorShape(None).with_rank(2)
        TensorShape([None, None])
        """
        if self.rank is None:
            return TensorShape([None] * rank)
        if self.rank != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> TensorShape:
        if self.rank is not None and self.rank < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        if self.rank is not None and self.rank > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    # --- the shape lattice (TF's TraceType relations) ------------------------------------------
    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape both shapes are compatible with: unequal dimensions become
        None, unequal ranks an unknown shape.

        >>> TensorShape([1, 2]).most_specific_compatible_shape([1, 3])
        TensorShape([1, None])
        """
        other = TensorShape(other)
        if self.rank is None or other.rank is None or self.rank != other.rank:
            return TensorShape(None)
        return TensorShape(a if a == b else None for a, b in zip(self, other))

    def is_subtype_of(self, other: Any) -> bool:
        """Whether every shape this one admits is admitted by `other` (a TensorShape)."""
        if not isinstance(other, TensorShape):
            return False
        if other.rank is None:
            return True
        if self.rank != other.rank:
            return False
        return all(b is None or a == b for a, b in zip(self, other))

    def most_specific_common_supertype(self, others: Any) -> TensorShape | None:
        """The most specific shape of which this one and every shape in `others` are subtypes
        (None when one of `others` is not a TensorShape)."""
        out = self
        for other in others:
            if not isinstance(other, TensorShape):
                return None
            out = out.most_specific_compatible_shape(other)
        return out

    # A shape is a TraceType with no tensor components (TF's answers).
    def placeholder_value(self, placeholder_context: Any = None) -> None:
        return None

    def flatten(self) -> list[Any]:
        return []

    def to_tensors(self, value: Any) -> list[Any]:
        return []

    def from_tensors(self, tensors: Any) -> None:
        return None

    def cast(self, value: Any, casting_context: Any = None) -> Any:
        """`value` (a shape) when it is a subtype of this shape; ValueError otherwise."""
        if not isinstance(value, TensorShape) or not value.is_subtype_of(self):
            raise ValueError(f"Can not cast {value!r} to type {self!r}")
        return value

    def __repr__(self) -> str:
        return f"TensorShape({list(self)})"

    def __str__(self) -> str:
        if len(self) == 1:
            return f"({self[0]},)"
        return "(" + ", ".join(str(d) for d in self) + ")"

    def __reduce__(self) -> Any:
        return TensorShape, (tuple(self),)


class _UnknownShape(TensorShape):
    """A shape of unknown rank (`TensorShape(None)`)."""

    __slots__ = ()

    def __new__(cls) -> _UnknownShape:
        return tuple.__new__(cls, ())

    @property
    def rank(self) -> None:
        return None

    def as_list(self) -> list[int | None]:
        raise ValueError("as_list() is not defined on an unknown TensorShape.")

    def num_elements(self) -> None:
        return None

    def is_fully_defined(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "TensorShape(None)"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return TensorShape, (None,)
