"""`tf.data.TextLineDataset`: the lines of text files, streamed (files are never read whole).

Lines lose their "\\n" (and a "\\r" before it), as TF's. Files are untrusted input: they are
only read, line by line, never interpreted; a missing file raises NotFoundError when the pass
reaches it, as in TF.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import UNKNOWN
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape

_COMPRESSIONS = ("", "GZIP", "ZLIB")


def _zlib_lines(f: Any) -> Iterator[bytes]:
    dec = zlib.decompressobj()
    pending = b""
    while chunk := f.read(1 << 16):
        pending += dec.decompress(chunk)
        *lines, pending = pending.split(b"\n")
        yield from (line + b"\n" for line in lines)
    pending += dec.flush()
    *lines, pending = pending.split(b"\n")
    yield from (line + b"\n" for line in lines)
    if pending:
        yield pending


def _lines(path: str, compression: str) -> Iterator[bytes]:
    try:
        f = gzip.open(path, "rb") if compression == "GZIP" else open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    with f:
        source = _zlib_lines(f) if compression == "ZLIB" else f
        for line in source:
            if line.endswith(b"\n"):
                line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            yield line


def _scalar(line: bytes) -> Tensor:
    arr = np.empty((), dtype=object)
    arr[()] = line
    return Tensor(arr, backend.current_device())


class TextLineDataset(Dataset):
    """One scalar string element per line of `filenames` (a path or a list of paths).

    >>> import layerflow as tf, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> tf.io.write_file(p, "one\\ntwo\\n")
    >>> [t.numpy() for t in tf.data.TextLineDataset(p)]
    [b'one', b'two']
    """

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None, name: Any = None) -> None:  # fmt: skip
        if isinstance(filenames, Dataset):
            names = [t for t in filenames]
        else:
            names = [filenames] if isinstance(filenames, str | bytes | Tensor) else filenames
        arr = []
        for n in names:
            t = n if isinstance(n, Tensor) else convert_to_tensor(n)
            if t.dtype != dtypes.string:
                raise TypeError(
                    f"TextLineDataset: filenames must be strings, got dtype {t.dtype.name}."
                )
            arr.extend(np.asarray(backend.to_host(t._data), dtype=object).reshape(-1).tolist())
        self._paths = [p.decode() if isinstance(p, bytes) else p for p in arr]
        comp = (compression_type or "").upper()
        if comp not in _COMPRESSIONS:
            raise ValueError(
                f"TextLineDataset: compression_type must be one of '', 'GZIP', 'ZLIB', got "
                f"{compression_type!r}."
            )
        self._compression = comp
        self._parallel = 1 if num_parallel_reads in (None, 0) else int(num_parallel_reads)
        if self._parallel < 1 and self._parallel != -1:
            raise ValueError(
                f"TextLineDataset: num_parallel_reads must be positive or AUTOTUNE (-1), got "
                f"{num_parallel_reads}."
            )
        if self._parallel == -1:
            self._parallel = max(1, len(self._paths))

    def _elements(self) -> Iterator[Any]:
        if self._parallel == 1:
            for p in self._paths:
                for line in _lines(p, self._compression):
                    yield _scalar(line)
            return
        # TF interleaves `num_parallel_reads` files one line at a time, in file order.
        pending = list(self._paths)
        active: list[Iterator[bytes]] = []
        while pending or active:
            while pending and len(active) < self._parallel:
                active.append(_lines(pending.pop(0), self._compression))
            for it in list(active):
                line = next(it, None)
                if line is None:
                    active.remove(it)
                    if pending:
                        active.insert(len(active), _lines(pending.pop(0), self._compression))
                    continue
                yield _scalar(line)

    def _cardinality(self) -> int:
        return UNKNOWN

    def _element_spec(self) -> Any:
        return structure.TensorSpec(TensorShape([]), dtypes.string)
