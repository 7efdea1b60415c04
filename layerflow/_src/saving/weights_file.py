"""One safetensors file of named arrays: atomic writes, and reads that trust nothing.

The format is plain safetensors (an 8-byte little-endian header length, a JSON header, the
raw tensor bytes), so `safetensors.numpy.load_file` and other frameworks read our files.
layerflow adds metadata (`__metadata__` holds strings only):

- `layerflow`: a JSON document with the format version, each tensor's CRC-32 (over its dtype,
  shape and bytes), and whatever the caller adds (display names, alias paths);
- `layerflow_crc`: the CRC-32 of that JSON text.

Reading is our own (safetensors writes): we validate the header first, the length field, the
JSON (however deeply nested), every dtype, shape and byte range, and that the ranges tile the
data exactly, and then read each tensor from the same open file handle. Anything wrong raises
`WeightsFileError` (a `ValueError`) naming the file and the problem, so a damaged file never
crashes, hangs, allocates a lying size, or loads half, and a file replaced while it is read
(an atomic save by another process) is read whole, old or new, never mixed.
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
# Readable versions: 2 is the index of a sharded checkpoint (`sharded_file`), no tensors.
READ_VERSION = 2
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
    format_version: int = FORMAT_VERSION,
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
    doc["format_version"] = format_version
    doc["crc32"] = crcs
    text = json.dumps(doc, sort_keys=True)
    metadata = {"layerflow": text, "layerflow_crc": str(zlib.crc32(text.encode()))}
    with atomic_write(path, overwrite) as tmp:
        save_file(arrays, tmp, metadata=metadata)


# --- reading ------------------------------------------------------------------------------------
def _loads(path: str, text: str | bytes, what: str) -> Any:
    try:
        return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except RecursionError:
        raise _damaged(path, f"{what} is nested too deeply") from None
    except ValueError as e:  # bad UTF-8, bad JSON, or a number too long to convert
        raise _damaged(path, f"{what} does not parse ({e})") from None


class Reader:
    """One open weights file: its validated header, and tensors read from that same handle.

    Header and data always come from one file: a save that atomically replaces the path
    meanwhile (a rename) changes nothing here. Only an in-place rewrite by another tool could,
    and that is caught by the sizes and checksums.
    """

    def __init__(self, f: BinaryIO, path: str) -> None:
        self.path = path
        self._f = f
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
        self._start = 8 + n
        self.header, self.info = _check_header(path, _loads(path, raw, "the JSON header"),
                                               size - 8 - n)  # fmt: skip

    def get(self, key: str) -> np.ndarray:
        """The tensor `key`, read now and checked against its checksum."""
        entry = self.header[key]
        dtype = entry_dtype(entry)
        if dtype is None:
            raise TypeError(f"'{key}' has dtype {entry['dtype']}, which NumPy cannot hold.")
        out = np.empty(entry["shape"], dtype.newbyteorder("<"))  # sizes checked: fits the file
        begin, end = entry["data_offsets"]
        self._f.seek(self._start + begin)
        if end > begin and self._f.readinto(memoryview(out.reshape(-1)).cast("B")) != end - begin:
            raise _damaged(self.path, f"the data of '{key}' ends early (the file shrank)")
        crcs = self.info.get("crc32")
        if crcs is not None:
            if tensor_crc(entry["dtype"], tuple(entry["shape"]), out) != crcs[key]:
                raise _damaged(self.path, f"the data of '{key}' fails its checksum")
        return out if out.dtype.isnative else out.astype(dtype)

    def verify(self, keys: Any = None) -> None:
        """Check every wanted tensor's checksum, streaming (one tensor in memory at a time)."""
        if self.info.get("crc32") is None:
            return
        wanted = self.header if keys is None else [k for k in self.header if k in set(keys)]
        for key in sorted(wanted, key=lambda k: self.header[k]["data_offsets"][0]):
            self.get(key)  # verified, then dropped


@contextlib.contextmanager
def open_file(path: str | os.PathLike) -> Iterator[Reader]:
    """Open and validate a weights file; yield a `Reader` on it (closed afterwards)."""
    path = os.fspath(path)
    try:
        f: BinaryIO = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"No weights file at '{path}'. Check the path (save_weights writes exactly the "
            "path it is given)."
        ) from None
    with f:
        yield Reader(f, path)


def read_header(path: str | os.PathLike) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Validate the file's structure; return ({key: {dtype, shape, data_offsets}}, info)."""
    with open_file(path) as r:
        return r.header, r.info


def _check_header(
    path: str, header: Any, data_len: int
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    if not isinstance(header, dict):
        raise _damaged(path, "the JSON header is not an object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise _damaged(path, "__metadata__ is not a map of strings")
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
    info = _check_info(path, metadata)
    crcs = info.get("crc32")
    if crcs is not None and set(crcs) != set(header):
        raise _damaged(path, "the tensor names disagree with the checksummed list")
    return header, info


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
    info = _loads(path, text, "the layerflow metadata")
    if not isinstance(info, dict) or not isinstance(info.get("crc32", {}), dict):
        raise _damaged(path, "the layerflow metadata is malformed")
    version = info.get("format_version")
    if not isinstance(version, int) or version > READ_VERSION:
        raise WeightsFileError(
            f"'{path}' was written by a newer layerflow (format version {version}; this one "
            f"reads up to {READ_VERSION}). Upgrade layerflow to read it."
        )
    return info


def read(path: str | os.PathLike, keys: Any = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Validated arrays (all, or those in `keys`) and the layerflow metadata of a file.

    Raises `WeightsFileError` for any damage, before returning anything.
    """
    with open_file(path) as r:
        wanted = list(r.header) if keys is None else [k for k in r.header if k in set(keys)]
        return {key: r.get(key) for key in wanted}, r.info


@contextlib.contextmanager
def open_checked(path: str | os.PathLike, keys: Any = None) -> Iterator[Any]:
    """Verify the file tensor by tensor, then yield `get(key)` reading from the same open file.

    Every wanted tensor's checksum is checked first, streaming, so a caller that assigns while
    it reads never starts on a damaged file; `get` re-checks each tensor.
    """
    with open_file(path) as r:
        r.verify(keys)
        yield r.get


def entry_dtype(entry: Mapping[str, Any]) -> np.dtype | None:
    """NumPy dtype of a header entry (None for dtypes NumPy lacks, e.g. bfloat16)."""
    t = _NUMPY_DTYPES.get(entry["dtype"])
    return None if t is None else np.dtype(t)
