"""More dataset nodes: interleave (and flat_map), scan, window, group_by_window, take_while,
unique, sample_from/choose_from datasets, counter, random, rebatch, ignore_errors.

All produce their elements lazily in the caller's thread, in TF's deterministic order.
"""

from __future__ import annotations

import collections
import itertools
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src.data import structure
from layerflow._src.data.batching import stack_elements
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import INFINITE, UNKNOWN
from layerflow._src.data.transforms import (
    FilterDataset,
    MapDataset,
    PrefetchDataset,
    ShuffleDataset,
    _Unary,
)
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.utils import nest


def _as_dataset(value: Any, what: str) -> Dataset:
    if not isinstance(value, Dataset):
        raise TypeError(f"{what} must return a tf.data.Dataset, got {type(value).__name__}.")
    return value


def _scalar(value: Any, what: str) -> Any:
    t = value if isinstance(value, TensorLike) else convert_to_tensor(value)
    if t._data.ndim != 0:
        raise errors.InvalidArgumentError(
            None, None, f"{what} must return a scalar, got shape {list(t.shape)}."
        )
    return t.numpy()


class ListDataset(Dataset):
    """The elements of a Python list (the datasets that `window` yields)."""

    def __init__(self, items: list[Any], spec: Any = None) -> None:
        self._items = items
        self._spec = spec

    def _elements(self) -> Iterator[Any]:
        return iter(self._items)

    def _cardinality(self) -> int:
        return len(self._items)

    def _element_spec(self) -> Any:
        return self._spec if self._spec is not None else Dataset._element_spec(self)


# --- interleave / flat_map ------------------------------------------------------------------------


class InterleaveDataset(_Unary):
    """TF's InterleaveDataset: `cycle_length` open datasets, `block_length` elements from each
    in turn; an exhausted one is replaced, in its slot, by the next input's dataset."""

    def __init__(self, input_dataset: Dataset, fn: Callable[..., Any], cycle_length: int,
                 block_length: int) -> None:  # fmt: skip
        super().__init__(input_dataset)
        self._fn = fn
        self._cycle = cycle_length
        self._block = block_length

    def _open(self, element: Any) -> Iterator[Any]:
        return _as_dataset(structure.call(self._fn, element), "interleave's map_func")._elements()

    def _elements(self) -> Iterator[Any]:
        source = self._input._elements()
        slots: list[Iterator[Any] | None] = [None] * self._cycle
        index = block = 0
        open_count = 0
        end_of_input = False
        while not end_of_input or open_count > 0:
            current = slots[index]
            if current is not None:
                item = next(current, _END)
                if item is not _END:
                    yield item
                    block += 1
                    if block == self._block:
                        block, index = 0, (index + 1) % self._cycle
                    continue
                slots[index] = None
                open_count -= 1
                block, index = 0, (index + 1) % self._cycle
            elif not end_of_input:
                element = next(source, _END)
                if element is _END:
                    end_of_input = True
                else:
                    slots[index] = self._open(element)
                    open_count += 1
            else:
                block, index = 0, (index + 1) % self._cycle

    def _cardinality(self) -> int:
        return INFINITE if self._input._cardinality() == INFINITE else UNKNOWN

    def _element_spec(self) -> Any:
        return Dataset._element_spec(self)


_END = object()


