"""One safetensors file of named arrays: atomic writes, and reads that trust nothing.

The format is plain safetensors (an 8-byte little-endian header length, a JSON header, the
raw tensor bytes), so `safetensors.numpy.load_file` and other frameworks read our files.
layerflow adds metadata (`__metadata__` holds strings only):

- `layerflow`: a JSON document with the format version, each tensor's CRC-32 (over its dtype,
  shape and bytes), and whatever the caller adds (display names, alias paths);
- `layerflow_crc`: the CRC-32 of that JSON text.

Before safetensors sees a file we validate the header ourselves: the length field, the JSON,
every dtype, shape and byte range, and that the ranges tile the data exactly. Anything wrong
raises `WeightsFileError` (a `ValueError`) naming the file and the problem, so a damaged file
never crashes, hangs, allocates a lying size, or loads half.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

import numpy as np

from layerflow._src.utils.files import atomic_write

FORMAT_VERSION = 1
# A real header is ~100 bytes per tensor; 100 MB leaves room for a million tensors while a
# lying length field cannot make us allocate gigabytes.
MAX_HEADER_BYTES = 100 * 1024 * 1024

_ITEMSIZE = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8, "C64": 8,
}  # fmt: skip
_NUMPY_DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
    "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32, "F64": np.float64,
    "I64": np.int64, "U64": np.uint64, "C64": np.complex64,
}  # fmt: skip
_CODE_OF = {np.dtype(v).name: k for k, v in _NUMPY_DTYPES.items()}


class WeightsFileError(ValueError):
    """A weights or checkpoint file is damaged or is not a layerflow/safetensors file.

    The message names the file and what is wrong. Nothing has been assigned when it is raised.

    >>> issubclass(WeightsFileError, ValueError)
    True
    """


def _damaged(path: Any, what: str) -> WeightsFileError:
    return WeightsFileError(
        f"Cannot read weights file '{os.fspath(path)}': {what}. The file is damaged or is not "
        "a safetensors file; nothing was loaded. Save it again or restore it from a copy."
    )


def tensor_crc(key_dtype: str, shape: tuple[int, ...], data: Any) -> int:
    """CRC-32 over a tensor's dtype code, shape and bytes (flips in any of them show)."""
    head = f"{key_dtype}{list(shape)}".encode()
    arr = np.asarray(data, order="C")
    if arr.size == 0:  # memoryview cannot cast a view with a zero in its shape
        return zlib.crc32(head)
    return zlib.crc32(memoryview(arr).cast("B"), zlib.crc32(head))


# --- writing ------------------------------------------------------------------------------------
def write(
    path: str | os.PathLike,
    tensors: Mapping[str, np.ndarray],
    info: Mapping[str, Any] | None = None,
    overwrite: bool = True,
) -> None:
    """Write host arrays as one safetensors file, atomically, with checksummed metadata.

    >>> import os, tempfile, numpy as np
    >>> p = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> write(p, {"a/kernel": np.ones((2, 2), np.float32)})
    >>> float(read(p)[0]["a/kernel"].sum())
    4.0
    """
    from safetensors.numpy import save_file

    arrays: dict[str, np.ndarray] = {}
    crcs: dict[str, int] = {}
    for key, value in tensors.items():
        arr = np.asarray(value, order="C")  # ascontiguousarray makes 0-d arrays 1-d
        code = _CODE_OF.get(arr.dtype.name)
        if code is None:
            raise TypeError(
                f"Cannot save '{key}' of dtype {arr.dtype}: safetensors stores only "
                f"{sorted(_CODE_OF)}. Cast it first."
            )
        arrays[key] = arr
        crcs[key] = tensor_crc(code, arr.shape, arr)
    doc = dict(info or {})
    doc["format_version"] = FORMAT_VERSION
    doc["crc32"] = crcs
    text = json.dumps(doc, sort_keys=True)
    metadata = {"layerflow": text, "layerflow_crc": str(zlib.crc32(text.encode()))}
    with atomic_write(path, overwrite) as tmp:
        save_file(arrays, tmp, metadata=metadata)


