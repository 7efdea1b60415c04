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

    __slots__ = ("name", "np", "_hash", "kind")

    def __init__(self, name: str, np_dtype: Any, kind: str | None = None) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self._hash = hash(name)
        # NumPy's kind letter, except for ml_dtypes' bfloat16 (kind 'V' to NumPy): 'f'.
        self.kind = kind or self.np.kind

    @property
    def as_numpy_dtype(self) -> type:
        return self.np.type

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_numeric(self) -> bool:
        return self.kind in "iufc"

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
        return _finfo(self).min if self.is_floating else _iinfo(self).min

    @property
    def max(self) -> Any:
        return _finfo(self).max if self.is_floating else _iinfo(self).max

    @property
    def as_datatype_enum(self) -> int:
        """TF's DataType enum number (types.proto): float32 is 1, int32 3, bfloat16 14, ..."""
        return _ENUM[self.name]

    def __int__(self) -> int:
        return _ENUM[self.name]

    @property
    def is_quantized(self) -> bool:
        return False  # only the _OpaqueDType constants qint8, quint8, ... are quantized

    @property
    def is_numpy_compatible(self) -> bool:
        return True

    def limits(self, clip_negative: bool = True) -> tuple[Any, Any]:
        """TF's intensity range of the dtype (as used for images): floats (-1, 1), integers their
        full range; the minimum is 0 with `clip_negative`.

        >>> int8.limits(clip_negative=False), float32.limits()
        ((-128, 127), (0, 1))
        """
        found = _LIMITS.get(self.name)
        if found is None:
            raise ValueError(f"{self} does not have defined limits.")
        low, high = found
        return (0 if clip_negative else low), high

    def is_compatible_with(self, other: Any) -> bool:
        return self == as_dtype(other)

    # A dtype is a TraceType of `tf.function` signatures with no tensor components (TF's answers).
    def is_subtype_of(self, other: Any) -> bool:
        return isinstance(other, DType) and other.name == self.name

    def most_specific_common_supertype(self, others: Any) -> DType | None:
        return self if all(self.is_subtype_of(o) for o in others) else None

    def placeholder_value(self, placeholder_context: Any = None) -> None:
        return None

    def flatten(self) -> list[Any]:
        return []

    def to_tensors(self, value: Any) -> list[Any]:
        return []

    def from_tensors(self, tensors: Any) -> None:
        return None

    def cast(self, value: Any, casting_context: Any = None) -> DType:
        if not self.is_subtype_of(value):
            raise ValueError(f"Can not cast {value!r} to type {self!r}")
        return self

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

    def __str__(self) -> str:
        return f"<dtype: {self.name!r}>"

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
# A string tensor is a NumPy object array whose every element is `bytes` (str is encoded as
# UTF-8 when converted, `framework/convert.py` checks every element), as TF's `.numpy()` gives.
string = DType("string", np.object_)
half = float16
double = float64

_ALL = [
    float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    bool_, complex64, complex128, string,
]  # fmt: skip
# TF's DataType enum (tensorflow/core/framework/types.proto).
_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
         "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "complex128": 18,
         "float16": 19, "uint32": 22, "uint64": 23,
         "qint8": 11, "quint8": 12, "qint32": 13, "qint16": 15, "quint16": 16, "resource": 20,
         "variant": 21, "float8_e5m2": 24, "float8_e4m3fn": 25, "float8_e4m3fnuz": 26,
         "float8_e4m3b11fnuz": 27, "float8_e5m2fnuz": 28, "int4": 29, "uint4": 30, "int2": 31,
         "uint2": 32, "float4_e2m1fn": 33}  # fmt: skip
# TF's `dtype_range` table behind `DType.limits` (no entry: float16, complex, string, bfloat16).
_LIMITS: dict[str, tuple[Any, Any]] = {
    "bool": (False, True), "float32": (-1, 1), "float64": (-1, 1),
    **{n: (int(np.iinfo(n).min), int(np.iinfo(n).max))
       for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
}  # fmt: skip
_BY_NAME: dict[str, DType] = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32, "int": int32})
_BY_NP: dict[np.dtype, DType] = {d.np: d for d in _ALL}
_BY_NP[np.dtype(np.str_)] = string
_BY_NP[np.dtype(np.bytes_)] = string


def _finfo(dt: DType) -> Any:
    if dt.name in ML_DTYPES:
        import ml_dtypes

        return ml_dtypes.finfo(dt.np)
    return np.finfo(dt.np)


def _iinfo(dt: DType) -> Any:
    if dt.name in ML_DTYPES:
        import ml_dtypes

        return ml_dtypes.iinfo(dt.np)
    return np.iinfo(dt.np)


# The dtypes NumPy lacks, stored with `ml_dtypes` (the package TF and JAX use), by the kind
# they have in TF (NumPy reports most of them as 'V'). Imported on first use.
ML_DTYPES = {
    "bfloat16": "f", "float8_e4m3fn": "f", "float8_e5m2": "f", "float8_e4m3fnuz": "f",
    "float8_e5m2fnuz": "f", "float8_e4m3b11fnuz": "f", "float4_e2m1fn": "f",
    "int4": "i", "uint4": "u", "int2": "i", "uint2": "u",
}  # fmt: skip


