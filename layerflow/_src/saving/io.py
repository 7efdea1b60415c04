"""`tf.io` file and tensor serialization, and pickle-free saving of nested tensor structures.

`serialize_tensor` writes TensorFlow's `TensorProto` wire format, so its bytes parse in TF and
TF's parse in layerflow. `save`/`load` write one safetensors file whose metadata describes the
structure (lists, tuples, dicts, None, numbers, strings) as JSON: loading never runs code.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.errors import InvalidArgumentError, NotFoundError
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.saving import weights_file
from layerflow._src.utils.files import atomic_write

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto).
_DT_ENUM = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18, "float16": 19,
    "uint32": 22, "uint64": 23,
}  # fmt: skip
_DT_NAME = {v: k for k, v in _DT_ENUM.items()}


def _bytes_of(value: Any, what: str) -> bytes:
    if isinstance(value, TensorLike):
        value = backend.to_host(value._data)
        value = value.item() if value.shape == () else value
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{what} needs a scalar string tensor or bytes, got {type(value).__name__}.")


def _string_tensor(data: bytes) -> Tensor:
    return Tensor(np.array(data, dtype=object), backend.cpu_device())


def write_file(filename: Any, contents: Any, name: Any = None) -> None:
    """Write `contents` (a scalar string tensor or bytes) to `filename`, atomically.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.bin")
    >>> write_file(p, b"hello")
    >>> read_file(p).numpy()
    b'hello'
    """
    data = _bytes_of(contents, "tf.io.write_file")
    path = _bytes_of(filename, "tf.io.write_file").decode()
    with atomic_write(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def read_file(filename: Any, name: Any = None) -> Tensor:
    """The bytes of `filename` as a scalar `tf.string` tensor (TF raises NotFoundError too)."""
    path = _bytes_of(filename, "tf.io.read_file").decode()
    try:
        with open(path, "rb") as f:
            return _string_tensor(f.read())
    except FileNotFoundError:
        raise NotFoundError(None, None, f"{path}; No such file or directory") from None


# --- TensorProto -----------------------------------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def serialize_tensor(tensor: Any, name: Any = None) -> Tensor:
    """A scalar string tensor holding `tensor` as a TensorFlow `TensorProto`.

    >>> import layerflow as tf
    >>> s = tf.io.serialize_tensor(tf.constant([1.0, 2.0]))
    >>> tf.io.parse_tensor(s, out_type=tf.float32).numpy()
    array([1., 2.], dtype=float32)
    """
    t = tensor if isinstance(tensor, TensorLike) else convert_to_tensor(tensor)
    arr = backend.to_host(t._data)
    dt = dtypes.from_numpy(arr.dtype).name
    if dt not in _DT_ENUM:
        raise TypeError(f"tf.io.serialize_tensor does not support dtype {dt}.")
    shape = b"".join(_field(2, _varint(1 << 3) + _varint(d)) for d in arr.shape)
    out = _varint(1 << 3) + _varint(_DT_ENUM[dt]) + _field(2, shape)
    if dt == "string":
        for item in arr.reshape(-1):
            out += _field(8, item.encode() if isinstance(item, str) else bytes(item))
    else:
        out += _field(4, np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())
    return _string_tensor(out)


class _Corrupt(Exception):
    """Raised inside the TensorProto reader; `parse_tensor` turns it into InvalidArgumentError."""


# Wire types of the fields we read (protobuf: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_MAX_RANK = 64  # NumPy's limit (TF's is 254); a deeper shape cannot be an array here


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(buf):
            raise _Corrupt("a varint runs past the end")
        if shift > 63:
            raise _Corrupt("a varint is longer than 10 bytes")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n & 0xFFFFFFFFFFFFFFFF, pos


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of every field of one protobuf message."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Corrupt("a field has number 0")
        if wire == _VARINT:
            value, pos = _read_varint(buf, pos)
        elif wire == _BYTES:
            n, pos = _read_varint(buf, pos)
            if n > len(buf) - pos:
                raise _Corrupt("a field runs past the end")
            value, pos = buf[pos : pos + n], pos + n
        elif wire in (_FIXED32, _FIXED64):
            n = 4 if wire == _FIXED32 else 8
            if n > len(buf) - pos:
                raise _Corrupt("a fixed-size field runs past the end")
            value, pos = int.from_bytes(buf[pos : pos + n], "little"), pos + n
        else:
            raise _Corrupt(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _only(fields: list[tuple[int, int, Any]], number: int, wire: int, what: str) -> list[Any]:
    """The values of field `number`, all of which must have wire type `wire`."""
    values = []
    for k, w, v in fields:
        if k == number:
            if w != wire:
                raise _Corrupt(f"{what} (field {number}) has wire type {w}, expected {wire}")
            values.append(v)
    return values


def _shape(fields: list[tuple[int, int, Any]]) -> list[int]:
    """The dims of a TensorShapeProto (all messages named 2 in the TensorProto, merged)."""
    dims: list[int] = []
    for body in _only(fields, 2, _BYTES, "tensor_shape"):
        shape = _fields(body)
        if any(_only(shape, 3, _VARINT, "unknown_rank")):
            raise _Corrupt("the shape has unknown rank")
        for dim in _only(shape, 2, _BYTES, "dim"):
            sizes = _only(_fields(dim), 1, _VARINT, "dim size")
            size = sizes[-1] if sizes else 0
            if size >= 2**63:  # a negative int64: -1 is "unknown", never a tensor's size
                raise _Corrupt(f"a dimension has size {size - 2**64}")
            dims.append(size)
    if len(dims) > _MAX_RANK:
        raise _Corrupt(f"the shape has rank {len(dims)}, more than {_MAX_RANK}")
    return dims


def _parse(data: bytes, want: dtypes.DType) -> np.ndarray:
    fields = _fields(data)
    enums = _only(fields, 1, _VARINT, "dtype")
    enum = enums[-1] if enums else 0
    dims = _shape(fields)
    got = _DT_NAME.get(enum)
    if got is None:
        raise InvalidArgumentError(None, None, f"Unsupported TensorProto dtype enum {enum}.")
    if got != want.name:
        raise InvalidArgumentError(
            None, None, f"Type mismatch between parsed tensor ({got}) and dtype ({want.name})"
        )
    count = 1
    for d in dims:
        count *= d  # Python ints: a lying shape cannot overflow into a small count
    if got == "string":
        items = _only(fields, 8, _BYTES, "string_val")
        if len(items) != count:
            raise _Corrupt(f"it holds {len(items)} strings for shape {dims}")
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
        return arr.reshape(dims)
    np_dt = np.dtype(dtypes.as_dtype(got).np).newbyteorder("<")
    nonzero = 1
    for d in dims:
        nonzero *= d or 1
    if nonzero * np_dt.itemsize >= 2**63:  # NumPy cannot even describe such a shape
        raise _Corrupt(f"the shape {dims} of {got} has more elements than an array can hold")
    content = b"".join(_only(fields, 4, _BYTES, "tensor_content"))
    if len(content) != count * np_dt.itemsize:  # checked before anything is allocated
        raise _Corrupt(f"it holds {len(content)} bytes for shape {dims} of {got}")
    return np.frombuffer(content, np_dt).astype(np_dt.newbyteorder("=")).reshape(dims)


def parse_tensor(serialized: Any, out_type: Any, name: Any = None) -> Tensor:
    """Inverse of `serialize_tensor`; `out_type` must be the serialized dtype (TF's rule).

    Any bytes that are not a valid TensorProto raise `InvalidArgumentError`, and the tensor is
    allocated only after its claimed size matches the bytes actually present.
    """
    want = dtypes.as_dtype(out_type)
    data = _bytes_of(serialized, "tf.io.parse_tensor")
    try:
        arr = _parse(data, want)
    except _Corrupt as e:
        raise InvalidArgumentError(
            None, None, f"Could not parse `serialized` as TensorProto: {e}"
        ) from None
    return Tensor(arr, backend.cpu_device())


# --- nested structures ---------------------------------------------------------------------
def save(path: str | os.PathLike, structure: Any) -> None:
    """Save nested lists/tuples/dicts of tensors to one safetensors file (no pickle).

    >>> import os, tempfile, layerflow as tf
    >>> p = os.path.join(tempfile.mkdtemp(), "s.safetensors")
    >>> tf.io.save(p, {"x": tf.range(3), "pair": (tf.zeros(2), None)})
    >>> tf.io.load(p)["x"].numpy()
    array([0, 1, 2], dtype=int32)
    """
    arrays: dict[str, np.ndarray] = {}

    def describe(obj: Any, where: str) -> Any:
        if isinstance(obj, TensorLike | np.ndarray):
            key = str(len(arrays))
            arrays[key] = backend.to_host(obj._data) if isinstance(obj, TensorLike) else obj
            return {"tensor": key}
        if isinstance(obj, dict):
            bad = [k for k in obj if not isinstance(k, str)]
            if bad:
                raise TypeError(
                    f"layerflow.io.save: dict keys must be str, got {bad!r} at {where}."
                )
            return {"dict": {k: describe(v, f"{where}[{k!r}]") for k, v in obj.items()}}
        if isinstance(obj, list | tuple):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {kind: [describe(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if obj is None or isinstance(obj, bool | int | float | str):
            return {"value": obj}
        raise TypeError(
            f"layerflow.io.save cannot store {type(obj).__name__} at {where}: only tensors, "
            "arrays, lists, tuples, str-keyed dicts, None, numbers and strings."
        )

    tree = describe(structure, "structure")
    weights_file.write(path, arrays, {"format": "layerflow.io", "structure": tree})


def load(path: str | os.PathLike) -> Any:
    """Load what `save` wrote: the same nesting, with tensors (on the current device)."""
    arrays, info = weights_file.read(path)
    if info.get("format") != "layerflow.io":
        raise weights_file.WeightsFileError(
            f"'{os.fspath(path)}' is not a layerflow.io.save file (no structure description); "
            "read plain safetensors files with safetensors.numpy.load_file."
        )

    def build(node: Any) -> Any:
        if not isinstance(node, dict) or len(node) != 1:
            raise weights_file.WeightsFileError(f"'{os.fspath(path)}': malformed structure.")
        ((kind, body),) = node.items()
        if kind == "tensor" and body in arrays:
            return convert_to_tensor(arrays[body])
        if kind == "dict" and isinstance(body, dict):
            return {k: build(v) for k, v in body.items()}
        if kind in ("list", "tuple") and isinstance(body, list):
            items = [build(v) for v in body]
            return items if kind == "list" else tuple(items)
        if kind == "value":
            return body
        raise weights_file.WeightsFileError(f"'{os.fspath(path)}': malformed structure.")

    try:
        return build(info.get("structure"))
    except RecursionError:
        raise weights_file.WeightsFileError(
            f"'{os.fspath(path)}': the structure is nested too deeply to rebuild."
        ) from None
