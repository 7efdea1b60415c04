"""Datasets that transform another: batch, shuffle, map, filter, take, skip, repeat, cache, ...

Each node keeps the in-memory `Plan` of its input when it can (shuffle, take, skip, repeat,
shard, prefetch, cache reorder or cut row indices only), so a later `batch` still slices whole
batches out of the source arrays.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import plan as plans
from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import INFINITE, UNKNOWN, Plan
from layerflow._src.framework.sparse_tensor import SparseTensor, SparseTensorSpec
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops import random_ops
from layerflow._src.utils import nest


class _Unary(Dataset):
    """A node with one input whose element spec and cardinality default to the input's."""

    def __init__(self, input_dataset: Dataset) -> None:
        self._input = input_dataset

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _element_spec(self) -> Any:
        return self._input.element_spec

    def _elements(self) -> Iterator[Any]:
        plan = self._plan()
        if plan is not None:
            return plan.elements()
        return self._generic()

    def _generic(self) -> Iterator[Any]:
        raise NotImplementedError


# --- shuffle -------------------------------------------------------------------------------------

_DRAW_BLOCK = 256


def buffer_shuffle(items: Iterator[Any], size: int, rng: np.random.Generator) -> Iterator[Any]:
    """TF's shuffle buffer: fill `size` items, then repeatedly emit a uniformly chosen one and
    put the next input in its place; when the input ends, emit what is left in random order.

    The plan path runs this same algorithm on row indices (vectorized when everything fits in
    the buffer), so both paths give the same order for the same seed.
    """
    it = iter(items)
    buf = list(itertools.islice(it, size))
    draws: list[int] = []
    pos = 0
    for item in it:
        if pos == len(draws):
            draws, pos = rng.integers(0, size, _DRAW_BLOCK).tolist(), 0
        j = draws[pos]
        pos += 1
        yield buf[j]
        buf[j] = item
    for j in rng.permutation(len(buf)).tolist():
        yield buf[j]


def _shuffled_chunks(chunks: Iterator[plans.Chunk], length: int, size: int,
                     rng: np.random.Generator) -> Iterator[plans.Chunk]:  # fmt: skip
    if 0 <= length <= size:
        # Everything fits in the buffer: the fill draws nothing and the drain is one permutation.
        pieces = [plans.as_array(c) for c in chunks]
        if not pieces:
            return
        order = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        yield order[rng.permutation(len(order))]
        return

    def ints() -> Iterator[int]:
        for c in chunks:
            yield from (range(c.start, c.stop) if isinstance(c, slice) else c.tolist())

    out = buffer_shuffle(ints(), size, rng)
    while True:
        block = list(itertools.islice(out, 4096))
        if not block:
            return
        yield np.asarray(block, dtype=np.int64)


class ShuffleDataset(_Unary):
    def __init__(self, input_dataset: Dataset, buffer_size: int, seed: int | None,
                 reshuffle: bool) -> None:  # fmt: skip
        super().__init__(input_dataset)
        self._size = buffer_size
        self._reshuffle = reshuffle
        self._seed = self._base_seed(seed)
        self._passes = 0

    @staticmethod
    def _base_seed(seed: int | None) -> list[int]:
        """TF's seed rules: an op seed alone is deterministic; a global seed alone gives a
        sequence of op seeds (reproducible after `tf.random.set_seed`); neither is random."""
        mask = 0xFFFFFFFFFFFFFFFF
        global_seed = random_ops.get_global_seed()
        if seed is None and global_seed is None:
            return [int(np.random.SeedSequence().entropy) & mask]
        if seed is None:
            return [global_seed & mask, int(random_ops.generator(None).integers(2**62))]
        g = random_ops._DEFAULT_GLOBAL_SEED if global_seed is None else global_seed
        return [g & mask, seed & mask]

    def _rng(self) -> np.random.Generator:
        k = self._passes if self._reshuffle else 0
        self._passes += 1
        return np.random.default_rng([*self._seed, k])

    def _plan(self) -> Plan | None:
        src = self._input._plan()
        if src is None:
            return None
        size = self._size

        def chunks() -> Iterator[plans.Chunk]:
            return _shuffled_chunks(src.chunks(), src.length, size, self._rng())

        return src.derive(chunks, src.length)

    def _generic(self) -> Iterator[Any]:
        return buffer_shuffle(self._input._elements(), self._size, self._rng())


