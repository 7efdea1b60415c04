"""Record files: `tf.io.TFRecordWriter`, `tf.io.TFRecordOptions`, `tf.data.TFRecordDataset` and
`tf.data.FixedLengthRecordDataset`, byte-compatible with TensorFlow.

A TFRecord file is a sequence of records, each
`uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)` (little
endian), the whole file optionally GZIP- or ZLIB-compressed. CRC32C is computed here in pure
Python (a 256-entry table, byte at a time: no dependency, about 10 MB/s, enough for the record
files this framework's users write and read; checked against RFC 3720's vectors and files
written by TensorFlow).

Reading trusts nothing: a length is checked against what is left of the file (in bounded
chunks for compressed streams) before anything is allocated, and a checksum mismatch raises
`tf.errors.DataLossError`, as TF does.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import UNKNOWN
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike

# --- CRC32C ---------------------------------------------------------------------------------------


def _table() -> list[int]:
    poly = 0x82F63B78  # Castagnoli, reflected
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        out.append(c)
    return out


_CRC_TABLE = _table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """The CRC-32C (Castagnoli) of `data`.

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    table = _CRC_TABLE
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: rotate right by 15 bits and add a constant."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# --- options and the writer -----------------------------------------------------------------------

_KINDS = {"": "", None: "", "NONE": "", "GZIP": "GZIP", "ZLIB": "ZLIB"}


class TFRecordOptions:
    """How a TFRecord file is compressed (`tf.io.TFRecordOptions`): `compression_type` is
    None/"" (none), "GZIP" or "ZLIB", with an optional `compression_level` (0-9). TF's
    buffer and memory tuning fields are accepted and unused."""

    compression_type_map = {"": "", "GZIP": "GZIP", "ZLIB": "ZLIB"}

    def __init__(self, compression_type: Any = None, flush_mode: Any = None,
                 input_buffer_size: Any = None, output_buffer_size: Any = None,
                 window_bits: Any = None, compression_level: Any = None,
                 compression_method: Any = None, mem_level: Any = None,
                 compression_strategy: Any = None) -> None:  # fmt: skip
        if compression_type not in _KINDS:
            raise ValueError(f'Not a valid compression_type: "{compression_type}"')
        if compression_level is not None and not 0 <= int(compression_level) <= 9:
            raise ValueError(f"compression_level must be in [0, 9], got {compression_level}.")
        self.compression_type = compression_type
        self.compression_level = compression_level
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """The compression name ("", "GZIP" or "ZLIB") of options, a string, or None."""
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return _KINDS[options.compression_type]
        if options not in _KINDS:
            raise ValueError(f'Not a valid compression_type: "{options}"')
        return _KINDS[options]


class _ZlibWriter:
    def __init__(self, f: BinaryIO, level: int) -> None:
        self._f, self._z = f, zlib.compressobj(level)

    def write(self, data: bytes) -> None:
        self._f.write(self._z.compress(data))

    def flush(self) -> None:
        self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._f.flush()

    def close(self) -> None:
        self._f.write(self._z.flush())
        self._f.close()


class TFRecordWriter:
    """Write records (bytes) to a TFRecord file (`tf.io.TFRecordWriter`).

    >>> import os, tempfile, layerflow as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "r.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     writer.write(b"hello")
    >>> [r.numpy() for r in tf.data.TFRecordDataset(path)]
    [b'hello']
    """

    def __init__(self, path: Any, options: Any = None) -> None:
        kind = TFRecordOptions.get_compression_type_string(options)
        level = getattr(options, "compression_level", None)
        level = 6 if level is None else int(level)
        raw = open(os.fspath(path), "wb")
        if kind == "GZIP":
            self._f: Any = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=level, mtime=0)
            self._raw: Any = raw
        elif kind == "ZLIB":
            self._f, self._raw = _ZlibWriter(raw, level), None
        else:
            self._f, self._raw = raw, None
        self._closed = False

    def write(self, record: Any) -> None:
        """Append one record: bytes (or a scalar string tensor)."""
        if self._closed:
            raise ValueError("TFRecordWriter.write: the writer is closed.")
        if isinstance(record, TensorLike):
            record = record.numpy()
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, bytes | bytearray | memoryview):
            raise TypeError(f"TFRecordWriter.write takes bytes, got {type(record).__name__}.")
        data = bytes(record)
        length = struct.pack("<Q", len(data))
        self._f.write(length + struct.pack("<I", masked_crc32c(length)) + data
                      + struct.pack("<I", masked_crc32c(data)))  # fmt: skip

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        if not self._closed:
            self._f.close()
            if self._raw is not None:
                self._raw.close()
            self._closed = True

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --- reading --------------------------------------------------------------------------------------

