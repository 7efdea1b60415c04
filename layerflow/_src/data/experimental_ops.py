"""`tf.data.experimental`'s transformations: functions that return `fn(dataset) -> dataset`, for
`dataset.apply(tf.data.experimental.X(...))`, plus the few functional helpers around datasets
and iterators (`at`, `get_structure`, `get_next_as_optional`, `from_list`, `Counter`, ...).

Most are TF's older spellings of `Dataset` methods and delegate to them. New behaviour lives
here: `assert_cardinality`, `pad_to_cardinality`, `group_by_reducer` with `Reducer`, `at`,
`from_list` and `copy_to_device` / `prefetch_to_device`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import structure, transforms_extra
from layerflow._src.data.batching import stack_elements
from layerflow._src.data.dataset import Dataset, count_arg
from layerflow._src.data.plan import INFINITE, UNKNOWN
from layerflow._src.data.transforms import _Unary
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.optional_ops import Optional
from layerflow._src.utils import nest

_END = object()


def _dataset(value: Any, what: str) -> Dataset:
    if not isinstance(value, Dataset):
        raise TypeError(f"{what} takes a tf.data.Dataset, got {type(value).__name__}.")
    return value


# --- cardinality ----------------------------------------------------------------------------------


class AssertCardinalityDataset(_Unary):
    """The input, with its cardinality declared; a pass that finds another count fails."""

    def __init__(self, input_dataset: Dataset, expected: int) -> None:
        super().__init__(input_dataset)
        self._expected = expected

    def _elements(self) -> Iterator[Any]:
        n = 0
        for element in self._input._elements():
            n += 1
            if self._expected != INFINITE and n > self._expected:
                raise errors.FailedPreconditionError(
                    None, None,
                    f"Input dataset was expected to contain {self._expected} elements but "
                    f"contained at least {n} elements.",
                )  # fmt: skip
            yield element
        if n != self._expected:
            raise errors.FailedPreconditionError(
                None, None,
                f"Input dataset was expected to contain {_count_text(self._expected)} elements "
                f"but contained only {n} elements.",
            )  # fmt: skip

    def _cardinality(self) -> int:
        return self._expected


def _count_text(n: int) -> str:
    return "an infinite number of" if n == INFINITE else str(n)


def assert_cardinality(expected_cardinality: Any) -> Callable[[Dataset], Dataset]:
    """Declare the dataset's cardinality (-1 for infinite); iterating fails with
    FailedPreconditionError when the count differs.

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.range(6).filter(lambda x: x % 2 == 0)
    >>> int(ds.apply(tf.data.experimental.assert_cardinality(3)).cardinality())
    3
    """
    expected = count_arg(expected_cardinality, "expected_cardinality", INFINITE)
    return lambda dataset: AssertCardinalityDataset(_dataset(dataset, "assert_cardinality"),
                                                    expected)  # fmt: skip


class PadToCardinalityDataset(_Unary):
    """The input's dict elements, each with `mask_key: True`, then zero-filled elements with
    `mask_key: False` up to `cardinality`."""

    def __init__(self, input_dataset: Dataset, cardinality: int, mask_key: str) -> None:
        super().__init__(input_dataset)
        self._target = cardinality
        self._key = mask_key

    def _elements(self) -> Iterator[Any]:
        from layerflow._src.framework.convert import convert_to_tensor

        n = 0
        for element in self._input._elements():
            n += 1
            yield {**element, self._key: convert_to_tensor(True)}
        spec = self._input.element_spec
        filler = {}
        for k, s in spec.items():
            if not s.shape.is_fully_defined():
                raise errors.InvalidArgumentError(
                    None, None,
                    f"pad_to_cardinality: component {k!r} has shape {s.shape}; padding needs "
                    "fully defined shapes.",
                )  # fmt: skip
            filler[k] = convert_to_tensor(np.zeros(s.shape.as_list(), s.dtype.np))
        filler[self._key] = convert_to_tensor(False)
        for _ in range(self._target - n):
            yield dict(filler)

    def _cardinality(self) -> int:
        return self._target

    def _element_spec(self) -> Any:
        return {**self._input.element_spec, self._key: structure.TensorSpec((), "bool")}


def pad_to_cardinality(cardinality: Any, mask_key: str = "valid") -> Callable:
    """Pad a dataset of dicts to `cardinality` elements with zeros, adding a bool `mask_key`
    that is True for the real elements.

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.from_tensor_slices({"a": [1, 2]})
    >>> ds = ds.apply(tf.data.experimental.pad_to_cardinality(3))
    >>> [(int(e["a"]), bool(e["valid"])) for e in ds]
    [(1, True), (2, True), (0, False)]
    """
    target = count_arg(cardinality, "cardinality", 0)

    def apply(dataset: Dataset) -> Dataset:
        spec = _dataset(dataset, "pad_to_cardinality").element_spec
        if not isinstance(spec, dict):
            raise ValueError("`pad_to_cardinality` requires its input dataset to be a dictionary.")
        if mask_key in spec:
            raise ValueError(
                f"pad_to_cardinality: the elements already have the key {mask_key!r}; pass "
                "another mask_key."
            )
        n = dataset._cardinality()
        if n < 0:
            raise ValueError(
                "The dataset passed into `pad_to_cardinality` must have a known cardinality, "
                f"but has cardinality {n}. Add assert_cardinality first if you know it."
            )
        if n > target:
            raise ValueError(
                "The dataset passed into `pad_to_cardinality` must have a cardinality less "
                f"than the target cardinality ({target}), but has cardinality {n}."
            )
        return PadToCardinalityDataset(dataset, target, mask_key)

    return apply


# --- group_by_reducer -----------------------------------------------------------------------------


class Reducer:
    """How `group_by_reducer` folds a group: `init_func(key) -> state`,
    `reduce_func(state, element) -> state`, `finalize_func(state) -> output`.

    >>> import layerflow as tf
    >>> r = tf.data.experimental.Reducer(lambda k: tf.constant(0, tf.int64),
    ...                                  lambda s, x: s + x, lambda s: s)
    >>> ds = tf.data.Dataset.range(6).apply(
    ...     tf.data.experimental.group_by_reducer(lambda x: x % 2, r))
    >>> [int(v) for v in ds]
    [6, 9]
    """

    def __init__(self, init_func: Callable, reduce_func: Callable,
                 finalize_func: Callable) -> None:  # fmt: skip
        for what, fn in (("init_func", init_func), ("reduce_func", reduce_func),
                         ("finalize_func", finalize_func)):  # fmt: skip
            if not callable(fn):
                raise TypeError(f"Reducer: {what} must be callable, got {fn!r}.")
        self._init_func = init_func
        self._reduce_func = reduce_func
        self._finalize_func = finalize_func

    @property
    def init_func(self) -> Callable:
        return self._init_func

    @property
    def reduce_func(self) -> Callable:
        return self._reduce_func

    @property
    def finalize_func(self) -> Callable:
        return self._finalize_func


class GroupByReducerDataset(_Unary):
    """One output per key, in ascending key order: the finalized fold of the elements with that
    key. As in TF, `reduce_func(state, element)` takes a tuple element as one argument and
    `finalize_func` takes a tuple state as separate arguments."""

    def __init__(self, input_dataset: Dataset, key_func: Callable, reducer: Reducer) -> None:
        super().__init__(input_dataset)
        self._key_func = key_func
        self._reducer = reducer

    def _elements(self) -> Iterator[Any]:
        from layerflow._src.data.transforms_extra import _scalar
        from layerflow._src.framework.convert import convert_to_tensor

        states: dict[int, Any] = {}
        r = self._reducer
        for element in self._input._elements():
            key = _scalar(structure.call(self._key_func, element), "group_by_reducer's key_func")
            if not isinstance(key, np.integer) or key.dtype != np.int64:
                raise TypeError(f"group_by_reducer: key_func must return a tf.int64 scalar, "
                                f"got {key!r}.")  # fmt: skip
            k = int(key)
            if k not in states:
                states[k] = structure.normalize_output(r.init_func(convert_to_tensor(key)))
            state = states[k]
            new = structure.normalize_output(r.reduce_func(state, element))
            old_leaves, new_leaves = nest.flatten(state), nest.flatten(new)
            if len(old_leaves) != len(new_leaves) or any(
                a.dtype != b.dtype for a, b in zip(old_leaves, new_leaves)
            ):
                raise TypeError(
                    "group_by_reducer: reduce_func changed the state's structure or dtypes: "
                    f"{structure.describe(state)} became {structure.describe(new)}. Keep the "
                    "state's dtypes fixed (cast the new state)."
                )
            states[k] = new
        for k in sorted(states):  # TF's order (not the order of first appearance)
            yield structure.normalize_output(structure.call(r.finalize_func, states[k]))

    def _cardinality(self) -> int:
        return INFINITE if self._input._cardinality() == INFINITE else UNKNOWN

    def _element_spec(self) -> Any:
        return Dataset._element_spec(self)


def group_by_reducer(key_func: Callable, reducer: Reducer) -> Callable:
    """Group the elements by `key_func` (an int64 scalar) and fold each group with `reducer`."""
    if not isinstance(reducer, Reducer):
        raise TypeError(
            f"group_by_reducer: reducer must be a tf.data.experimental.Reducer, got "
            f"{type(reducer).__name__}."
        )
    if not callable(key_func):
        raise TypeError(f"group_by_reducer: key_func must be callable, got {key_func!r}.")
    return lambda dataset: GroupByReducerDataset(_dataset(dataset, "group_by_reducer"),
                                                 key_func, reducer)  # fmt: skip


# --- devices --------------------------------------------------------------------------------------


class CopyToDeviceDataset(_Unary):
    """Every tensor of every element copied to one device (a logical CPU, or a GPU)."""

    def __init__(self, input_dataset: Dataset, device: backend.Device) -> None:
        super().__init__(input_dataset)
        self._device = device

    def _move(self, t: Any) -> Any:
        if type(t) is not Tensor:
            return t  # composite elements (sparse, ragged) stay where they are
        if t._device is self._device:
            return t
        return Tensor(backend.to_device(t._data, self._device), self._device)

    def _elements(self) -> Iterator[Any]:
        for element in self._input._elements():
            yield nest.map_structure(self._move, element)


def _device_arg(spec: Any, what: str) -> backend.Device:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what}: the device must be a device string such as '/GPU:0', "
                         f"got {spec!r}.")  # fmt: skip
    return backend.parse_device(spec)


def copy_to_device(target_device: str, source_device: str = "/cpu:0") -> Callable:
    """Copy every element to `target_device` (TF's soft placement: a device that does not
    exist means the CPU).

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.range(2).apply(tf.data.experimental.copy_to_device("/cpu:0"))
    >>> next(iter(ds)).device
    '/job:localhost/replica:0/task:0/device:CPU:0'
    """
    device = _device_arg(target_device, "copy_to_device")
    _device_arg(source_device, "copy_to_device (source_device)")
    return lambda dataset: CopyToDeviceDataset(_dataset(dataset, "copy_to_device"), device)


def prefetch_to_device(device: str, buffer_size: Any = None) -> Callable:
    """Deliver the elements on `device` (layerflow copies each element as it is taken)."""
    target = _device_arg(device, "prefetch_to_device")
    if buffer_size is not None:
        count_arg(buffer_size, "buffer_size", -1)
    return lambda dataset: CopyToDeviceDataset(_dataset(dataset, "prefetch_to_device"), target)


# --- helpers on datasets and iterators ------------------------------------------------------------


def at(dataset: Dataset, index: Any) -> Any:
    """The element at position `index` (OutOfRangeError past the end). layerflow reaches it
    by iterating, so it also works where TF has no random access (after filter, ...).

    >>> import layerflow as tf
    >>> int(tf.data.experimental.at(tf.data.Dataset.range(10, 20), 3))
    13
    """
    _dataset(dataset, "at")
    i = count_arg(index, "index", 0)
    n = dataset._cardinality()
    if n >= 0 and i >= n:
        raise errors.OutOfRangeError(None, None, f"Index out of range [0, {n}):{i}")
    for k, element in enumerate(dataset._elements()):
        if k == i:
            return element
    raise errors.OutOfRangeError(None, None, f"Index out of range [0, {i}):{i}")


def get_structure(dataset_or_iterator: Any) -> Any:
    """The element structure (TensorSpecs) of a dataset or an iterator."""
    spec = getattr(dataset_or_iterator, "element_spec", None)
    if (
        spec is None
        or not hasattr(dataset_or_iterator, "_elements")
        and not hasattr(dataset_or_iterator, "_dataset")
    ):
        raise TypeError(
            "get_structure takes a tf.data.Dataset or an iterator over one, got "
            f"{type(dataset_or_iterator).__name__}."
        )
    return spec


def get_next_as_optional(iterator: Any) -> Optional:
    """The iterator's next element as a `tf.experimental.Optional`, empty at the end."""
    get = getattr(iterator, "_get_next", None)
    if get is None:
        raise TypeError(
            f"get_next_as_optional takes a tf.data iterator, got {type(iterator).__name__}."
        )
    try:
        value = get()
    except errors.OutOfRangeError:
        return Optional.empty(iterator.element_spec)
    return Optional(value, iterator.element_spec)