# --- map / filter --------------------------------------------------------------------------------


class MapDataset(_Unary):
    def __init__(self, input_dataset: Dataset, fn: Callable[..., Any]) -> None:
        super().__init__(input_dataset)
        self._fn = fn

    def _elements(self) -> Iterator[Any]:
        fn, call, norm = self._fn, structure.call, structure.normalize_output
        for element in self._input._elements():
            yield norm(call(fn, element))

    def _element_spec(self) -> Any:
        return Dataset._element_spec(self)


class FilterDataset(_Unary):
    def __init__(self, input_dataset: Dataset, predicate: Callable[..., Any]) -> None:
        super().__init__(input_dataset)
        self._predicate = predicate

    def _elements(self) -> Iterator[Any]:
        predicate = self._predicate
        for element in self._input._elements():
            keep = structure.call(predicate, element)
            if isinstance(keep, TensorLike):
                if keep.dtype.name != "bool" or keep.ndim != 0:
                    raise TypeError(
                        "filter: the predicate must return a scalar tf.bool tensor, got "
                        f"{keep.dtype.name} with shape {tuple(keep.shape)}."
                    )
                keep = bool(keep)
            elif not isinstance(keep, bool | np.bool_):
                raise TypeError(f"filter: the predicate must return a scalar bool, got {keep!r}.")
            if keep:
                yield element

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return 0 if n == 0 else UNKNOWN


# --- take / skip / repeat / shard ----------------------------------------------------------------


class TakeDataset(_Unary):
    def __init__(self, input_dataset: Dataset, count: int) -> None:
        super().__init__(input_dataset)
        self._count = count

    def _plan(self) -> Plan | None:
        src = self._input._plan()
        if src is None or self._count < 0:
            return src
        count = self._count
        length = count if src.length == INFINITE else min(src.length, count)
        return src.derive(lambda: plans.take(src.chunks(), count), length)

    def _generic(self) -> Iterator[Any]:
        if self._count < 0:
            return self._input._elements()
        return itertools.islice(self._input._elements(), self._count)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if n == INFINITE:
            return self._count
        return UNKNOWN if n == UNKNOWN else min(n, self._count)


class SkipDataset(_Unary):
    def __init__(self, input_dataset: Dataset, count: int) -> None:
        super().__init__(input_dataset)
        self._count = count

    def _plan(self) -> Plan | None:
        src = self._input._plan()
        if src is None or (self._count < 0 and src.length == INFINITE):
            return None
        if self._count < 0:
            return src.derive(lambda: iter(()), 0)
        count = self._count
        length = INFINITE if src.length == INFINITE else max(0, src.length - count)
        return src.derive(lambda: plans.skip(src.chunks(), count), length)

    def _generic(self) -> Iterator[Any]:
        it = self._input._elements()
        if self._count < 0:
            for _ in it:
                pass
            return iter(())
        return itertools.islice(it, self._count, None)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return 0 if self._count < 0 else max(0, n - self._count)


class RepeatDataset(_Unary):
    def __init__(self, input_dataset: Dataset, count: int) -> None:
        super().__init__(input_dataset)
        self._count = count

    def _passes(self) -> Iterator[int]:
        return itertools.count() if self._count < 0 else iter(range(self._count))

    def _plan(self) -> Plan | None:
        src = self._input._plan()
        if src is None:
            return None

        def chunks() -> Iterator[plans.Chunk]:
            for _ in self._passes():
                empty = True
                for c in src.chunks():
                    empty = False
                    yield c
                if empty:  # repeating nothing forever is still nothing
                    return

        if src.length == 0 or self._count == 0:
            length = 0
        elif self._count < 0 or src.length == INFINITE:
            length = INFINITE
        else:
            length = src.length * self._count
        return src.derive(chunks, length)

    def _generic(self) -> Iterator[Any]:
        for _ in self._passes():
            empty = True
            for element in self._input._elements():
                empty = False
                yield element
            if empty:
                return

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count == 0 or n == 0:
            return 0
        if n == UNKNOWN:
            return UNKNOWN
        if self._count < 0 or n == INFINITE:
            return INFINITE
        return n * self._count