_CHUNK = 16 * 1024 * 1024


class _ZlibReader:
    def __init__(self, f: BinaryIO) -> None:
        self._f, self._z, self._buf = f, zlib.decompressobj(), bytearray()

    def read(self, n: int) -> bytes:
        # Decompress at most 64 KiB at a time: a small bomb never inflates past what is asked.
        while len(self._buf) < n:
            data = self._z.unconsumed_tail or self._f.read(65536)
            if not data:
                self._buf += self._z.flush()
                break
            self._buf += self._z.decompress(data, 65536)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def close(self) -> None:
        self._f.close()


def _open(path: str, kind: str) -> Any:
    if kind == "GZIP":
        return gzip.open(path, "rb")
    raw = open(path, "rb")
    return _ZlibReader(raw) if kind == "ZLIB" else raw


def _read_exactly(f: Any, n: int, left: int | None) -> bytes:
    """n bytes, read in bounded chunks (a lying length never allocates more than the file has;
    an uncompressed file is checked against its remaining size first)."""
    if left is not None and n > left:
        return b""
    parts, got = [], 0
    while got < n:
        chunk = f.read(min(_CHUNK, n - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def read_records(path: str, kind: str) -> Iterator[bytes]:
    f = _open(path, kind)
    size = os.path.getsize(path) if kind == "" else None
    pos = 0
    try:
        while True:
            header = _read_exactly(f, 12, None if size is None else size - pos)
            if len(header) < 12:
                return  # end of file (TF also ends quietly on a partial header)
            length, crc = struct.unpack("<QI", header)
            if masked_crc32c(header[:8]) != crc:
                raise errors.DataLossError(None, None, f"corrupted record at {pos} in '{path}'")
            left = None if size is None else size - pos - 12
            body = _read_exactly(f, length + 4, left)
            if len(body) < length + 4:
                raise errors.DataLossError(None, None, f"truncated record at {pos} in '{path}'")
            data, (crc,) = body[:length], struct.unpack("<I", body[length:])
            if masked_crc32c(data) != crc:
                raise errors.DataLossError(None, None, f"corrupted record at {pos} in '{path}'")
            pos += 12 + length + 4
            yield data
    except (OSError, EOFError, zlib.error) as err:
        raise errors.DataLossError(None, None, f"cannot read '{path}': {err}") from None
    finally:
        f.close()


def _filenames(filenames: Any, what: str) -> list[str]:
    if isinstance(filenames, Dataset):
        return [_path(v) for v in filenames._elements()]
    if isinstance(filenames, TensorLike):
        filenames = filenames.numpy()
    if isinstance(filenames, str | bytes | os.PathLike):
        return [_path(filenames)]
    items = list(np.asarray(filenames, dtype=object).reshape(-1))
    if not items:
        raise ValueError(f"{what}: filenames must not be empty.")
    return [_path(v) for v in items]


def _path(value: Any) -> str:
    if isinstance(value, TensorLike):
        value = value.numpy()
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    return os.fspath(value)


def _bytes_tensor(data: bytes) -> Any:
    return convert_to_tensor(np.array(data, dtype=object))


class TFRecordDataset(Dataset):
    """The records of TFRecord files, as scalar string tensors (`tf.data.TFRecordDataset`)."""

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None, name: str | None = None) -> None:  # fmt: skip
        self._files = _filenames(filenames, "TFRecordDataset")
        self._kind = TFRecordOptions.get_compression_type_string(compression_type)

    def _elements(self) -> Iterator[Any]:
        for path in self._files:
            for data in read_records(path, self._kind):
                yield _bytes_tensor(data)

    def _cardinality(self) -> int:
        return UNKNOWN

    def _element_spec(self) -> Any:
        return structure.TensorSpec((), dtypes.string)


class FixedLengthRecordDataset(Dataset):
    """Records of `record_bytes` bytes from files, after `header_bytes` and before
    `footer_bytes` (`tf.data.FixedLengthRecordDataset`); the body must be a whole number of
    records, as in TF."""

    def __init__(self, filenames: Any, record_bytes: Any, header_bytes: Any = None,
                 footer_bytes: Any = None, buffer_size: Any = None, compression_type: Any = None,
                 num_parallel_reads: Any = None, name: str | None = None) -> None:  # fmt: skip
        self._files = _filenames(filenames, "FixedLengthRecordDataset")
        self._record = int(record_bytes)
        self._header = int(header_bytes or 0)
        self._footer = int(footer_bytes or 0)
        if self._record <= 0 or self._header < 0 or self._footer < 0:
            raise errors.InvalidArgumentError(
                None, None,
                "FixedLengthRecordDataset: record_bytes must be > 0 and header_bytes/"
                f"footer_bytes >= 0, got {self._record}, {self._header}, {self._footer}.",
            )  # fmt: skip
        self._kind = TFRecordOptions.get_compression_type_string(compression_type)

    def _elements(self) -> Iterator[Any]:
        for path in self._files:
            f = _open(path, self._kind)
            try:
                data = f.read() if self._kind else None
                if data is None:
                    size = os.path.getsize(path)
                    body = size - self._header - self._footer
                else:
                    body = len(data) - self._header - self._footer
                if body < 0 or body % self._record:
                    raise errors.InvalidArgumentError(
                        None, None,
                        f"Excluding the header ({self._header} bytes) and footer "
                        f"({self._footer} bytes), input file \"{path}\" has body length {body} "
                        f"bytes, which is not an exact multiple of the record length "
                        f"({self._record} bytes).",
                    )  # fmt: skip
                if data is None:
                    f.seek(self._header)
                    for _ in range(body // self._record):
                        yield _bytes_tensor(f.read(self._record))
                else:
                    start = self._header
                    for i in range(body // self._record):
                        a = start + i * self._record
                        yield _bytes_tensor(data[a : a + self._record])
            finally:
                f.close()

    def _cardinality(self) -> int:
        return UNKNOWN

    def _element_spec(self) -> Any:
        return structure.TensorSpec((), dtypes.string)


# tf.data.TextLineDataset lives in data/text_sources.py.


def list_files(file_pattern: Any, shuffle: Any = None, seed: Any = None,
               name: str | None = None) -> Dataset:  # fmt: skip
    """The files matching glob pattern(s), as string tensors: shuffled (default) or sorted.
    No match raises InvalidArgumentError, as TF does."""
    import glob

    patterns = _filenames(file_pattern, "list_files")
    found = sorted({p for pattern in patterns for p in glob.glob(pattern)})
    if not found:
        raise errors.InvalidArgumentError(
            None, None, f"No files matched pattern: {', '.join(patterns)}"
        )
    from layerflow._src.data.sources import TensorSliceDataset

    ds = TensorSliceDataset(np.array([p.encode() for p in found] + [b""], dtype=object)[:-1])
    if shuffle is None or shuffle:
        ds = ds.shuffle(len(found), seed=seed)
    return ds


__all__ = [
    "FixedLengthRecordDataset", "TFRecordDataset", "TFRecordOptions", "TFRecordWriter",
    "crc32c", "list_files", "masked_crc32c",
]  # fmt: skip