def from_list(elements: Any, name: str | None = None) -> Dataset:
    """A dataset of the elements of a Python list (all of one structure, dtype and shape).

    >>> import layerflow as tf
    >>> ds = tf.data.experimental.from_list([(1, "a"), (2, "b")])
    >>> [(int(x), y.numpy()) for x, y in ds]
    [(1, b'a'), (2, b'b')]
    """
    if not isinstance(elements, list | tuple) or not elements:
        raise ValueError(
            "Invalid `elements`. `elements` should be a non-empty list. If you want an empty "
            "dataset, use `tf.data.Dataset.range(0)`."
        )
    items = [structure.normalize(e) for e in elements]
    for k, item in enumerate(items[1:], 1):
        try:
            nest.assert_same_structure(items[0], item, check_types=False)
        except (ValueError, TypeError):
            raise ValueError(
                f"from_list: element {k} ({item!r}) does not have the structure of element 0 "
                f"({items[0]!r})."
            ) from None
    return Dataset.from_tensor_slices(stack_elements(items))


def counter(start: Any = 0, step: Any = 1, dtype: Any = "int64") -> Dataset:
    """`tf.data.experimental.Counter`: start, start + step, ... forever."""
    return Dataset.counter(start, step, dtype)


class RandomDataset(transforms_extra.RandomDataset):
    """`tf.data.experimental.RandomDataset`: random int64 values in [0, 2**32), forever, the
    same sequence for the same seed (as `tf.data.Dataset.random`)."""

    def __init__(self, seed: Any = None, rerandomize_each_iteration: Any = None,
                 name: str | None = None) -> None:  # fmt: skip
        super().__init__(seed, bool(rerandomize_each_iteration))


__all__ = [
    "AssertCardinalityDataset", "CopyToDeviceDataset", "GroupByReducerDataset",
    "PadToCardinalityDataset", "Reducer", "assert_cardinality", "at", "copy_to_device",
    "counter", "from_list", "get_next_as_optional", "get_structure", "group_by_reducer",
    "pad_to_cardinality", "prefetch_to_device", "RandomDataset",
]  # fmt: skip
