"""A sharded checkpoint on disk: an index file plus raw data files, read back as one.

`write(path, shards, info)` writes each shard's tensor bytes, raw and back to back (as TF's
`.data-NNNNN-of-NNNNN` files), to `<name>.data-NNNNN-of-NNNNN.<token>` beside `path`, each
atomically, and then, last, the index at `path`: a layerflow weights file (safetensors) that
holds no tensors and whose checksummed metadata (format version 2) names the data files by file
name and places every slice: {key: {dtype, shape, slices: [[file, offset, spec, crc32]]}}. A
fresh token per save means the previous checkpoint at `path` stays whole until the new index
replaces it; its data files are deleted afterwards. A save that fails midway deletes the data
files it wrote, so the folder is left as it was.

The index is untrusted input: data files must be plain names inside the index's folder, every
size, offset and slice spec is checked (slices tile each tensor, spans tile each data file, every
file has exactly its recorded size) before anything is read, and every slice's checksum before
it is used. `open_checkpoint(path)` returns a reader with the interface of
`weights_file.Reader` (`header`, `info`, `get`, `verify`) for sharded and unsharded files alike.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.saving import sharding, weights_file
from layerflow._src.saving.weights_file import WeightsFileError, tensor_crc
from layerflow._src.utils.files import atomic_write

INDEX_VERSION = 2
_MAX_FILES = 1_000_000


def _data_name(base: str, i: int, n: int, token: str) -> str:
    return f"{base}.data-{i:05d}-of-{n:05d}.{token}"


def _own_data(base: str) -> re.Pattern:
    return re.compile(re.escape(base) + r"\.data-[0-9]{5,}-of-[0-9]{5,}\.[0-9a-f]{16}")


# --- writing ------------------------------------------------------------------------------------
def write(path: str, shards: list[dict], info: dict) -> None:
    """Write `shards` ({key: {spec: array}}) as data files and the index at `path`."""
    folder, base = os.path.split(os.path.abspath(path))
    old = data_files(path)
    token = secrets.token_hex(8)
    written: list[str] = []
    try:
        _write_new(path, folder, base, token, shards, info, written)
    except BaseException:
        # A failed save (an error in a value, a full disk, an interrupt) leaves the folder as
        # it was: the data files it wrote go, unless the new index already names them.
        if not set(written) & set(data_files(path)):
            for p in written:
                with contextlib.suppress(OSError):
                    os.remove(p)
        raise
    for p in old:  # the previous save's data files, now that no index names them
        if p not in written:
            with contextlib.suppress(OSError):
                os.remove(p)


def _write_new(path: str, folder: str, base: str, token: str, shards: list[dict], info: dict,
               written: list[str]) -> None:  # fmt: skip
    """The data files (their paths appended to `written` as they appear), then the index."""
    files, tensors = [], {}
    for i, shard in enumerate(shards):
        name = _data_name(base, i, len(shards), token)
        written.append(os.path.join(folder, name))
        offset = 0
        with atomic_write(os.path.join(folder, name)) as tmp, open(tmp, "wb") as f:
            for key, slices in shard.items():
                for spec, value in slices.items():
                    arr = np.asarray(value, order="C")  # ascontiguousarray makes 0-d 1-d
                    code = weights_file._CODE_OF.get(arr.dtype.name)
                    if code is None:
                        raise TypeError(f"Cannot save '{key}' of dtype {arr.dtype} in a shard.")
                    entry = tensors.setdefault(key, {"dtype": code, "shape": None, "slices": []})
                    full = sharding.parse_spec(spec)[0] if spec.strip() else list(arr.shape)
                    entry["shape"] = full
                    crc = tensor_crc(code, arr.shape, arr)
                    entry["slices"].append([i, offset, spec.strip(), crc])
                    if arr.size:
                        f.write(memoryview(arr.reshape(-1)).cast("B"))
                    offset += arr.nbytes
        files.append({"name": name, "bytes": offset})
    doc = dict(info, sharded={"files": files, "tensors": tensors})
    weights_file.write(path, {}, doc, format_version=INDEX_VERSION)


def data_files(path: str) -> list[str]:
    """The data files an existing sharded index at `path` names that follow this index's own
    naming (`<name>.data-...`, inside its folder): what may be deleted with it. [] otherwise."""
    try:
        header, info = weights_file.read_header(path)
    except (OSError, ValueError):
        return []
    files = (info.get("sharded") or {}).get("files") if isinstance(info, dict) else None
    if not isinstance(files, list):
        return []
    folder, base = os.path.split(os.path.abspath(path))
    own = _own_data(base)
    names = [f.get("name") for f in files if isinstance(f, dict)]
    return [os.path.join(folder, n) for n in names if isinstance(n, str) and own.fullmatch(n)]


# --- reading ------------------------------------------------------------------------------------
def _damaged(path: str, what: str) -> WeightsFileError:
    return weights_file._damaged(path, f"its shard index is invalid: {what}")


def _plain_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "\x00" not in name
        and "/" not in name
        and "\\" not in name
        and os.path.basename(name) == name
        and not os.path.isabs(name)
    )


class ShardedReader:
    """The tensors of a sharded checkpoint, reassembled (the interface of `weights_file.Reader`).

    `header` maps each key to {dtype, shape} of the whole tensor.
    """

    def __init__(self, path: str, info: dict) -> None:
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        meta = info.get("sharded")
        if not isinstance(meta, dict):
            raise _damaged(path, "'sharded' is not an object")
        files, tensors = meta.get("files"), meta.get("tensors")
        if not isinstance(files, list) or not isinstance(tensors, dict) or len(files) > _MAX_FILES:
            raise _damaged(path, "it lists no data files or no tensors")
        self._files: list[tuple[str, int]] = []
        for f in files:
            name, size = (f.get("name"), f.get("bytes")) if isinstance(f, dict) else (None, None)
            if not _plain_name(name):
                raise _damaged(
                    path,
                    f"data file {name!r} is not a file name inside the checkpoint's folder "
                    "(a checkpoint never reads files elsewhere)",
                )
            if type(size) is not int or size < 0:
                raise _damaged(path, f"data file {name!r} has an invalid size {size!r}")
            self._files.append((os.path.join(folder, name), size))
        self._slices: dict[str, list[tuple[int, int, list, list, int]]] = {}
        self.header: dict[str, dict[str, Any]] = {}
        spans: list[list[tuple[int, int, str]]] = [[] for _ in self._files]
        for key, entry in tensors.items():
            self._check_tensor(key, entry, spans)
        for (file, size), used in zip(self._files, spans):
            pos = 0
            for begin, end, key in sorted(used):
                if begin != pos:
                    raise _damaged(path, f"the bytes of '{key}' in {file} start at {begin}, "
                                         f"expected {pos}")  # fmt: skip
                pos = end
            if pos != size:
                raise _damaged(path, f"{file} should hold {size} bytes, its slices use {pos}")
        self.info = {k: v for k, v in info.items() if k != "sharded"}
        for file, size in self._files:
            try:
                actual = os.stat(file).st_size
            except OSError:
                raise WeightsFileError(
                    f"Cannot read checkpoint '{path}': its data file '{file}' is missing. Copy "
                    "the checkpoint with all of its data files; nothing was loaded."
                ) from None
            if actual != size:
                raise _damaged(
                    path, f"data file '{file}' has {actual} bytes, the index says {size}"
                )

    def _check_tensor(self, key: Any, entry: Any, spans: list) -> None:
        path = self.path
        if not isinstance(entry, dict) or not isinstance(entry.get("slices"), list):
            raise _damaged(path, f"the entry of {key!r} is not an object with slices")
        dtype, shape = entry.get("dtype"), entry.get("shape")
        if dtype not in weights_file._ITEMSIZE:
            raise _damaged(path, f"'{key}' has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(type(d) is int and 0 <= d < 2**53 for d in shape):
            raise _damaged(path, f"'{key}' has an invalid shape {shape!r}")
        item = weights_file._ITEMSIZE[dtype]
        parts = []
        for s in entry["slices"]:
            if not (isinstance(s, list) and len(s) == 4 and all(type(x) is int for x in
                    (s[0], s[1], s[3])) and isinstance(s[2], str)):  # fmt: skip
                raise _damaged(path, f"a slice of '{key}' is malformed: {s!r}")
            file, offset, spec, crc = s
            if not 0 <= file < len(self._files) or offset < 0:
                raise _damaged(path, f"a slice of '{key}' names data file {file}, offset {offset}")
            try:
                _, off, shp = sharding.parse_spec(spec, shape)
            except ValueError as e:
                raise _damaged(path, f"'{key}': {e}") from None
            nbytes = item * math.prod(shp)
            spans[file].append((offset, offset + nbytes, key))
            parts.append((file, offset, off, shp, crc))
        problem = sharding.tiling_problem(([0] * len(shape), shape), [(p[2], p[3]) for p in parts])
        if problem:
            raise _damaged(path, f"the slices of '{key}' do not tile it: {problem}")
        self._slices[key] = parts
        self.header[key] = {"dtype": dtype, "shape": shape}

    def get(self, key: str) -> np.ndarray:
        """The whole tensor `key`, reassembled from its slices, each checked by its checksum."""
        entry = self.header[key]
        dtype = weights_file.entry_dtype(entry)
        if dtype is None:
            raise TypeError(f"'{key}' has dtype {entry['dtype']}, which NumPy cannot hold.")
        out = np.empty(entry["shape"], dtype.newbyteorder("<"))  # sizes checked against files
        for file, offset, off, shp, crc in self._slices[key]:
            part = np.empty(shp, out.dtype)
            name, size = self._files[file]
            with open(name, "rb") as f:
                if os.fstat(f.fileno()).st_size != size:
                    raise _damaged(self.path, f"data file '{name}' changed size")
                f.seek(offset)
                if part.size and f.readinto(memoryview(part.reshape(-1)).cast("B")) != part.nbytes:
                    raise _damaged(self.path, f"the data of '{key}' ends early")
            if tensor_crc(entry["dtype"], tuple(shp), part) != crc:
                raise _damaged(self.path, f"a slice of '{key}' in '{name}' fails its checksum")
            out[tuple(slice(o, o + s) for o, s in zip(off, shp))] = part
        return out if out.dtype.isnative else out.astype(dtype)

    def verify(self, keys: Any = None) -> None:
        """Check every wanted tensor's slices against their checksums (one tensor at a time)."""
        for key in self.header if keys is None else [k for k in self.header if k in set(keys)]:
            self.get(key)


@contextlib.contextmanager
def open_checkpoint(path: str | os.PathLike) -> Iterator[Any]:
    """A reader for a weights/checkpoint file, sharded (an index) or not."""
    with weights_file.open_file(path) as reader:
        if "sharded" in reader.info:
            yield ShardedReader(reader.path, reader.info)
        else:
            yield reader


def read_header(path: str | os.PathLike) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """({key: {dtype, shape, ...}}, info) of a checkpoint, sharded or not (all validated)."""
    with open_checkpoint(path) as reader:
        return reader.header, reader.info
