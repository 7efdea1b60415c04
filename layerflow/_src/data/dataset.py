"""`tf.data.Dataset`: a lazily evaluated, re-iterable sequence of elements.

Every dataset is a node over its input. A node produces its elements with `_elements()` (a fresh
Python generator per pass) and may also offer a `Plan` (see `plan.py`): the in-memory fast path
that lets `batch` slice whole batches out of the source arrays instead of stacking elements one
by one. Iterating yields layerflow Tensors, nested in the element's tuples and dicts.

Import cycle, on purpose: the node classes in `batching`, `sources` and `transforms` subclass
`Dataset`, and `Dataset`'s methods (`batch`, `map`, `range`, ...) construct them. This module
imports them at its end, as modules (not names), so either import order works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import fingerprint, iterator_spec, iterator_state, structure
from layerflow._src.data.dataset_methods import DatasetMethods, NumpyIterator
from layerflow._src.data.plan import INFINITE, UNKNOWN, Plan
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.saving.python_state import PythonState

AUTOTUNE = -1
INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN


def count_arg(value: Any, what: str, minimum: int) -> int:
    """A count argument (int or scalar integer tensor) checked against its minimum."""
    if isinstance(value, TensorLike):
        value = value.numpy()
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{what} must be an integer, got {value!r} ({type(value).__name__}).")
    value = int(value)
    if value < minimum:
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be at least {minimum}, got {value}."
        )
    return value


def _tracer() -> Any:
    """The active `tf.function` trace, if any (`backend.flags`: no import of `function/`)."""
    flags = backend.flags
    return flags.tracer if flags.general else None


class Iterator_(PythonState):
    """What `iter(dataset)` returns: a Python iterator with TF's `get_next()` and `element_spec`.

    It is trackable: `tf.train.Checkpoint(iterator=it)` saves its position and a restore
    puts it back (see `iterator_state.py` for what is stored and when it is exact).
    """

    __slots__ = ("_dataset", "_it", "_produced", "_nodes", "_passes_at_start", "_fp")

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset
        self._nodes = iterator_state.pass_nodes(dataset, Dataset)
        self._passes_at_start = [n._passes for n in self._nodes]
        self._produced = 0
        self._fp: int | None = None
        self._it = dataset._elements()

    def __iter__(self) -> Iterator_:
        return self

    def __next__(self) -> Any:
        tracer = _tracer()
        if tracer is not None:
            return self._traced_next(tracer, "IteratorGetNext")
        element = next(self._it)
        self._produced += 1
        return element

    def get_next(self) -> Any:
        tracer = _tracer()
        if tracer is not None:
            return self._traced_next(tracer, "IteratorGetNext")
        return self._get_next()

    def _get_next(self) -> Any:
        try:
            element = next(self._it)
        except StopIteration:
            raise errors.OutOfRangeError(None, None, "End of sequence") from None
        self._produced += 1
        return element

    # -- checkpointing (tf.train.experimental.PythonState) ------------------------------------

    def _fingerprint(self) -> int:
        if self._fp is None:  # hashing the sources is not free; the pipeline never changes
            self._fp = fingerprint.fingerprint(self._dataset, Dataset)
        return self._fp

    def serialize(self) -> bytes:
        return iterator_state.encode(self._fingerprint(), self._produced, self._passes_at_start)

    def deserialize(self, string_value: bytes) -> None:
        card = self._dataset._cardinality()
        produced, passes = iterator_state.decode(
            string_value, self._fingerprint(), card, len(self._nodes)
        )
        it = iterator_state.replay(self._dataset, self._nodes, passes, produced)
        self._it, self._produced, self._passes_at_start = it, produced, passes

    def _traced_next(self, tracer: Any, name: str) -> Any:
        """Inside a `tf.function` trace: a step that takes the next element each time the
        program runs (TF's IteratorGetNext op), never an element frozen at trace time."""
        from layerflow._src.autodiff.specs import ArraySpec

        spec = self.element_spec
        flat = structure.flatten(spec)
        out_spec = [ArraySpec(tuple(s.shape.as_list()), s.dtype) for s in flat]

        def pull() -> list[Any]:
            return structure.flatten(self._get_next())

        outs = tracer.host_call(pull, (), {}, out_spec, name=name, stateful=True)
        return structure.pack(spec, list(outs))

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    @property
    def _type_spec(self) -> Any:
        return iterator_spec.IteratorSpec(self.element_spec)


iterator_spec.register_iterator_type(Iterator_)


class Dataset(DatasetMethods):
    """A sequence of elements built from tensors and transformed lazily (`tf.data.Dataset`).

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.from_tensor_slices([1, 2, 3, 4, 5]).map(lambda x: x * 2).batch(2)
    >>> [b.tolist() for b in ds.as_numpy_iterator()]
    [[2, 4], [6, 8], [10]]
    """

    # -- what every node provides --------------------------------------------------------------

    def _elements(self) -> Iterator[Any]:
        raise NotImplementedError

    def _plan(self) -> Plan | None:
        """The in-memory fast path, when this node and its inputs allow it."""
        return None

    def _cardinality(self) -> int:
        return UNKNOWN

    def _element_spec(self) -> Any:
        """The element's structure of TensorSpecs; by default from the first element."""
        for element in self._elements():
            return structure.spec_of(element)
        raise ValueError(
            f"The element_spec of this {type(self).__name__} is not known: the dataset is empty."
        )

    # -- iteration and inspection --------------------------------------------------------------

    def __iter__(self) -> Iterator_:
        return Iterator_(self)

    def as_numpy_iterator(self) -> NumpyIterator:
        """Iterate with NumPy values (arrays, NumPy scalars for rank-0 components).

        >>> import layerflow as tf
        >>> list(tf.data.Dataset.range(3).as_numpy_iterator())
        [np.int64(0), np.int64(1), np.int64(2)]
        """
        return NumpyIterator(self)

    @property
    def element_spec(self) -> Any:
        spec = getattr(self, "_spec_cache", None)
        if spec is None:
            spec = self._element_spec()
            self._spec_cache = spec
        return spec

    def fingerprint(self) -> Tensor:
        """A uint64 scalar hashing what determines the elements (see `data/fingerprint.py`):
        equal fingerprints mean equal elements, for deterministic functions and unchanged files.

        >>> import layerflow as tf
        >>> a = tf.data.Dataset.range(5).map(lambda x: x + 1).fingerprint()
        >>> b = tf.data.Dataset.range(5).map(lambda x: x + 1).fingerprint()
        >>> a.dtype, bool(a == b), bool(a == tf.data.Dataset.range(6).fingerprint())
        (tf.uint64, True, False)
        """
        from layerflow._src.ops.array_ops import constant

        return constant(np.uint64(fingerprint.fingerprint(self, Dataset)))

    def cardinality(self) -> Tensor:
        """The number of elements as an int64 scalar: -1 if infinite, -2 if unknown.

        >>> import layerflow as tf
        >>> int(tf.data.Dataset.range(10).batch(3).cardinality())
        4
        """
        from layerflow._src.ops.array_ops import constant

        return constant(self._cardinality(), dtype="int64")

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError(
                "The dataset length is unknown (it has a filter, an unbatch or a generator). "
                "Iterate over it to count, or use dataset.cardinality()."
            )
        return n

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        try:
            spec = self.element_spec
        except (ValueError, errors.OpError, TypeError):
            spec = "unknown"
        return f"<{type(self).__name__} element_spec={spec}>"

    # -- sources -------------------------------------------------------------------------------

    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> Dataset:
        """One element per row (first axis) of `tensors`: a tensor, an array, a list, or a
        tuple/dict of them with the same first dimension.

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2], [3.0, 4.0]))
        >>> [(int(a), float(b)) for a, b in ds]
        [(1, 3.0), (2, 4.0)]
        """
        from layerflow._src.data import ragged_batching, sparse_elements

        if sparse_elements.has_sparse(tensors):  # a SparseTensor's rows
            return sparse_elements.SparseSliceDataset(tensors)
        if ragged_batching.has_ragged(tensors):  # a RaggedTensor's rows
            return ragged_batching.RaggedSliceDataset(tensors)
        return sources.TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> Dataset:
        """A dataset of exactly one element, `tensors`.

        >>> import layerflow as tf
        >>> [t.shape for t in tf.data.Dataset.from_tensors([1, 2, 3])]
        [TensorShape([3])]
        """
        return sources.TensorDataset(tensors)

    @staticmethod
    def range(*args: Any, output_type: Any = "int64", name: str | None = None) -> Dataset:
        """Like Python's `range`, yielding int64 scalars.

        >>> import layerflow as tf
        >>> [int(x) for x in tf.data.Dataset.range(1, 8, 3)]
        [1, 4, 7]
        """
        return sources.RangeDataset(args, dtypes.as_dtype(output_type))

    @staticmethod
    def zip(*datasets: Any, name: str | None = None) -> Dataset:
        """Elements of several datasets side by side, as a tuple (or the dict/tuple structure
        of `datasets`); stops with the shortest.

        >>> import layerflow as tf
        >>> a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 13)
        >>> [(int(x), int(y)) for x, y in tf.data.Dataset.zip((a, b))]
        [(0, 10), (1, 11), (2, 12)]
        """
        if len(datasets) == 1 and not isinstance(datasets[0], Dataset):
            datasets = datasets[0]
        return sources.ZipDataset(datasets)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any = None,
                       output_shapes: Any = None, args: Any = None, output_signature: Any = None,
                       name: str | None = None) -> Dataset:  # fmt: skip
        """Elements produced by calling `generator(*args)` anew for each pass.

        >>> import layerflow as tf
        >>> def gen():
        ...     yield from range(3)
        >>> ds = tf.data.Dataset.from_generator(gen, output_types=tf.int32, output_shapes=())
        >>> [int(x) for x in ds]
        [0, 1, 2]
        """
        return sources.GeneratorDataset(generator, args, output_types, output_shapes,
                                        output_signature)  # fmt: skip

    # -- transformations -----------------------------------------------------------------------

    def batch(self, batch_size: Any, drop_remainder: bool = False, num_parallel_calls: Any = None,
              deterministic: Any = None, name: str | None = None) -> Dataset:  # fmt: skip
        """Stack consecutive elements into batches of `batch_size` (the last one may be smaller
        unless `drop_remainder=True`).

        >>> import layerflow as tf
        >>> [b.tolist() for b in tf.data.Dataset.range(5).batch(2).as_numpy_iterator()]
        [[0, 1], [2, 3], [4]]
        """
        return batching.BatchDataset(self, count_arg(batch_size, "batch_size", 1),
                                       bool(drop_remainder))  # fmt: skip

    def padded_batch(self, batch_size: Any, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False, name: str | None = None) -> Dataset:  # fmt: skip
        """Batch elements of different shapes, padding each to the longest in its batch (or to
        `padded_shapes`, where None/-1 means the longest) with `padding_values` (default 0).

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([n], n)).padded_batch(2)
        >>> [b.tolist() for b in ds.as_numpy_iterator()]
        [[[1, 0], [2, 2]], [[3, 3, 3]]]
        """
        size = count_arg(batch_size, "batch_size", 1)
        return batching.PaddedBatchDataset(self, size, bool(drop_remainder), padded_shapes,
                                             padding_values)  # fmt: skip

    def unbatch(self, name: str | None = None) -> Dataset:
        """Split each element along its first axis into separate elements (undoes `batch`)."""
        return batching.UnbatchDataset(self)

    def shuffle(self, buffer_size: Any, seed: Any = None, reshuffle_each_iteration: Any = None,
                name: str | None = None) -> Dataset:  # fmt: skip
        """Randomly shuffle with TF's buffer: fill a buffer of `buffer_size` elements, emit a
        random one, replace it with the next input. A buffer as large as the dataset gives a
        uniform shuffle; `reshuffle_each_iteration` (default True) draws a new order per pass.

        >>> import layerflow as tf
        >>> sorted(int(x) for x in tf.data.Dataset.range(5).shuffle(5, seed=1))
        [0, 1, 2, 3, 4]
        """
        size = count_arg(buffer_size, "buffer_size", 1)
        if seed is not None:
            seed = count_arg(seed, "seed", -(2**63))
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return transforms.ShuffleDataset(self, size, seed, reshuffle)

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None,
            deterministic: Any = None, name: str | None = None) -> Dataset:  # fmt: skip
        """Apply `map_func` to every element; a tuple element is passed as separate arguments.

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2], [10, 20])).map(lambda x, y: x + y)
        >>> [int(v) for v in ds]
        [11, 22]
        """
        if not callable(map_func):
            raise TypeError(f"map_func must be callable, got {map_func!r}.")
        return transforms.MapDataset(self, map_func)

    def filter(self, predicate: Callable[..., Any], name: str | None = None) -> Dataset:
        """Keep the elements for which `predicate` returns a scalar True (a bool tensor).

        >>> import layerflow as tf
        >>> [int(x) for x in tf.data.Dataset.range(6).filter(lambda x: x % 2 == 0)]
        [0, 2, 4]
        """
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, got {predicate!r}.")
        return transforms.FilterDataset(self, predicate)

    def take(self, count: Any, name: str | None = None) -> Dataset:
        """The first `count` elements (all of them when `count` is -1)."""
        return transforms.TakeDataset(self, count_arg(count, "count", -1))

    def skip(self, count: Any, name: str | None = None) -> Dataset:
        """All but the first `count` elements (-1 skips everything)."""
        return transforms.SkipDataset(self, count_arg(count, "count", -1))

    def repeat(self, count: Any = None, name: str | None = None) -> Dataset:
        """Repeat the dataset `count` times (forever when None or -1).

        >>> import layerflow as tf
        >>> [int(x) for x in tf.data.Dataset.range(2).repeat(2)]
        [0, 1, 0, 1]
        """
        n = -1 if count is None else count_arg(count, "count", -1)
        return transforms.RepeatDataset(self, n)

    def prefetch(self, buffer_size: Any, name: str | None = None) -> Dataset:
        """Accepted for compatibility: elements are produced on demand in the caller's thread,
        which for in-memory NumPy pipelines is faster than a background thread would be."""
        if buffer_size is not None:
            count_arg(buffer_size, "buffer_size", -1)
        return transforms.PrefetchDataset(self)

    def cache(self, filename: str = "", name: str | None = None) -> Dataset:
        """Keep the elements of the first complete pass (in memory, or in `filename`) and
        replay them on later passes instead of recomputing the input."""
        return transforms.CacheDataset(self, str(filename))

    def enumerate(self, start: Any = 0, name: str | None = None) -> Dataset:
        """Pair each element with its int64 index: `(i, element)`.

        >>> import layerflow as tf
        >>> [(int(i), int(x)) for i, x in tf.data.Dataset.range(5, 7).enumerate()]
        [(0, 5), (1, 6)]
        """
        return transforms.EnumerateDataset(self, count_arg(start, "start", -(2**63)))

    def concatenate(self, dataset: Dataset, name: str | None = None) -> Dataset:
        """This dataset's elements followed by `dataset`'s (same structure and dtypes)."""
        return sources.ConcatenateDataset(self, dataset)

    def shard(self, num_shards: Any, index: Any, name: str | None = None) -> Dataset:
        """Every `num_shards`-th element starting at `index`."""
        n = count_arg(num_shards, "num_shards", 1)
        i = count_arg(index, "index", 0)
        if i >= n:
            raise errors.InvalidArgumentError(
                None, None, f"shard: index must be below num_shards ({n}), got {i}."
            )
        return transforms.ShardDataset(self, n, i)

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """`transformation_func(self)`, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(
                f"apply: the transformation must return a Dataset, got {type(out).__name__}."
            )
        return out

    def reduce(self, initial_state: Any, reduce_func: Callable[[Any, Any], Any]) -> Any:
        """Fold the elements into a state: `state = reduce_func(state, element)`.

        >>> import layerflow as tf
        >>> int(tf.data.Dataset.range(5).reduce(tf.constant(0, tf.int64), lambda s, x: s + x))
        10
        """
        state = structure.normalize(initial_state)
        for element in self._elements():
            state = structure.normalize_output(reduce_func(state, element))
        return state


# The node modules subclass Dataset: the import cycle of the module docstring.
from layerflow._src.data import batching, sources, transforms, transforms_extra  # noqa: E402, F401