def default_cycle_length() -> int:
    """TF's default when `cycle_length` is None or AUTOTUNE: the number of schedulable cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# --- scan / take_while / unique -------------------------------------------------------------------


class ScanDataset(_Unary):
    def __init__(self, input_dataset: Dataset, initial_state: Any, fn: Callable) -> None:
        super().__init__(input_dataset)
        self._initial = structure.normalize(initial_state)
        self._fn = fn

    def _elements(self) -> Iterator[Any]:
        state = self._initial
        for element in self._input._elements():
            args = (state, *element) if type(element) is tuple else (state, element)
            out = self._fn(*args)
            if not isinstance(out, tuple | list) or len(out) != 2:
                raise TypeError(f"scan_func must return (new_state, output_element), got {out!r}.")
            new_state = structure.normalize_output(out[0])
            old_leaves, new_leaves = nest.flatten(state), nest.flatten(new_state)
            if len(old_leaves) != len(new_leaves) or any(
                a.dtype != b.dtype for a, b in zip(old_leaves, new_leaves)
            ):
                raise TypeError(
                    "scan_func changed the state's structure or dtypes: "
                    f"{structure.describe(state)} became {structure.describe(new_state)}. Keep "
                    "the state's dtypes fixed (cast the new state)."
                )
            state = new_state
            yield structure.normalize_output(out[1])

    def _element_spec(self) -> Any:
        return Dataset._element_spec(self)


class TakeWhileDataset(_Unary):
    def __init__(self, input_dataset: Dataset, predicate: Callable) -> None:
        super().__init__(input_dataset)
        self._predicate = predicate

    def _elements(self) -> Iterator[Any]:
        for element in self._input._elements():
            keep = _scalar(structure.call(self._predicate, element), "take_while's predicate")
            if not isinstance(keep, np.bool_ | bool):
                raise TypeError(f"take_while's predicate must return a bool, got {keep!r}.")
            if not keep:
                return
            yield element

    def _cardinality(self) -> int:
        return UNKNOWN if self._input._cardinality() != 0 else 0


class UniqueDataset(_Unary):
    def __init__(self, input_dataset: Dataset) -> None:
        super().__init__(input_dataset)
        spec = input_dataset.element_spec
        ok = isinstance(spec, structure.TensorSpec) and spec.dtype.name in (
            "int32", "int64", "string",
        ) and len(spec.shape) == 0  # fmt: skip
        if not ok:
            raise TypeError(
                f"unique: the elements must be scalars of dtype int32, int64 or string, got {spec}."
            )

    def _elements(self) -> Iterator[Any]:
        seen = set()
        for element in self._input._elements():
            key = element.numpy().item() if element._data.dtype.kind != "O" else element.numpy()
            if key not in seen:
                seen.add(key)
                yield element

    def _cardinality(self) -> int:
        return UNKNOWN


# --- window / group_by_window ---------------------------------------------------------------------


def _window_of(items: list[Any], spec: Any) -> Any:
    """One window: a dataset per component, in the element's structure (TF's layout)."""
    leaves = nest.flatten(spec)
    columns = [[nest.flatten(e)[i] for e in items] for i in range(len(leaves))]
    sets = [ListDataset(col, s) for col, s in zip(columns, leaves)]
    return structure.pack(spec, sets) if structure.is_structure(spec) else sets[0]


class WindowDataset(_Unary):
    def __init__(self, input_dataset: Dataset, size: int, shift: int, stride: int,
                 drop_remainder: bool) -> None:  # fmt: skip
        super().__init__(input_dataset)
        self._size, self._shift, self._stride = size, shift, stride
        self._drop = drop_remainder

    def _elements(self) -> Iterator[Any]:
        spec = self._input.element_spec
        span = (self._size - 1) * self._stride + 1
        buf: collections.deque = collections.deque()
        it = self._input._elements()
        ended = False
        while True:
            while not ended and len(buf) < span:
                item = next(it, _END)
                if item is _END:
                    ended = True
                else:
                    buf.append(item)
            if not buf:
                return
            items = list(itertools.islice(buf, 0, span, self._stride))
            if len(items) < self._size and (self._drop or not items):
                return
            yield _window_of(items, spec)
            for _ in range(self._shift):  # the next window starts `shift` elements later
                if buf:
                    buf.popleft()
                elif not ended:
                    if next(it, _END) is _END:
                        ended = True
            if ended and not buf:
                return

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        if self._drop:
            span = (self._size - 1) * self._stride + 1
            return 0 if n < span else (n - span) // self._shift + 1
        return (n + self._shift - 1) // self._shift

    def _element_spec(self) -> Any:
        spec = self._input.element_spec
        return nest.map_structure(lambda s: DatasetSpec(s), spec)


class GroupByWindowDataset(_Unary):
    """TF's group_by_window: elements go to the group of their key; a group that reaches its
    window size is reduced (`reduce_func(key, dataset)`) and emitted; at the end, the remaining
    groups are reduced in ascending key order."""

    def __init__(self, input_dataset: Dataset, key_func: Callable, reduce_func: Callable,
                 window_size_func: Callable) -> None:  # fmt: skip
        super().__init__(input_dataset)
        self._key_func, self._reduce_func = key_func, reduce_func
        self._size_func = window_size_func

    def _reduce(self, key: int, items: list[Any]) -> Iterator[Any]:
        window = ListDataset(items, self._input.element_spec)
        key_t = convert_to_tensor(np.int64(key))
        return _as_dataset(self._reduce_func(key_t, window), "reduce_func")._elements()

    def _elements(self) -> Iterator[Any]:
        groups: dict[int, list[Any]] = {}
        sizes: dict[int, int] = {}
        for element in self._input._elements():
            key = _scalar(structure.call(self._key_func, element), "key_func")
            if not isinstance(key, np.integer) or key.dtype != np.int64:
                raise TypeError(f"key_func must return a scalar tf.int64, got {key!r}.")
            key = int(key)
            if key not in sizes:
                size = _scalar(self._size_func(convert_to_tensor(np.int64(key))),
                               "window_size_func")  # fmt: skip
                if int(size) < 1:
                    raise errors.InvalidArgumentError(
                        None, None, f"window_size_func returned {int(size)}; it must be >= 1."
                    )
                sizes[key] = int(size)
            group = groups.setdefault(key, [])
            group.append(element)
            if len(group) == sizes[key]:
                del groups[key]
                yield from self._reduce(key, group)
        for key in sorted(groups):
            yield from self._reduce(key, groups[key])

    def _cardinality(self) -> int:
        return INFINITE if self._input._cardinality() == INFINITE else UNKNOWN

    def _element_spec(self) -> Any:
        return Dataset._element_spec(self)


# --- sampling and choosing among datasets ---------------------------------------------------------


class ChooseDataset(Dataset):
    def __init__(self, datasets: list[Dataset], choices: Dataset, stop_on_empty: bool) -> None:
        self._inputs = list(datasets)
        self._choices = choices
        self._stop = stop_on_empty

    def _elements(self) -> Iterator[Any]:
        its = [d._elements() for d in self._inputs]
        live = [True] * len(its)
        for choice in self._choices._elements():
            i = int(choice.numpy())
            if not 0 <= i < len(its):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"choose_from_datasets: the selector chose index {i}, but there are only "
                    f"{len(its)} datasets.",
                )  # fmt: skip
            if not live[i]:
                continue
            item = next(its[i], _END)
            if item is _END:
                live[i] = False
                if self._stop or not any(live):
                    return
                continue
            yield item

    def _element_spec(self) -> Any:
        return self._inputs[0].element_spec


class SampleDataset(Dataset):
    def __init__(self, datasets: list[Dataset], weights: Any, seed: Any,
                 stop_on_empty: bool, rerandomize: bool) -> None:  # fmt: skip
        self._inputs = list(datasets)
        self._weights = weights
        self._stop = stop_on_empty
        self._seed = ShuffleDataset._base_seed(seed)
        self._rerandomize = rerandomize
        self._passes = 0

    def _weight_stream(self) -> Iterator[np.ndarray]:
        if isinstance(self._weights, Dataset):  # one weight vector per element (TF allows it)
            for w in self._weights._elements():
                yield np.asarray(w.numpy(), np.float64).reshape(-1)
        else:
            w = np.asarray(self._weights, np.float64).reshape(-1)
            while True:
                yield w

    def _elements(self) -> Iterator[Any]:
        k = self._passes if self._rerandomize else 0
        self._passes += 1
        rng = np.random.default_rng([*self._seed, k])
        its = [d._elements() for d in self._inputs]
        live = np.ones(len(its), bool)
        for w in self._weight_stream():
            p = np.where(live, w, 0.0)
            if p.sum() <= 0:
                return
            i = int(rng.choice(len(its), p=p / p.sum()))
            item = next(its[i], _END)
            while item is _END:
                live[i] = False
                if self._stop or not live.any():
                    return
                p = np.where(live, w, 0.0)
                if p.sum() <= 0:
                    return
                i = int(rng.choice(len(its), p=p / p.sum()))
                item = next(its[i], _END)
            yield item

    def _cardinality(self) -> int:
        cards = [d._cardinality() for d in self._inputs]
        return INFINITE if all(c == INFINITE for c in cards) else UNKNOWN

    def _element_spec(self) -> Any:
        return self._inputs[0].element_spec


# --- counter / random -----------------------------------------------------------------------------


class CounterDataset(Dataset):
    def __init__(self, start: Any, step: Any, dtype: Any) -> None:
        self._dtype = dtypes.as_dtype(dtype)
        self._start = np.asarray(start, self._dtype.np)
        self._step = np.asarray(step, self._dtype.np)

    def _elements(self) -> Iterator[Any]:
        value = self._start
        while True:
            yield convert_to_tensor(value)
            value = (value + self._step).astype(self._dtype.np)

    def _cardinality(self) -> int:
        return INFINITE

    def _element_spec(self) -> Any:
        return structure.TensorSpec((), self._dtype)


class RandomDataset(Dataset):
    """Non-negative int64 values below 2**32 (TF's range), reproducible for a given seed."""

    def __init__(self, seed: Any, rerandomize: bool) -> None:
        self._seed = ShuffleDataset._base_seed(seed)
        self._rerandomize = rerandomize
        self._passes = 0

    def _elements(self) -> Iterator[Any]:
        k = self._passes if self._rerandomize else 0
        self._passes += 1
        rng = np.random.default_rng([*self._seed, k])
        while True:
            for v in rng.integers(0, 2**32, 256, dtype=np.int64):
                yield convert_to_tensor(v)

    def _cardinality(self) -> int:
        return INFINITE

    def _element_spec(self) -> Any:
        return structure.TensorSpec((), dtypes.int64)


# --- rebatch / ignore_errors ----------------------------------------------------------------------


class RebatchDataset(_Unary):
    def __init__(self, input_dataset: Dataset, sizes: list[int], drop_remainder: bool) -> None:
        super().__init__(input_dataset)
        self._sizes = sizes
        self._drop = drop_remainder

    def _rows(self) -> Iterator[Any]:
        for element in self._input._elements():
            leaves = structure.flatten(element)
            n = int(leaves[0]._data.shape[0]) if leaves and leaves[0]._data.ndim else 0
            for r in range(n):
                yield structure.pack(element, [leaf[r] for leaf in leaves])

    def _elements(self) -> Iterator[Any]:
        rows = self._rows()
        for size in itertools.cycle(self._sizes):
            group = list(itertools.islice(rows, size))
            if not group or (self._drop and len(group) < size):
                return
            yield stack_elements(group)

    def _cardinality(self) -> int:
        return INFINITE if self._input._cardinality() == INFINITE else UNKNOWN

    def _element_spec(self) -> Any:
        spec = self._input.element_spec
        return nest.map_structure(
            lambda s: structure.TensorSpec([None, *list(s.shape)[1:]], s.dtype), spec
        )


class IgnoreErrorsDataset(_Unary):
    """Skip input elements whose production raised a tf.errors.OpError (TF's ignore_errors).

    A Python generator cannot go on after it raised, so the per-element steps right below
    (`map`, `filter`, `prefetch`, `with_options`) are run here, element by element, on their
    source's elements: an element whose step fails is dropped and the next one follows. An
    error raised deeper (by the source itself) ends the dataset.
    """

    def __init__(self, input_dataset: Dataset, log_warning: bool) -> None:
        super().__init__(input_dataset)
        self._log = log_warning

    def _chain(self) -> tuple[Dataset, list[tuple[str, Callable]]]:
        steps: list[tuple[str, Callable]] = []
        node = self._input
        while True:
            if isinstance(node, MapDataset):
                steps.append(("map", node._fn))
            elif isinstance(node, FilterDataset):
                steps.append(("filter", node._predicate))
            elif not isinstance(node, PrefetchDataset):
                return node, steps[::-1]
            node = node._input

    def _elements(self) -> Iterator[Any]:
        source, steps = self._chain()
        it = source._elements()
        while True:
            try:
                element = next(it)
            except StopIteration:
                return
            except errors.OpError as err:
                self._warn(err)
                return
            try:
                keep = True
                for kind, fn in steps:
                    if kind == "map":
                        element = structure.normalize_output(structure.call(fn, element))
                    else:
                        keep = bool(structure.call(fn, element))
                        if not keep:
                            break
            except errors.OpError as err:
                self._warn(err)
                continue
            if keep:
                yield element

    def _warn(self, err: Exception) -> None:
        if self._log:
            warnings.warn(f"ignore_errors: skipping an element: {err}", stacklevel=3)

    def _cardinality(self) -> int:
        return UNKNOWN


# --- DatasetSpec ----------------------------------------------------------------------------------


class DatasetSpec:
    """The type of a dataset-valued element (`tf.data.DatasetSpec`): its element_spec and the
    dataset's shape (always [] for a dataset).

    >>> import layerflow as tf
    >>> tf.data.DatasetSpec.from_value(tf.data.Dataset.range(3))
    DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, name=None), TensorShape([]))
    """

    def __init__(self, element_spec: Any, dataset_shape: Any = ()) -> None:
        from layerflow._src.framework.tensor_shape import TensorShape

        self._element_spec = element_spec
        self._dataset_shape = TensorShape(dataset_shape)

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    @property
    def value_type(self) -> type:
        return Dataset

    @staticmethod
    def from_value(value: Any) -> DatasetSpec:
        return DatasetSpec(_as_dataset(value, "DatasetSpec.from_value's value").element_spec)

    def is_compatible_with(self, other: Any) -> bool:
        if isinstance(other, Dataset):
            other = DatasetSpec.from_value(other)
        return isinstance(other, DatasetSpec) and other._element_spec == self._element_spec

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DatasetSpec)
            and other._element_spec == self._element_spec
            and other._dataset_shape == self._dataset_shape
        )

    def __hash__(self) -> int:
        return hash((repr(self._element_spec), tuple(self._dataset_shape)))

    def __repr__(self) -> str:
        return f"DatasetSpec({self._element_spec!r}, {self._dataset_shape!r})"


__all__ = [
    "ChooseDataset", "CounterDataset", "DatasetSpec", "GroupByWindowDataset",
    "IgnoreErrorsDataset", "InterleaveDataset", "ListDataset", "RandomDataset", "RebatchDataset",
    "SampleDataset", "ScanDataset", "TakeWhileDataset", "UniqueDataset", "WindowDataset",
]  # fmt: skip
