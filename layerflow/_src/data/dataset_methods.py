"""The rest of `tf.data.Dataset`'s methods (a base class of `Dataset`): ragged_batch,
sparse_batch, interleave, flat_map, scan, window, group_by_window, bucket_by_sequence_length,
take_while, unique, rejection_resample, get_single_element, ignore_errors, rebatch,
options/with_options, save/load/snapshot, sample_from_datasets, choose_from_datasets, counter,
random.

Import cycle, on purpose (the one `dataset` describes, extended): `Dataset` subclasses this
class, and its methods construct nodes of `transforms_extra`, `persistence`, `resample`,
`records`, `transforms`, `batching`, `composite_batching` and `sources`, which subclass
`Dataset`. Those modules are imported inside the methods, when `dataset` is complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import TensorLike


def _count(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, TensorLike):
        value = value.numpy()
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{what} must be an integer, got {value!r} ({type(value).__name__}).")
    if int(value) < minimum:
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be at least {minimum}, got {int(value)}."
        )
    return int(value)


class NumpyIterator:
    """What `as_numpy_iterator()` returns: an iterator of NumPy values (`tf.data.NumpyIterator`).

    >>> import layerflow as tf
    >>> it = tf.data.Dataset.range(2).as_numpy_iterator()
    >>> next(it), next(it)
    (np.int64(0), np.int64(1))
    """

    def __init__(self, dataset: Any) -> None:
        from layerflow._src.data import structure

        self._to_numpy = structure.to_numpy
        self._it = dataset._elements()

    def __iter__(self) -> NumpyIterator:
        return self

    def __next__(self) -> Any:
        return self._to_numpy(next(self._it))

    def next(self) -> Any:
        return self.__next__()

    def __repr__(self) -> str:
        return "NumpyIterator(iterator=<layerflow dataset iterator>)"


class DatasetMethods:
    """Methods of `tf.data.Dataset` (see the module docstring)."""

    # -- mapping to datasets -------------------------------------------------------------------

    def ragged_batch(self, batch_size: Any, drop_remainder: bool = False,
                     row_splits_dtype: Any = "int64", name: str | None = None) -> Any:  # fmt: skip
        """Batch elements of different shapes into RaggedTensors (see `composite_batching.py`).

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(1, 4).map(lambda n: tf.range(n)).ragged_batch(2)
        >>> [b.to_list() for b in ds]
        [[[0], [0, 1]], [[0, 1, 2]]]
        """
        from layerflow._src.data import composite_batching

        size = _count(batch_size, "batch_size", 1)
        return composite_batching.RaggedBatchDataset(
            self, size, bool(drop_remainder), composite_batching.splits_dtype_arg(row_splits_dtype)
        )

    def sparse_batch(self, batch_size: Any, row_shape: Any, name: str | None = None) -> Any:
        """Batch tensors of one rank, each no larger than `row_shape`, into SparseTensors of
        dense shape [batch, *row_shape] (see `composite_batching.py`).

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(1, 3).map(lambda n: tf.fill([n], n)).sparse_batch(2, [3])
        >>> tf.sparse.to_dense(next(iter(ds))).numpy().tolist()
        [[1, 0, 0], [2, 2, 0]]
        """
        from layerflow._src.data import composite_batching

        size = _count(batch_size, "batch_size", 1)
        return composite_batching.SparseBatchDataset(
            self, size, composite_batching.row_shape_arg(row_shape)
        )

    def interleave(self, map_func: Callable, cycle_length: Any = None, block_length: Any = None,
                   num_parallel_calls: Any = None, deterministic: Any = None,
                   name: str | None = None) -> Any:  # fmt: skip
        """Map each element to a dataset and interleave them: `cycle_length` at a time (default:
        the number of CPU cores, as in TF), `block_length` (default 1) consecutive elements
        from each in turn, in TF's deterministic order.

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(1, 4).interleave(
        ...     lambda x: tf.data.Dataset.from_tensors(x).repeat(2), cycle_length=2)
        >>> [int(v) for v in ds]
        [1, 2, 1, 2, 3, 3]
        """
        from layerflow._src.data import transforms_extra as te

        if not callable(map_func):
            raise TypeError(f"interleave: map_func must be callable, got {map_func!r}.")
        if cycle_length is None or (not isinstance(cycle_length, TensorLike)
                                    and cycle_length == -1):  # fmt: skip
            cycle = te.default_cycle_length()
        else:
            cycle = _count(cycle_length, "cycle_length", 1)
        block = 1 if block_length is None else _count(block_length, "block_length", 1)
        return te.InterleaveDataset(self, map_func, cycle, block)

    def flat_map(self, map_func: Callable, name: str | None = None) -> Any:
        """Map each element to a dataset and concatenate them in order.

        >>> import layerflow as tf
        >>> [int(v) for v in tf.data.Dataset.range(1, 4).flat_map(tf.data.Dataset.range)]
        [0, 0, 1, 0, 1, 2]
        """
        from layerflow._src.data import transforms_extra as te

        if not callable(map_func):
            raise TypeError(f"flat_map: map_func must be callable, got {map_func!r}.")
        return te.InterleaveDataset(self, map_func, 1, 1)

    def scan(self, initial_state: Any, scan_func: Callable, name: str | None = None) -> Any:
        """Carry a state through the elements: `(state, out) = scan_func(state, element)`.

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(5).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s))
        >>> [int(v) for v in ds]
        [0, 0, 1, 3, 6]
        """
        from layerflow._src.data import transforms_extra as te

        return te.ScanDataset(self, initial_state, scan_func)

    # -- windows and groups --------------------------------------------------------------------

    def window(self, size: Any, shift: Any = None, stride: Any = 1, drop_remainder: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
        """Windows of `size` elements (every `stride`-th), starting every `shift` (default
        `size`) elements; each window is a dataset (per component, in the element's
        structure). Without `drop_remainder` the last windows may be shorter.

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(7).window(3, shift=2, stride=2)
        >>> [[int(v) for v in w] for w in ds]
        [[0, 2, 4], [2, 4, 6], [4, 6], [6]]
        """
        from layerflow._src.data import transforms_extra as te

        size = _count(size, "size", 1)
        shift = size if shift is None else _count(shift, "shift", 1)
        stride = _count(stride, "stride", 1)
        return te.WindowDataset(self, size, shift, stride, bool(drop_remainder))

    def group_by_window(self, key_func: Callable, reduce_func: Callable, window_size: Any = None,
                        window_size_func: Any = None, name: str | None = None) -> Any:  # fmt: skip
        """Group elements by `key_func` (an int64 scalar); each group of `window_size` (or
        `window_size_func(key)`) elements becomes `reduce_func(key, window_dataset)`; the
        groups left at the end follow in ascending key order.

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(6).group_by_window(
        ...     lambda x: x % 2, lambda k, d: d.batch(3), window_size=3)
        >>> [b.tolist() for b in ds.as_numpy_iterator()]
        [[0, 2, 4], [1, 3, 5]]
        """
        from layerflow._src.data import transforms_extra as te

        if (window_size is None) == (window_size_func is None):
            raise ValueError(
                "group_by_window: set exactly one of window_size and window_size_func."
            )
        if window_size is not None:
            size = _count(window_size, "window_size", 1)

            def window_size_func(key: Any) -> Any:
                return np.int64(size)

        return te.GroupByWindowDataset(self, key_func, reduce_func, window_size_func)

    def bucket_by_sequence_length(self, element_length_func: Callable, bucket_boundaries: Any,
                                  bucket_batch_sizes: Any, padded_shapes: Any = None,
                                  padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                                  no_padding: bool = False, drop_remainder: bool = False,
                                  name: str | None = None) -> Any:  # fmt: skip
        """Batch elements of similar length: bucket i holds lengths in [b[i-1], b[i]) and is
        batched `bucket_batch_sizes[i]` at a time, padded to the longest in the batch (or to
        the bucket boundary - 1 with `pad_to_bucket_boundary`).

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.from_generator(lambda: ([1] * n for n in [1, 3, 2, 5]),
        ...     output_signature=tf.TensorSpec([None], tf.int32))
        >>> ds = ds.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3], [2, 2])
        >>> [b.tolist() for b in ds.as_numpy_iterator()]
        [[[1, 0], [1, 1]], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]]
        """
        boundaries = [int(b) for b in np.asarray(bucket_boundaries).reshape(-1)]
        sizes = [int(b) for b in np.asarray(bucket_batch_sizes).reshape(-1)]
        if len(sizes) != len(boundaries) + 1:
            raise ValueError(
                f"bucket_by_sequence_length: len(bucket_batch_sizes) must equal "
                f"len(bucket_boundaries) + 1, got {len(sizes)} and {len(boundaries)}."
            )
        if any(b >= a for b, a in zip(boundaries, boundaries[1:])) or any(s < 1 for s in sizes):
            raise ValueError(
                "bucket_by_sequence_length: bucket_boundaries must increase and every batch "
                f"size be >= 1, got {boundaries} and {sizes}."
            )
        edges = np.asarray(boundaries, np.int64)

        def key_func(*element: Any) -> Any:
            length = element_length_func(*element)
            n = int(np.asarray(length.numpy() if isinstance(length, TensorLike) else length))
            if pad_to_bucket_boundary and boundaries and n >= boundaries[-1]:
                raise errors.InvalidArgumentError(
                    None, None,
                    "When pad_to_bucket_boundary=True, elements must have length < "
                    f"max(bucket_boundaries) = {boundaries[-1]}; got {n}.",
                )  # fmt: skip
            return np.int64(np.searchsorted(edges, n, side="right"))

        def reduce_func(key: Any, window: Any) -> Any:
            k = int(key.numpy())
            if no_padding:
                return window.batch(sizes[k], drop_remainder=drop_remainder)
            shapes = padded_shapes
            if pad_to_bucket_boundary:
                from layerflow._src.utils import nest

                bound = boundaries[k] - 1 if k < len(boundaries) else None
                shapes = nest.map_structure(
                    lambda s: [bound] + [None] * (len(s.shape) - 1), window.element_spec
                )
            return window.padded_batch(sizes[k], shapes, padding_values,
                                       drop_remainder=drop_remainder)  # fmt: skip

        def size_func(key: Any) -> Any:
            return np.int64(sizes[int(key.numpy())])

        return self.group_by_window(key_func, reduce_func, window_size_func=size_func)

    # -- element-wise selection ----------------------------------------------------------------

    def take_while(self, predicate: Callable, name: str | None = None) -> Any:
        """The elements up to (not including) the first for which `predicate` is False.

        >>> import layerflow as tf
        >>> [int(v) for v in tf.data.Dataset.range(10).take_while(lambda x: x < 4)]
        [0, 1, 2, 3]
        """
        from layerflow._src.data import transforms_extra as te

        return te.TakeWhileDataset(self, predicate)

    def unique(self, name: str | None = None) -> Any:
        """Each distinct element once, in order of first appearance (int32/int64/string
        scalars, as in TF).

        >>> import layerflow as tf
        >>> [int(v) for v in tf.data.Dataset.from_tensor_slices([1, 3, 1, 2, 3]).unique()]
        [1, 3, 2]
        """
        from layerflow._src.data import transforms_extra as te

        return te.UniqueDataset(self)

    def ignore_errors(self, log_warning: bool = False, name: str | None = None) -> Any:
        """Drop the elements whose map/filter step raised a tf.errors error.

        >>> import layerflow as tf
        >>> def check(x):
        ...     tf.debugging.assert_greater(x, 0.0)
        ...     return 1.0 / x
        >>> ds = tf.data.Dataset.from_tensor_slices([1.0, 0.0, 2.0]).map(check).ignore_errors()
        >>> [float(v) for v in ds]
        [1.0, 0.5]
        """
        from layerflow._src.data import transforms_extra as te

        return te.IgnoreErrorsDataset(self, bool(log_warning))

    def rebatch(self, batch_size: Any, drop_remainder: bool = False,
                name: str | None = None) -> Any:  # fmt: skip
        """Re-cut batched elements into batches of `batch_size` (a list: the sizes in turn).

        >>> import layerflow as tf
        >>> ds = tf.data.Dataset.range(8).batch(4).rebatch(3)
        >>> [b.tolist() for b in ds.as_numpy_iterator()]
        [[0, 1, 2], [3, 4, 5], [6, 7]]
        """
        from layerflow._src.data import transforms_extra as te

        raw = batch_size.numpy() if isinstance(batch_size, TensorLike) else batch_size
        sizes = [_count(int(s), "batch_size", 1) for s in np.asarray(raw).reshape(-1)]
        if not sizes:
            raise ValueError("rebatch: batch_size must not be empty.")
        return te.RebatchDataset(self, sizes, bool(drop_remainder))

    def get_single_element(self, name: str | None = None) -> Any:
        """The dataset's only element; InvalidArgumentError if it has none or several.

        >>> import layerflow as tf
        >>> int(tf.data.Dataset.range(1).get_single_element())
        0
        """
        it: Iterator[Any] = self._elements()
        first = next(it, _NONE)
        if first is _NONE:
            raise errors.InvalidArgumentError(None, None, "Dataset was empty.")
        if next(it, _NONE) is not _NONE:
            raise errors.InvalidArgumentError(None, None, "Dataset had more than one element.")
        return first

    def rejection_resample(self, class_func: Callable, target_dist: Any, initial_dist: Any = None,
                           seed: Any = None, name: str | None = None) -> Any:  # fmt: skip
        """Resample to the class distribution `target_dist`, yielding `(class, element)` pairs
        (TF's algorithm: keep each element with an acceptance probability, mixed with the
        original stream; `initial_dist`, when not given, is estimated from the classes seen).
        """
        from layerflow._src.data import transforms_extra as te
        from layerflow._src.data.resample import rejection_resample

        return rejection_resample(self, te, class_func, target_dist, initial_dist, seed)

    # -- options -------------------------------------------------------------------------------

    def options(self) -> Any:
        """The merged `tf.data.Options` of this dataset and its inputs."""
        from layerflow._src.data.options import options_of

        return options_of(self)

    def with_options(self, options: Any, name: str | None = None) -> Any:
        """This dataset with `options` merged in (later settings win)."""
        from layerflow._src.data import transforms
        from layerflow._src.data.options import Options

        if not isinstance(options, Options):
            raise TypeError(f"with_options takes a tf.data.Options, got {type(options).__name__}.")
        out = transforms.PrefetchDataset(self)  # a pass-through node that carries the options
        out._own_options = options
        return out

    # -- files ---------------------------------------------------------------------------------

    def save(self, path: Any, compression: Any = None, shard_func: Any = None,
             checkpoint_args: Any = None) -> None:  # fmt: skip
        """Write the dataset to the folder `path` (safetensors shards + a JSON spec, no
        pickle); `Dataset.load(path)` reads it back."""
        from layerflow._src.data import persistence

        persistence.save(self, path, compression, shard_func, checkpoint_args)

    @staticmethod
    def load(path: Any, element_spec: Any = None, compression: Any = None,
             reader_func: Any = None) -> Any:  # fmt: skip
        """A dataset saved by `Dataset.save` (validated as untrusted input)."""
        from layerflow._src.data import persistence

        return persistence.load(path, element_spec, compression, reader_func)

    def snapshot(self, path: Any, compression: Any = "AUTO", reader_func: Any = None,
                 shard_func: Any = None, name: str | None = None) -> Any:  # fmt: skip
        """Cache-to-path: the first complete pass saves the dataset to `path` (as `save`
        does); every later pass, in this program or another, reads it back from there."""
        from layerflow._src.data import persistence

        return persistence.SnapshotDataset(self, str(path), shard_func)

    # -- several datasets ----------------------------------------------------------------------

    @staticmethod
    def sample_from_datasets(datasets: Any, weights: Any = None, seed: Any = None,
                             stop_on_empty_dataset: bool = False,
                             rerandomize_each_iteration: Any = None) -> Any:  # fmt: skip
        """Each element from a dataset drawn at random with `weights` (default uniform);
        an exhausted dataset drops out (or, with `stop_on_empty_dataset`, ends the result).
        Reproducible for a given seed (not TF's random stream).
        """
        from layerflow._src.data import transforms_extra as te
        from layerflow._src.data.dataset import Dataset

        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError("sample_from_datasets takes a non-empty list of datasets.")
        if weights is None:
            weights = np.full(len(datasets), 1.0 / len(datasets))
        elif not isinstance(weights, Dataset):
            w = np.asarray(weights.numpy() if isinstance(weights, TensorLike) else weights,
                           np.float64).reshape(-1)  # fmt: skip
            if w.size != len(datasets) or (w < 0).any():
                raise ValueError(
                    f"sample_from_datasets: weights must be {len(datasets)} non-negative "
                    f"numbers (one per dataset), got {w.tolist()}."
                )
            weights = w
        _same_spec(datasets, "sample_from_datasets")
        reshuffle = True if rerandomize_each_iteration is None else bool(
            rerandomize_each_iteration
        )  # fmt: skip
        return te.SampleDataset(datasets, weights, seed, bool(stop_on_empty_dataset), reshuffle)

    @staticmethod
    def choose_from_datasets(datasets: Any, choice_dataset: Any,
                             stop_on_empty_dataset: bool = True) -> Any:  # fmt: skip
        """Elements taken from `datasets[i]` for each `i` of `choice_dataset` (int64 scalars).

        >>> import layerflow as tf
        >>> D = tf.data.Dataset
        >>> choice = D.from_tensor_slices(tf.constant([0, 1, 1, 0], tf.int64))
        >>> [int(v) for v in D.choose_from_datasets([D.range(3), D.range(10, 13)], choice)]
        [0, 10, 11, 1]
        """
        from layerflow._src.data import transforms_extra as te
        from layerflow._src.data.dataset import Dataset

        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError("choose_from_datasets takes a non-empty list of datasets.")
        spec = choice_dataset.element_spec
        if getattr(spec, "dtype", None) != dtypes.int64 or len(spec.shape) != 0:
            raise TypeError(
                f"choose_from_datasets: choice_dataset must hold tf.int64 scalars, got {spec}."
            )
        _same_spec(datasets, "choose_from_datasets")
        return te.ChooseDataset(datasets, choice_dataset, bool(stop_on_empty_dataset))

    @staticmethod
    def list_files(file_pattern: Any, shuffle: Any = None, seed: Any = None,
                   name: str | None = None) -> Any:  # fmt: skip
        """The files matching glob pattern(s), shuffled unless `shuffle=False` (then sorted).
        No match raises InvalidArgumentError, as TF does."""
        from layerflow._src.data.records import list_files

        return list_files(file_pattern, shuffle, seed)

    @staticmethod
    def counter(start: Any = 0, step: Any = 1, dtype: Any = "int64",
                name: str | None = None) -> Any:  # fmt: skip
        """start, start + step, ... forever.

        >>> import layerflow as tf
        >>> [int(v) for v in tf.data.Dataset.counter(2, 3).take(3)]
        [2, 5, 8]
        """
        from layerflow._src.data import transforms_extra as te

        return te.CounterDataset(start, step, dtype)

    @staticmethod
    def random(seed: Any = None, rerandomize_each_iteration: Any = None,
               name: str | None = None) -> Any:  # fmt: skip
        """Random int64 values in [0, 2**32), forever; the same sequence for the same seed."""
        from layerflow._src.data import transforms_extra as te

        return te.RandomDataset(seed, bool(rerandomize_each_iteration))


_NONE = object()


def _same_spec(datasets: list, opname: str) -> None:
    from layerflow._src.utils import nest

    first = datasets[0].element_spec
    for d in datasets[1:]:
        other = d.element_spec
        try:
            nest.assert_same_structure(first, other, check_types=False)
            ok = all(a.dtype == b.dtype for a, b in zip(nest.flatten(first), nest.flatten(other)))
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise TypeError(
                f"{opname}: the datasets must have the same element structure and dtypes, got "
                f"{first} and {other}."
            )


__all__ = ["DatasetMethods", "NumpyIterator"]
