"""`tf.io.serialize_sparse`, `serialize_many_sparse`, `deserialize_many_sparse`,
`decode_compressed` and `matching_files`.

A serialized SparseTensor is TF's: three `TensorProto`s (indices, values, dense_shape) in
TF's `tensor_content` encoding (strings as all their varint lengths, then all their bytes), so
the bytes equal TensorFlow's and either side reads the other's. Reading trusts nothing: every
length is checked against the bytes present before anything is allocated, and decompression
stops at `MAX_DECOMPRESSED_BYTES`.

>>> import layerflow as tf
>>> sp = tf.SparseTensor(indices=[[0, 1]], values=[5], dense_shape=[2, 3])
>>> back = tf.io.deserialize_many_sparse(tf.io.serialize_many_sparse(sp), tf.int32)
>>> back.indices.numpy().tolist(), back.dense_shape.numpy().tolist()
([[0, 1]], [2, 3])
"""

from __future__ import annotations

import glob
import os
import zlib
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.example_proto import len_field, varint

MAX_DECOMPRESSED_BYTES = 1 << 32  # 4 GiB: a larger result is refused (a "zip bomb")

# TF's DataType enum (tensorflow/core/framework/types.proto).
_DT_ENUM = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18, "float16": 19,
    "uint32": 22, "uint64": 23,
}  # fmt: skip
_DT_NAME = {v: k for k, v in _DT_ENUM.items()}


def _invalid(op: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, op, msg)


def _strings(arr: np.ndarray) -> Tensor:
    return Tensor(arr, backend.cpu_device())


def _host_strings(value: Any, op: str) -> np.ndarray:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint="string")
    arr = backend.to_host(t._data)
    if arr.dtype != object:
        raise TypeError(f"tf.io.{op}: expected a string tensor, got {t.dtype.name}.")
    return np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(
        arr
    ) if arr.size else arr  # fmt: skip


# --- TensorProto, as TF's AsProtoTensorContent writes it -----------------------------------------


def tensor_proto(arr: np.ndarray) -> bytes:
    """`arr` as a serialized TensorProto with `tensor_content` (proto3: zeros omitted)."""
    name = "string" if arr.dtype == object else dtypes.from_numpy(arr.dtype).name
    if name not in _DT_ENUM:
        raise TypeError(f"tf.io.serialize_sparse does not support dtype {name}.")
    dims = b"".join(len_field(2, varint(1 << 3) + varint(d) if d else b"") for d in arr.shape)
    out = varint(1 << 3) + varint(_DT_ENUM[name]) + len_field(2, dims)
    if name == "string":
        items = [s.encode() if isinstance(s, str) else bytes(s) for s in arr.reshape(-1)]
        content = b"".join(varint(len(s)) for s in items) + b"".join(items)
    else:
        content = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
    return out + (len_field(4, content) if content else b"")