class ShardDataset(_Unary):
    def __init__(self, input_dataset: Dataset, num_shards: int, index: int) -> None:
        super().__init__(input_dataset)
        self._n, self._i = num_shards, index

    def _plan(self) -> Plan | None:
        src = self._input._plan()
        if src is None or src.length == INFINITE:
            return None
        n, i = self._n, self._i

        def chunks() -> Iterator[plans.Chunk]:
            pieces = [plans.as_array(c) for c in src.chunks()]
            if pieces:
                yield np.concatenate(pieces)[i::n]

        return src.derive(chunks, len(range(i, src.length, n)))

    def _generic(self) -> Iterator[Any]:
        return itertools.islice(self._input._elements(), self._i, None, self._n)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return n if n < 0 else len(range(self._i, n, self._n))


# --- prefetch / cache / enumerate ----------------------------------------------------------------


class PrefetchDataset(_Unary):
    def _plan(self) -> Plan | None:
        return self._input._plan()

    def _generic(self) -> Iterator[Any]:
        return self._input._elements()


class CacheDataset(_Unary):
    """Replays the first complete pass. A partial pass (e.g. `take` after `cache`) is discarded,
    as in TF. With a filename the pass is written there (atomically) and read back later, also
    by a new process."""

    def __init__(self, input_dataset: Dataset, filename: str) -> None:
        super().__init__(input_dataset)
        self._path = filename + ".lfcache.npz" if filename else ""
        self._chunks: list[plans.Chunk] | None = None
        self._items: list[Any] | None = None

    def _plan(self) -> Plan | None:
        src = self._input._plan()
        if src is None or self._path or src.length == INFINITE:
            return None

        def chunks() -> Iterator[plans.Chunk]:
            if self._chunks is not None:
                yield from self._chunks
                return
            seen = []
            for c in src.chunks():
                seen.append(c)
                yield c
            self._chunks = seen

        return src.derive(chunks, src.length)

    def _generic(self) -> Iterator[Any]:
        if self._items is None and self._path and os.path.exists(self._path):
            self._items = self._read()
        if self._items is not None:
            yield from self._items
            return
        seen = []
        for element in self._input._elements():
            seen.append(element)
            yield element
        if self._path:
            self._write(seen)
        self._items = seen

    def _write(self, items: list[Any]) -> None:
        arrays = {}
        for i, element in enumerate(items):
            for j, t in enumerate(structure.flatten(element)):
                if isinstance(t, SparseTensor):  # its values, indices and dense shape
                    arrays[f"e{i}_{j}_indices"] = t.host_indices()
                    arrays[f"e{i}_{j}_shape"] = np.asarray(t.host_shape(), np.int64)
                    t = t.values
                arrays[f"e{i}_{j}"] = backend.to_host(t._data)
        arrays["count"] = np.asarray(len(items))
        tmp = f"{self._path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)

    def _read(self) -> list[Any]:
        template = self._input.element_spec
        specs = nest.flatten(template)
        device = backend.current_device()

        def leaf(data: Any, key: str, spec: Any) -> Any:
            t = Tensor(backend.to_device(data[key], device), device)
            if isinstance(spec, SparseTensorSpec):
                return SparseTensor(data[f"{key}_indices"], t, data[f"{key}_shape"])
            return t

        with np.load(self._path) as data:
            count = int(data["count"])
            return [
                structure.pack(template, [leaf(data, f"e{i}_{j}", s) for j, s in enumerate(specs)])
                for i in range(count)
            ]


class EnumerateDataset(_Unary):
    def __init__(self, input_dataset: Dataset, start: int) -> None:
        super().__init__(input_dataset)
        self._start = start

    def _elements(self) -> Iterator[Any]:
        device = backend.current_device()
        xp = device.xp
        for i, element in enumerate(self._input._elements(), self._start):
            yield Tensor(xp.asarray(i, dtype=np.int64), device), element

    def _element_spec(self) -> Any:
        return structure.TensorSpec((), "int64"), self._input.element_spec
