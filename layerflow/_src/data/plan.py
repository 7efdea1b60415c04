"""The fast path of in-memory datasets: a table of arrays plus, per pass, a stream of row indices.

`from_tensor_slices(...)` followed by `shuffle`, `take`, `skip`, `repeat`, `shard` keeps a plan;
`batch` then gathers whole batches with one slice (contiguous rows, a view) or one fancy index
per component instead of stacking elements one by one in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import structure
from layerflow._src.framework.tensor import Tensor

# A chunk of row indices: a slice (contiguous rows) or a 1-D int64 array.
Chunk = slice | np.ndarray

INFINITE = -1
UNKNOWN = -2


class Plan:
    """Rows of `table` (a structure of same-length arrays) in the order `chunks()` gives."""

    __slots__ = ("structure", "columns", "device", "rows", "chunks", "length")

    def __init__(self, structure_: Any, columns: list[Any], device: backend.Device,
                 chunks: Callable[[], Iterator[Chunk]], length: int) -> None:  # fmt: skip
        self.structure = structure_
        self.columns = columns
        self.device = device
        self.rows = int(columns[0].shape[0]) if columns else 0
        self.chunks = chunks
        self.length = length  # indices per pass, or INFINITE

    def derive(self, chunks: Callable[[], Iterator[Chunk]], length: int) -> Plan:
        return Plan(self.structure, self.columns, self.device, chunks, length)

    def gather(self, index: Any) -> Any:
        """The element (int index) or batch (slice / int array) at `index`, as Tensors."""
        device = self.device
        if isinstance(index, int):
            index = (index, Ellipsis)  # a 0-d array even for 1-D columns, never a NumPy scalar
        elif isinstance(index, np.ndarray) and device.xp is not np:
            index = device.xp.asarray(index)
        leaves = [Tensor(col[index], device) for col in self.columns]
        return structure.pack(self.structure, leaves)

    def elements(self) -> Iterator[Any]:
        for chunk in self.chunks():
            rows = range(chunk.start, chunk.stop) if isinstance(chunk, slice) else chunk.tolist()
            for i in rows:
                yield self.gather(i)

    def batches(self, batch_size: int, drop_remainder: bool) -> Iterator[Any]:
        pending: list[Chunk] = []
        have = 0
        for chunk in self.chunks():
            while True:
                n = chunk_len(chunk)
                if n == 0:
                    break
                need = batch_size - have
                if n < need:
                    pending.append(chunk)
                    have += n
                    break
                head, chunk = split_chunk(chunk, need)
                pending.append(head)
                yield self.gather(merge(pending))
                pending, have = [], 0
        if have and not drop_remainder:
            yield self.gather(merge(pending))


def chunk_len(chunk: Chunk) -> int:
    return chunk.stop - chunk.start if isinstance(chunk, slice) else len(chunk)


def split_chunk(chunk: Chunk, n: int) -> tuple[Chunk, Chunk]:
    if isinstance(chunk, slice):
        return slice(chunk.start, chunk.start + n), slice(chunk.start + n, chunk.stop)
    return chunk[:n], chunk[n:]


def as_array(chunk: Chunk) -> np.ndarray:
    if isinstance(chunk, slice):
        return np.arange(chunk.start, chunk.stop, dtype=np.int64)
    return chunk


def merge(pieces: list[Chunk]) -> Chunk:
    """One index for several pieces: a slice when they are adjacent ranges (a view, no copy)."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, slice) for p in pieces) and all(
        a.stop == b.start for a, b in zip(pieces, pieces[1:])
    ):
        return slice(pieces[0].start, pieces[-1].stop)
    return np.concatenate([as_array(p) for p in pieces])


def take(chunks: Iterator[Chunk], count: int) -> Iterator[Chunk]:
    left = count
    for chunk in chunks:
        if left <= 0:
            return
        n = chunk_len(chunk)
        if n <= left:
            yield chunk
            left -= n
        else:
            yield split_chunk(chunk, left)[0]
            return


def skip(chunks: Iterator[Chunk], count: int) -> Iterator[Chunk]:
    left = count
    for chunk in chunks:
        if left > 0:
            n = chunk_len(chunk)
            if n <= left:
                left -= n
                continue
            chunk = split_chunk(chunk, left)[1]
            left = 0
        yield chunk