class _Corrupt(Exception):
    pass


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Corrupt("a varint is truncated or too long")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def _message(buf: bytes) -> list[tuple[int, Any]]:
    """(field number, value) of each varint or length-delimited field of a message."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            if n > len(buf) - pos:
                raise _Corrupt("a field runs past the end")
            value, pos = buf[pos : pos + n], pos + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if n > len(buf) - pos:
                raise _Corrupt("a field runs past the end")
            value, pos = buf[pos : pos + n], pos + n
        else:
            raise _Corrupt(f"wire type {wire} is not allowed here")
        out.append((number, value))
    return out


def parse_tensor_proto(buf: bytes) -> np.ndarray:
    """A TensorProto (tensor_content, or string_val for strings) as an array."""
    fields = _message(buf)
    enum, dims, content, strings = 0, [], b"", []
    for number, value in fields:
        if number == 1 and isinstance(value, int):
            enum = value
        elif number == 2 and isinstance(value, bytes):
            for k, dim in _message(value):
                if k == 2 and isinstance(dim, bytes):
                    size = [v for n, v in _message(dim) if n == 1 and isinstance(v, int)]
                    if size and size[-1] >= 2**62:
                        raise _Corrupt("a dimension is negative or too large")
                    dims.append(size[-1] if size else 0)
        elif number == 4 and isinstance(value, bytes):
            content += value
        elif number == 8 and isinstance(value, bytes):
            strings.append(value)
    name = _DT_NAME.get(enum)
    if name is None:
        raise _Corrupt(f"unsupported dtype enum {enum}")
    count = int(np.prod(dims, dtype=object)) if dims else 1
    if len(dims) > 32:
        raise _Corrupt(f"rank {len(dims)} is too large")
    if name == "string":
        if strings or not content:
            if len(strings) != count:
                raise _Corrupt(f"{len(strings)} strings for shape {dims}")
            items = strings
        else:
            lengths, pos = [], 0
            for _ in range(count):  # each length takes a byte: count <= len(content)
                if pos >= len(content):
                    raise _Corrupt(f"string lengths run past the end for shape {dims}")
                n, pos = _read_varint(content, pos)
                lengths.append(n)
            if sum(lengths) != len(content) - pos:
                raise _Corrupt("string lengths do not match the bytes present")
            items = []
            for n in lengths:
                items.append(content[pos : pos + n])
                pos += n
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape(dims)
    dt = np.dtype(dtypes.as_dtype(name).np).newbyteorder("<")
    if len(content) != count * dt.itemsize:
        raise _Corrupt(f"{len(content)} bytes of content for shape {dims} of {name}")
    return np.frombuffer(content, dt).astype(dt.newbyteorder("=")).reshape(dims)


# --- sparse tensors ------------------------------------------------------------------------------


def _sparse_arrays(sp_input: Any, op: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"tf.io.{op}: sp_input must be a tf.SparseTensor, got "
                        f"{type(sp_input).__name__}.")  # fmt: skip
    return (sp_input.indices.numpy(), backend.to_host(sp_input.values._data),
            sp_input.dense_shape.numpy())  # fmt: skip


def _out_type(out_type: Any, op: str) -> None:
    if dtypes.as_dtype(out_type).name != "string":
        raise TypeError(f"tf.io.{op}: out_type {dtypes.as_dtype(out_type)!r} is not supported; "
                        "only tf.string (tf.variant holds graph-only handles).")  # fmt: skip


def serialize_sparse(sp_input: Any, out_type: Any = "string", name: Any = None) -> Tensor:
    """A `[3]` string tensor: the SparseTensor's indices, values and dense_shape, each a
    serialized TensorProto (TF's bytes)."""
    _out_type(out_type, "serialize_sparse")
    parts = _sparse_arrays(sp_input, "serialize_sparse")
    out = np.empty(3, dtype=object)
    out[:] = [tensor_proto(a) for a in parts]
    return _strings(out)


def serialize_many_sparse(sp_input: Any, out_type: Any = "string", name: Any = None) -> Tensor:
    """A `[N, 3]` string tensor: row `i` is `serialize_sparse` of the minibatch entry
    `sp_input[i]` (rank R-1), for a SparseTensor of rank R > 1 whose first dimension is N."""
    _out_type(out_type, "serialize_many_sparse")
    indices, values, shape = _sparse_arrays(sp_input, "serialize_many_sparse")
    if shape.size < 2:
        raise _invalid("SerializeManySparse", f"Rank of input SparseTensor should be > 1, but "
                       f"saw rank: {shape.size}")  # fmt: skip
    n = int(shape[0])
    if indices.size and (indices[:, 0].min() < 0 or indices[:, 0].max() >= n):
        raise _invalid("SerializeManySparse", f"indices[:, 0] must lie in [0, {n}), the "
                       "first dimension of dense_shape.")  # fmt: skip
    out = np.empty((n, 3), dtype=object)
    order = np.argsort(indices[:, 0], kind="stable") if indices.size else np.zeros(0, int)
    rows = indices[order, 0] if indices.size else np.zeros(0, np.int64)
    starts = np.searchsorted(rows, np.arange(n + 1))
    for i in range(n):
        pick = order[starts[i] : starts[i + 1]]
        sub = np.ascontiguousarray(indices[pick, 1:]).reshape(len(pick), shape.size - 1)
        out[i] = [tensor_proto(sub), tensor_proto(values[pick]), tensor_proto(shape[1:])]
    return _strings(out)


def deserialize_many_sparse(serialized_sparse: Any, dtype: Any, rank: Any = None,
                            name: Any = None) -> SparseTensor:  # fmt: skip
    """The inverse of `serialize_many_sparse`: a `[N, 3]` string tensor of serialized
    SparseTensors of one rank, as a SparseTensor of rank R+1 whose dense shape is N by the
    largest of each dimension."""
    op = "DeserializeManySparse"
    arr = _host_strings(serialized_sparse, "deserialize_many_sparse")
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise _invalid(op, f"Serialized sparse should be a matrix with 3 columns, got shape "
                       f"{list(arr.shape)}")  # fmt: skip
    want = dtypes.as_dtype(dtype)
    idx_parts, val_parts, shapes = [], [], []
    for i, (ind_b, val_b, shape_b) in enumerate(arr):
        try:
            ind, val, shp = (parse_tensor_proto(b) for b in (ind_b, val_b, shape_b))
        except (_Corrupt, ValueError) as err:
            raise _invalid(
                op, f"Could not parse serialized proto (SparseTensor {i}: {err})"
            ) from None
        got = "string" if val.dtype == object else dtypes.from_numpy(val.dtype).name
        if got != want.name:
            raise _invalid(op, f"Requested SparseTensor of type {want.name} but "
                           f"SparseTensor[{i}].values.dtype() == {got}")  # fmt: skip
        if (ind.dtype != np.int64 or shp.dtype != np.int64 or ind.ndim != 2 or shp.ndim != 1
                or val.ndim != 1 or ind.shape != (val.shape[0], shp.shape[0])):  # fmt: skip
            raise _invalid(op, f"SparseTensor {i} is not a valid (indices [N, rank] int64, "
                           "values [N], dense_shape [rank] int64) triple.")  # fmt: skip
        if shapes and shp.size != shapes[0].size:
            raise _invalid(op, f"Inconsistent rank across SparseTensors: rank prior to "
                           f"SparseTensor[{i}] was: {shapes[0].size} but rank of "
                           f"SparseTensor[{i}] is: {shp.size}")  # fmt: skip
        if np.any(shp < 0) or (ind.size and (np.any(ind < 0) or np.any(ind >= shp))):
            raise _invalid(op, f"SparseTensor {i} has an index outside its dense_shape "
                           f"{shp.tolist()}.")  # fmt: skip
        idx_parts.append(np.concatenate([np.full((len(ind), 1), i, np.int64), ind], axis=1))
        val_parts.append(val)
        shapes.append(shp)
    r = shapes[0].size if shapes else (int(rank) - 1 if rank is not None else 1)
    inner = np.max(np.stack(shapes), axis=0) if shapes else np.zeros(r, np.int64)
    indices = np.concatenate(idx_parts) if idx_parts else np.zeros((0, r + 1), np.int64)
    empty = np.empty(0, dtype=object if want.name == "string" else want.np)
    values = np.concatenate(val_parts) if val_parts else empty
    return SparseTensor(indices, convert_to_tensor(values, dtype=want),
                        np.concatenate([[len(shapes)], inner]).astype(np.int64))  # fmt: skip


# --- compression and file names ------------------------------------------------------------------


def _inflate(data: bytes, wbits: int, more_members: bool) -> bytes:
    out, total = [], 0
    while True:
        d = zlib.decompressobj(wbits)
        chunk = d.decompress(data, MAX_DECOMPRESSED_BYTES + 1 - total)
        while True:
            total += len(chunk)
            if total > MAX_DECOMPRESSED_BYTES:
                raise errors.ResourceExhaustedError(
                    None, "DecodeCompressed",
                    f"the decompressed data is larger than {MAX_DECOMPRESSED_BYTES} bytes.",
                )  # fmt: skip
            out.append(chunk)
            if d.eof or not d.unconsumed_tail:
                break
            chunk = d.decompress(d.unconsumed_tail, MAX_DECOMPRESSED_BYTES + 1 - total)
        if not d.eof:
            raise errors.DataLossError(None, "DecodeCompressed",
                                       "the compressed data is truncated.")  # fmt: skip
        data = d.unused_data
        if not (more_members and data[:2] == b"\x1f\x8b"):
            return b"".join(out)


def decode_compressed(bytes: Any, compression_type: str = "", name: Any = None) -> Tensor:  # noqa: A002
    """Decompress each string of `bytes` ("ZLIB", "GZIP", or "" for none); same shape.

    >>> import zlib, layerflow as tf
    >>> tf.io.decode_compressed(zlib.compress(b"abc"), "ZLIB").numpy()
    b'abc'
    """
    kind = (compression_type or "").upper()
    if kind not in ("", "ZLIB", "GZIP"):
        raise _invalid("DecodeCompressed", f"Only ZLIB, GZIP or NONE are supported "
                       f"compressions, got {compression_type!r}.")  # fmt: skip
    arr = _host_strings(bytes, "decode_compressed")
    if not kind:
        return _strings(arr.copy())
    wbits = zlib.MAX_WBITS | (16 if kind == "GZIP" else 0)
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    for i, data in enumerate(arr.reshape(-1)):
        try:
            flat[i] = _inflate(data, wbits, kind == "GZIP")
        except zlib.error as err:
            raise errors.DataLossError(
                None, "DecodeCompressed", f"inflate() failed: {err}"
            ) from None
    return _strings(out)


def matching_files(pattern: Any, name: Any = None) -> Tensor:
    """The files matching glob `pattern` (a string or 1-D strings; `*`, `?`, `[...]`, never
    across `/`), each pattern's matches sorted, as a 1-D string tensor.

    >>> import layerflow as tf
    >>> tf.io.matching_files("/nonexistent-dir/*.txt").numpy().tolist()
    []
    """
    arr = _host_strings(pattern, "matching_files")
    if arr.ndim > 1:
        raise _invalid("MatchingFiles", f"Input pattern tensor must be scalar or a vector, got "
                       f"shape {list(arr.shape)}")  # fmt: skip
    found: list[bytes] = []
    for p in arr.reshape(-1):
        matches = glob.glob(os.fsdecode(p), include_hidden=True)
        found.extend(sorted(os.fsencode(m) for m in matches))
    out = np.empty(len(found), dtype=object)
    out[:] = found
    return _strings(out)
