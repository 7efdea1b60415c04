"""`tf.TensorArray` with TF's eager semantics, and `tf.TensorArraySpec`.

An eager TensorArray is a list of tensors. `write`, `unstack`, `scatter` and `split` store
tensors and return a TensorArray that shares the storage (as TF's eager one does, so
`ta = ta.write(i, x)` and a bare `ta.write(i, x)` both work); `read`, `stack`, `gather` and
`concat` build their result with ops, so gradients flow back to the written values. An element
never written reads as zeros of the element shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TypeSpec
from layerflow._src.ops import array_ops
from layerflow._src.ops.random_ops import _num


class _Storage:
    """What every TensorArray returned by one chain of writes shares."""

    __slots__ = ("dtype", "items", "element_shape", "dynamic_size", "infer_shape")

    def __init__(self, dtype: dtypes.DType, size: int, element_shape: TensorShape,
                 dynamic_size: bool, infer_shape: bool) -> None:  # fmt: skip
        self.dtype = dtype
        self.items: list[Tensor | None] = [None] * size
        self.element_shape = element_shape
        self.dynamic_size = dynamic_size
        self.infer_shape = infer_shape


class TensorArray:
    """A list of tensors of one dtype, written and read by index (`tf.TensorArray`).

    >>> import layerflow as tf
    >>> ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    >>> for i in range(3):
    ...     ta = ta.write(i, float(i) * 2.0)
    >>> ta.stack().numpy()
    array([0., 2., 4.], dtype=float32)
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None) -> None:  # fmt: skip
        if size is None:
            raise ValueError("TensorArray needs a size (0 with dynamic_size=True to grow).")
        n = int(_num(size))
        if n < 0:
            raise ValueError(f"TensorArray: size must be >= 0, got {n}.")
        self._storage = _Storage(
            dtypes.as_dtype(dtype), n, TensorShape(element_shape), bool(dynamic_size),
            infer_shape,
        )  # fmt: skip

    @classmethod
    def _sharing(cls, storage: _Storage) -> TensorArray:
        out = cls.__new__(cls)
        out._storage = storage
        return out

    # --- facts -----------------------------------------------------------------------------
    @property
    def dtype(self) -> dtypes.DType:
        return self._storage.dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._storage.element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._storage.dynamic_size

    @property
    def handle(self) -> None:
        return None  # eager: there is no resource handle

    @property
    def flow(self) -> Tensor:
        return convert_to_tensor(0)

    @property
    def _type_spec(self) -> TensorArraySpec:
        s = self._storage
        return TensorArraySpec(s.element_shape, s.dtype, s.dynamic_size, s.infer_shape)

    def size(self, name: str | None = None) -> Tensor:
        return convert_to_tensor(len(self._storage.items))

    def close(self, name: str | None = None) -> None:
        return None

    def identity(self) -> TensorArray:
        return self

    # --- writing ----------------------------------------------------------------------------
    def _value(self, value: Any) -> Tensor:
        s = self._storage
        if isinstance(value, TensorLike):
            if value.dtype != s.dtype:
                raise errors.InvalidArgumentError(
                    None,
                    "TensorArrayWrite",
                    f"TensorArray dtype is {s.dtype.name} but Op is trying to write dtype "
                    f"{value.dtype.name}. Cast the value with tf.cast(value, {s.dtype!r}).",
                )
            return value
        return convert_to_tensor(value, s.dtype)

    def _store(self, index: int, value: Tensor, shape: TensorShape | None = None) -> None:
        s = self._storage
        if index < 0:
            raise errors.OutOfRangeError(
                None,
                "TensorArrayWrite",
                f"Writing to negative indices (index {index}) is not allowed.",
            )
        if index >= len(s.items):
            if not s.dynamic_size:
                raise errors.OutOfRangeError(
                    None,
                    "TensorArrayWrite",
                    f"Tried to write to index {index} but array is not resizeable and size is: "
                    f"{len(s.items)}",
                )
            s.items.extend([None] * (index + 1 - len(s.items)))
        shape = value.shape if shape is None else shape
        if not s.element_shape.is_compatible_with(shape):
            raise ValueError(
                f"Incompatible shape for value ({shape}), expected ({s.element_shape})"
            )
        if s.infer_shape:
            s.element_shape = s.element_shape.merge_with(shape)
        s.items[index] = value

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """Store `value` at `index` (growing the array when `dynamic_size`)."""
        self._store(int(_num(index)), self._value(value))
        return TensorArray._sharing(self._storage)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """Write the rows of `value` at 0, 1, ..."""
        value = self._value(value)
        n = int(value.shape[0]) if value.shape.rank else 0
        s = self._storage
        if value.shape.rank == 0:
            raise ValueError("TensorArray.unstack needs a value of rank >= 1, got a scalar.")
        if not s.dynamic_size and n > len(s.items):
            raise ValueError(
                f"Cannot unstack {n} tensors into a TensorArray of static size {len(s.items)} "
            )
        for i, row in enumerate(array_ops.unstack(value)):
            self._store(i, row)
        return TensorArray._sharing(s)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """Write `value[i]` at `indices[i]`."""
        value = self._value(value)
        idx = np.asarray(_num(indices)).reshape(-1).tolist()
        rows = array_ops.unstack(value) if value.shape.rank else []
        if len(rows) != len(idx):
            raise ValueError(
                f"TensorArray.scatter: {len(idx)} indices for a value with {len(rows)} rows."
            )
        for i, row in zip(idx, rows, strict=True):
            self._store(int(i), row)
        return TensorArray._sharing(self._storage)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """Write consecutive pieces of `value` (along axis 0) of the given `lengths`."""
        value = self._value(value)
        sizes = [int(n) for n in np.asarray(_num(lengths)).reshape(-1).tolist()]
        if sum(sizes) != (value.shape[0] if value.shape.rank else 0):
            raise errors.InvalidArgumentError(
                None,
                "TensorArraySplit",
                f"TensorArray.split: lengths {sizes} must sum to the value's first dimension "
                f"{value.shape[0] if value.shape.rank else 0}.",
            )
        for i, piece in enumerate(array_ops.split(value, sizes)):
            # pieces differ in length: only the trailing dimensions are an element shape
            self._store(i, piece, TensorShape([None, *piece.shape[1:]]))
        return TensorArray._sharing(self._storage)

    # --- reading ----------------------------------------------------------------------------
    def _item(self, index: int) -> Tensor:
        s = self._storage
        if not 0 <= index < len(s.items):
            raise errors.OutOfRangeError(
                None,
                "TensorArrayRead",
                f"Tried to read from index {index} but array size is: {len(s.items)} ",
            )
        item = s.items[index]
        return item if item is not None else self._zeros()

    def _zeros(self) -> Tensor:
        shape = self._storage.element_shape
        if not shape.is_fully_defined():
            raise ValueError(
                f"Cannot convert a partially known TensorShape {_text(shape)} to a Tensor: "
                "an element was never written and the element shape is not fully known. Write "
                "every element, or give TensorArray(..., element_shape=...)."
            )
        return array_ops.zeros(tuple(shape), self._storage.dtype)

    def read(self, index: Any, name: str | None = None) -> Tensor:
        return self._item(int(_num(index)))

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        idx = np.asarray(_num(indices)).reshape(-1).tolist()
        if not idx:
            return self._empty()
        return array_ops.stack([self._item(int(i)) for i in idx])

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new axis 0 (shape [size] + element_shape)."""
        n = len(self._storage.items)
        if n == 0:
            return self._empty()
        return array_ops.stack([self._item(i) for i in range(n)])

    def _empty(self) -> Tensor:
        shape = self._storage.element_shape
        tail = tuple(d or 0 for d in shape) if shape.rank is not None else ()
        return array_ops.zeros((0, *tail), self._storage.dtype)

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their axis 0."""
        n = len(self._storage.items)
        if n == 0:
            return self._empty()
        return array_ops.concat([self._item(i) for i in range(n)], 0)

    def grad(self, source: Any, flow: Any = None, name: str | None = None) -> None:
        raise NotImplementedError(
            "TensorArray.grad builds graph-mode gradient arrays; eager gradients flow through "
            "stack()/read() under tf.GradientTape instead."
        )

    def __repr__(self) -> str:
        s = self._storage
        return (
            f"<tf.TensorArray dtype={s.dtype.name} size={len(s.items)} "
            f"element_shape={_text(s.element_shape)}>"
        )