def ml_dtype(name: str) -> DType:
    """The DType `name` of `ML_DTYPES` (`tf.bfloat16`, `tf.dtypes.experimental.float8_e4m3fn`,
    `int4`, ...), created on first use; casts round as `ml_dtypes` does (to nearest even).

    >>> ml_dtype("float8_e4m3fn").max, ml_dtype("int4").min  # doctest: +SKIP
    (448.0, -8)
    """
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    try:
        import ml_dtypes
    except ImportError as err:
        raise ImportError(
            f"tf.{name} needs the ml_dtypes package (the NumPy dtypes TF and JAX use for "
            "bfloat16, float8, int4, ...), which is not installed. Install it with "
            "`pip install ml_dtypes` (or `pip install layerflow[bfloat16]`)."
        ) from err
    dt = DType(name, getattr(ml_dtypes, name), kind=ML_DTYPES[name])
    _ALL.append(dt)
    _BY_NAME[name] = dt
    _BY_NP[dt.np] = dt
    return dt


def bfloat16_dtype() -> DType:
    """`tf.bfloat16`: the brain float (8 exponent bits, 7 mantissa bits), stored with the
    `ml_dtypes` package (the one TF and JAX use), which is imported on first use.

    >>> bfloat16_dtype().is_floating, bfloat16_dtype().size  # doctest: +SKIP
    (True, 2)
    """
    return ml_dtype("bfloat16")


class _OpaqueDType(DType):
    """A dtype TF defines that carries no arithmetic: the quantized dtypes (qint8, ...) and the
    handle dtypes (resource, variant). They can be named, compared, converted with
    `tf.as_dtype` and asked `as_datatype_enum`/`is_quantized`/`size`.

    A quantized tensor holds its integers in TF's NumPy stand-in, a one-field structured
    array (`[("qint8", "i1")]`), so that shape ops (reshape, concat, slicing, tf.cast) keep or
    convert it and arithmetic refuses it, as in TF; `numpy()` gives the plain integers. The
    tf.quantization ops make and read them. No tensor of a handle dtype can be made: every op
    needs `dtype.np`, which raises and says why."""

    __slots__ = ("_size", "_numpy")

    def __init__(self, name: str, size: int, numpy_dtype: Any = None) -> None:
        self.name = name
        self._hash = hash(name)
        self.kind = "q" if numpy_dtype is not None else "r"
        self._size = size
        # TF's NumPy stand-in for a quantized dtype: a one-field structured dtype.
        self._numpy = numpy_dtype

    @property
    def np(self) -> Any:  # type: ignore[override]
        if self.is_quantized:
            return np.dtype(self._numpy)
        raise TypeError(
            f"tf.{self.name} is a handle dtype of TF's runtime (resource handles, variants): it "
            "holds no numbers, so tensors and variables of it cannot be made."
        )

    @property
    def as_numpy_dtype(self) -> Any:
        # TF gives the structured NumPy dtype itself (its `.type` would be np.void).
        if self._numpy is None:
            raise TypeError(f"tf.{self.name} has no NumPy equivalent.")
        return np.dtype(self._numpy)

    @property
    def size(self) -> int:
        return self._size

    @property
    def is_quantized(self) -> bool:
        return self.kind == "q"

    @property
    def is_numpy_compatible(self) -> bool:
        return self.is_quantized

    @property
    def min(self) -> Any:
        kind = " with quantized type" if self.is_quantized else ""
        raise TypeError(f"Cannot find minimum value of {self}{kind}.")

    @property
    def max(self) -> Any:
        kind = " with quantized type" if self.is_quantized else ""
        raise TypeError(f"Cannot find maximum value of {self}{kind}.")

    def __reduce__(self) -> tuple[Any, ...]:
        return as_dtype, (self.name,)


qint8 = _OpaqueDType("qint8", 1, [("qint8", "i1")])
quint8 = _OpaqueDType("quint8", 1, [("quint8", "u1")])
qint16 = _OpaqueDType("qint16", 2, [("qint16", "<i2")])
quint16 = _OpaqueDType("quint16", 2, [("quint16", "<u2")])
qint32 = _OpaqueDType("qint32", 4, [("qint32", "<i4")])
resource = _OpaqueDType("resource", 0)
variant = _OpaqueDType("variant", 0)
QUANTIZED_DTYPES = frozenset({qint8, quint8, qint16, quint16, qint32})
for _dt in (qint8, quint8, qint16, quint16, qint32, resource, variant):
    _BY_NAME[_dt.name] = _dt
    if _dt._numpy is not None:
        _BY_NP[np.dtype(_dt._numpy)] = _dt


def as_dtype(value: Any) -> DType:
    """Convert a name, NumPy dtype, NumPy type or DType to a DType (`tf.as_dtype`)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value)
        if found is not None:
            return found
        if value in ML_DTYPES:
            return ml_dtype(value)
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
            if found is None and npd.name in ML_DTYPES:
                found = ml_dtype(npd.name)
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
