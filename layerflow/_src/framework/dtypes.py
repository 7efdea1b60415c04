"""TensorFlow dtypes over NumPy dtypes, and TF's conversion rules for Python values."""

from __future__ import annotations

from typing import Any

import numpy as np


class DType:
    """A TensorFlow dtype: `tf.float32`, `tf.int32`, ... It compares equal to its name, to the
    NumPy dtype and to the NumPy scalar type.

    >>> float32 == "float32", float32 == np.float32, float32.is_floating
    (True, True, True)
    """

    __slots__ = ("name", "np", "_hash")

    def __init__(self, name: str, np_dtype: Any) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self._hash = hash(name)

    @property
    def as_numpy_dtype(self) -> type:
        return self.np.type

    @property
    def is_floating(self) -> bool:
        return self.np.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.np.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.np.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.np.kind == "b"

    @property
    def is_complex(self) -> bool:
        return self.np.kind == "c"

    @property
    def is_numeric(self) -> bool:
        return self.np.kind in "iufc"

    @property
    def size(self) -> int:
        return self.np.itemsize

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def min(self) -> Any:
        return np.finfo(self.np).min if self.is_floating else np.iinfo(self.np).min

    @property
    def max(self) -> Any:
        return np.finfo(self.np).max if self.is_floating else np.iinfo(self.np).max

    def is_compatible_with(self, other: Any) -> bool:
        return self == as_dtype(other)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        if other is None:
            return False
        try:
            return self.name == as_dtype(other).name
        except TypeError:
            return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self) -> tuple[Any, ...]:
        return as_dtype, (self.name,)


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
bool_ = DType("bool", np.bool_)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
string = DType("string", np.object_)
half = float16
double = float64

_ALL = [
    float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    bool_, complex64, complex128, string,
]  # fmt: skip
_BY_NAME: dict[str, DType] = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32, "int": int32})
_BY_NP: dict[np.dtype, DType] = {d.np: d for d in _ALL}
_BY_NP[np.dtype(np.str_)] = string
_BY_NP[np.dtype(np.bytes_)] = string


def as_dtype(value: Any) -> DType:
    """Convert a name, NumPy dtype, NumPy type or DType to a DType (`tf.as_dtype`)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value)
        if found is not None:
            return found
    else:
        dtype = getattr(value, "dtype", None)
        if isinstance(dtype, DType):
            return dtype
        try:
            npd = np.dtype(value)
        except TypeError:
            npd = None
        if npd is not None:
            found = _BY_NP.get(npd)
            if found is None and npd.kind in "US":
                found = string
            if found is not None:
                return found
    raise TypeError(
        f"Cannot convert {value!r} to a layerflow dtype: expected a name such as 'float32', a "
        "NumPy dtype, or a tf.DType."
    )


def from_numpy(npd: np.dtype) -> DType:
    found = _BY_NP.get(npd)
    if found is None:
        return as_dtype(npd)
    return found


def infer_python(value: Any) -> np.dtype:
    """TF's dtype for a Python value or nested list: int -> int32, float -> float32, bool -> bool.

    A Python int too large for int32 becomes int64, as in TF.
    """
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "f":
        return np.dtype(np.float32)
    if kind in "iu":
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -(2**31)):
            return np.dtype(np.int64)
        return np.dtype(np.int32)
    if kind == "c":
        return np.dtype(np.complex128)
    return arr.dtype