def _text(shape: TensorShape) -> str:
    return "<unknown>" if shape.rank is None else str(shape)


class TensorArraySpec(TypeSpec):
    """The type of a TensorArray (`tf.TensorArraySpec`).

    >>> TensorArraySpec([2], "float32")
    TensorArraySpec(TensorShape([2]), tf.float32, False, True)
    """

    __slots__ = ("_element_shape", "_dtype", "_dynamic_size", "_infer_shape")

    def __init__(self, element_shape: Any = None, dtype: Any = "float32",
                 dynamic_size: bool = False, infer_shape: bool = True) -> None:  # fmt: skip
        self._element_shape = TensorShape(element_shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)

    @property
    def value_type(self) -> type:
        return TensorArray

    def _serialize(self) -> tuple[Any, ...]:
        return (self._element_shape, self._dtype, self._dynamic_size, self._infer_shape)

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if isinstance(other, TensorArray):
            other = other._type_spec
        return (
            isinstance(other, TensorArraySpec)
            and other._dtype == self._dtype
            and other._dynamic_size == self._dynamic_size
            and self._element_shape.is_compatible_with(other._element_shape)
        )

    def to_tensors(self, value: Any) -> list[Any]:
        return [value.stack()]

    def __repr__(self) -> str:
        return (
            f"TensorArraySpec({self._element_shape!r}, {self._dtype!r}, {self._dynamic_size}, "
            f"{self._infer_shape})"
        )
