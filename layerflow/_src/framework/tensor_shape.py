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