# --- reading ------------------------------------------------------------------------------------
def read_header(path: str | os.PathLike) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Validate the file's structure; return ({key: {dtype, shape, data_offsets}}, info)."""
    path = os.fspath(path)
    try:
        f: BinaryIO = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"No weights file at '{path}'. Check the path (save_weights writes exactly the "
            "path it is given)."
        ) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise _damaged(path, f"it has {size} bytes, fewer than the 8-byte header length")
        (n,) = struct.unpack("<Q", f.read(8))
        if n < 2 or n > MAX_HEADER_BYTES or n > size - 8:
            raise _damaged(
                path,
                f"the header length field says {n} bytes but the file has {size - 8} bytes "
                "after it (truncated, or not a safetensors file)",
            )
        raw = f.read(n)
    if len(raw) != n:
        raise _damaged(path, "the file shrank while it was read")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _damaged(path, f"the JSON header does not parse ({e})") from None
    if not isinstance(header, dict):
        raise _damaged(path, "the JSON header is not an object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise _damaged(path, "__metadata__ is not a map of strings")
    data_len = size - 8 - n
    spans = []
    for key, entry in header.items():
        spans.append(_check_entry(path, key, entry))
    spans.sort()
    pos = 0
    for begin, end, key in spans:
        if begin != pos:
            raise _damaged(path, f"the bytes of '{key}' start at {begin}, expected {pos}")
        pos = end
    if pos != data_len:
        raise _damaged(path, f"the header describes {pos} data bytes but the file has {data_len}")
    return header, _check_info(path, metadata)


def _check_entry(path: str, key: str, entry: Any) -> tuple[int, int, str]:
    if not isinstance(entry, dict):
        raise _damaged(path, f"the entry of '{key}' is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in _ITEMSIZE:
        raise _damaged(path, f"'{key}' has unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(type(d) is int and 0 <= d < 2**53 for d in shape):
        raise _damaged(path, f"'{key}' has an invalid shape {shape!r}")
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(type(o) is int and o >= 0 for o in offsets)
        and offsets[0] <= offsets[1]
    ):
        raise _damaged(path, f"'{key}' has invalid data_offsets {offsets!r}")
    nbytes = _ITEMSIZE[dtype] * int(np.prod(shape, dtype=object))
    if offsets[1] - offsets[0] != nbytes:
        raise _damaged(
            path,
            f"'{key}' of shape {tuple(shape)} and dtype {dtype} needs {nbytes} bytes but its "
            f"offsets span {offsets[1] - offsets[0]}",
        )
    return offsets[0], offsets[1], key


def _check_info(path: str, metadata: dict[str, str]) -> dict[str, Any]:
    text = metadata.get("layerflow")
    if text is None:
        # safetensors keeps metadata in a hash map, so either key may come first in the file;
        # a damaged "layerflow" key must not pass the file off as a foreign one.
        if "layerflow_crc" in metadata:
            raise _damaged(path, "the layerflow metadata is missing")
        return {}  # a safetensors file from elsewhere: no checksums to verify
    if metadata.get("layerflow_crc") != str(zlib.crc32(text.encode())):
        raise _damaged(path, "the layerflow metadata fails its checksum")
    try:
        info = json.loads(text)
    except json.JSONDecodeError:
        raise _damaged(path, "the layerflow metadata is not JSON") from None
    if not isinstance(info, dict) or not isinstance(info.get("crc32", {}), dict):
        raise _damaged(path, "the layerflow metadata is malformed")
    version = info.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise WeightsFileError(
            f"'{path}' was written by a newer layerflow (format version {version}; this one "
            f"reads up to {FORMAT_VERSION}). Upgrade layerflow to read it."
        )
    return info


def read(path: str | os.PathLike, keys: Any = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Validated arrays (all, or those in `keys`) and the layerflow metadata of a file.

    Raises `WeightsFileError` for any damage, before returning anything.
    """
    path = os.fspath(path)
    header, info = read_header(path)
    crcs = info.get("crc32")
    if crcs is not None and set(crcs) != set(header):
        raise _damaged(path, "the tensor names disagree with the checksummed list")
    wanted = list(header) if keys is None else [k for k in header if k in set(keys)]
    out: dict[str, np.ndarray] = {}
    try:
        from safetensors import safe_open

        with safe_open(path, framework="np") as f:
            for key in wanted:
                entry = header[key]
                # safetensors' NumPy frontend returns 0-d tensors as shape (1,).
                arr = f.get_tensor(key).reshape(entry["shape"])
                if crcs is not None:
                    if tensor_crc(entry["dtype"], tuple(entry["shape"]), arr) != crcs[key]:
                        raise _damaged(path, f"the data of '{key}' fails its checksum")
                out[key] = arr
    except WeightsFileError:
        raise
    except Exception as e:  # safetensors' own error types vary between versions
        raise _damaged(path, f"safetensors refused it ({type(e).__name__}: {e})") from None
    return out, info


@contextlib.contextmanager
def open_checked(path: str | os.PathLike, keys: Any = None) -> Iterator[Any]:
    """Verify the file tensor by tensor, then yield `get(key)` reading from the same open file.

    Every wanted tensor's checksum is checked first, streaming (one tensor in memory at a
    time), so a caller that assigns while it reads never starts on a damaged file, and peak
    memory stays one tensor instead of the whole file. `get` re-checks each tensor. The file
    stays open throughout: an atomic save that replaces it meanwhile (a rename) does not
    change what we read; only an in-place rewrite by another tool could.
    """
    path = os.fspath(path)
    header, info = read_header(path)
    crcs = info.get("crc32")
    if crcs is not None and set(crcs) != set(header):
        raise _damaged(path, "the tensor names disagree with the checksummed list")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        start = 8 + n

        def get(key: str) -> np.ndarray:
            entry = header[key]
            dtype = entry_dtype(entry)
            if dtype is None:
                raise TypeError(f"'{key}' has dtype {entry['dtype']}, which NumPy cannot hold.")
            out = np.empty(entry["shape"], dtype.newbyteorder("<"))
            begin, end = entry["data_offsets"]
            f.seek(start + begin)
            if end > begin and f.readinto(memoryview(out.reshape(-1)).cast("B")) != end - begin:
                raise _damaged(path, f"the data of '{key}' ends early (the file shrank)")
            if crcs is not None:
                if tensor_crc(entry["dtype"], tuple(entry["shape"]), out) != crcs[key]:
                    raise _damaged(path, f"the data of '{key}' fails its checksum")
            return out if out.dtype.isnative else out.astype(dtype)

        if crcs is not None:
            wanted = header if keys is None else [k for k in header if k in set(keys)]
            for key in sorted(wanted, key=lambda k: header[k]["data_offsets"][0]):
                get(key)  # verified, then dropped: nothing changes unless all of it is sound
        yield get


def entry_dtype(entry: Mapping[str, Any]) -> np.dtype | None:
    """NumPy dtype of a header entry (None for dtypes NumPy lacks, e.g. bfloat16)."""
    t = _NUMPY_DTYPES.get(entry["dtype"])
    return None if t is None else np.dtype(t)
