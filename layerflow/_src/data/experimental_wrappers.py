"""`tf.data.experimental`'s older spellings of `Dataset` methods: each returns the
transformation `fn(dataset) -> dataset` for `dataset.apply(...)` and runs the method, with TF's
experimental defaults where they differ (`choose_from_datasets` goes on past an empty input).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.data.dataset import Dataset


def _checked(name: str, fn: Callable[[Dataset], Dataset]) -> Callable[[Dataset], Dataset]:
    def apply(dataset: Any) -> Dataset:
        if not isinstance(dataset, Dataset):
            raise TypeError(
                f"tf.data.experimental.{name}(...) is applied to a tf.data.Dataset "
                f"(dataset.apply(...)), got {type(dataset).__name__}."
            )
        return fn(dataset)

    apply.__name__ = name
    return apply


def bucket_by_sequence_length(element_length_func: Callable, bucket_boundaries: Any,
                              bucket_batch_sizes: Any, padded_shapes: Any = None,
                              padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                              no_padding: bool = False,
                              drop_remainder: bool = False) -> Callable:  # fmt: skip
    """`Dataset.bucket_by_sequence_length` as a transformation."""
    return _checked("bucket_by_sequence_length", lambda d: d.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder))  # fmt: skip


def choose_from_datasets(datasets: Any, choice_dataset: Any,
                         stop_on_empty_dataset: bool = False) -> Dataset:  # fmt: skip
    """`Dataset.choose_from_datasets`, with TF's experimental default: an exhausted input is
    skipped instead of ending the result.

    >>> import layerflow as tf
    >>> D = tf.data.Dataset
    >>> choice = D.from_tensor_slices(tf.constant([0, 0, 1, 0], tf.int64))
    >>> [int(v) for v in tf.data.experimental.choose_from_datasets([D.range(1), D.range(5, 6)],
    ...                                                              choice)]
    [0, 5]
    """
    return Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


def sample_from_datasets(datasets: Any, weights: Any = None, seed: Any = None,
                         stop_on_empty_dataset: bool = False) -> Dataset:  # fmt: skip
    """`Dataset.sample_from_datasets`."""
    return Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def dense_to_ragged_batch(batch_size: Any, drop_remainder: bool = False,
                          row_splits_dtype: Any = "int64") -> Callable:  # fmt: skip
    """`Dataset.ragged_batch` as a transformation."""
    return _checked(
        "dense_to_ragged_batch",
        lambda d: d.ragged_batch(batch_size, drop_remainder, row_splits_dtype),
    )


def enumerate_dataset(start: Any = 0) -> Callable:
    """`Dataset.enumerate` as a transformation: `(index, element)` pairs."""
    return _checked("enumerate_dataset", lambda d: d.enumerate(start))


def get_single_element(dataset: Any) -> Any:
    """`dataset.get_single_element()`."""
    if not isinstance(dataset, Dataset):
        raise TypeError(
            f"get_single_element takes a tf.data.Dataset, got {type(dataset).__name__}."
        )
    return dataset.get_single_element()


def group_by_window(key_func: Callable, reduce_func: Callable, window_size: Any = None,
                    window_size_func: Any = None) -> Callable:  # fmt: skip
    """`Dataset.group_by_window` as a transformation."""
    if (window_size is None) == (window_size_func is None):
        raise ValueError("group_by_window: set exactly one of window_size and window_size_func.")
    return _checked("group_by_window", lambda d: d.group_by_window(
        key_func, reduce_func, window_size, window_size_func))  # fmt: skip


def ignore_errors(log_warning: bool = False) -> Callable:
    """`Dataset.ignore_errors` as a transformation."""
    return _checked("ignore_errors", lambda d: d.ignore_errors(log_warning))


def map_and_batch(map_func: Callable, batch_size: Any, num_parallel_batches: Any = None,
                  drop_remainder: bool = False,
                  num_parallel_calls: Any = None) -> Callable:  # fmt: skip
    """`map(map_func)` followed by `batch(batch_size, drop_remainder)`.

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.range(5).apply(tf.data.experimental.map_and_batch(lambda x: 2 * x, 2))
    >>> [b.tolist() for b in ds.as_numpy_iterator()]
    [[0, 2], [4, 6], [8]]
    """
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError(
            "map_and_batch: set at most one of num_parallel_batches and num_parallel_calls."
        )
    if not callable(map_func):
        raise TypeError(f"map_and_batch: map_func must be callable, got {map_func!r}.")
    return _checked("map_and_batch", lambda d: d.map(map_func).batch(batch_size, drop_remainder))


def parallel_interleave(map_func: Callable, cycle_length: Any, block_length: Any = 1,
                        sloppy: bool = False, buffer_output_elements: Any = None,
                        prefetch_input_elements: Any = None) -> Callable:  # fmt: skip
    """`Dataset.interleave` as a transformation (always in the deterministic order, which is
    one of the orders `sloppy=True` allows)."""
    return _checked(
        "parallel_interleave", lambda d: d.interleave(map_func, cycle_length, block_length)
    )


def rejection_resample(class_func: Callable, target_dist: Any, initial_dist: Any = None,
                       seed: Any = None) -> Callable:  # fmt: skip
    """`Dataset.rejection_resample` as a transformation: `(class, element)` pairs."""
    return _checked("rejection_resample", lambda d: d.rejection_resample(
        class_func, target_dist, initial_dist, seed))  # fmt: skip


def scan(initial_state: Any, scan_func: Callable) -> Callable:
    """`Dataset.scan` as a transformation."""
    return _checked("scan", lambda d: d.scan(initial_state, scan_func))


def shuffle_and_repeat(buffer_size: Any, count: Any = None, seed: Any = None) -> Callable:
    """`shuffle(buffer_size, seed)` then `repeat(count)`: a new order on every pass.

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.range(3).apply(tf.data.experimental.shuffle_and_repeat(3, 2))
    >>> sorted(int(v) for v in ds)
    [0, 0, 1, 1, 2, 2]
    """
    return _checked("shuffle_and_repeat", lambda d: d.shuffle(buffer_size, seed).repeat(count))


def take_while(predicate: Callable) -> Callable:
    """`Dataset.take_while` as a transformation."""
    return _checked("take_while", lambda d: d.take_while(predicate))


def unbatch() -> Callable:
    """`Dataset.unbatch` as a transformation."""
    return _checked("unbatch", lambda d: d.unbatch())


def unique() -> Callable:
    """`Dataset.unique` as a transformation."""
    return _checked("unique", lambda d: d.unique())


def save(dataset: Any, path: Any, compression: Any = None, shard_func: Any = None,
         checkpoint_args: Any = None) -> None:  # fmt: skip
    """`dataset.save(path)`: the folder `Dataset.load(path)` reads."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"save takes a tf.data.Dataset, got {type(dataset).__name__}.")
    dataset.save(path, compression, shard_func, checkpoint_args)


def snapshot(path: Any, compression: Any = "AUTO", reader_func: Any = None,
             shard_func: Any = None) -> Callable:  # fmt: skip
    """`Dataset.snapshot` as a transformation: the first complete pass is written to `path`,
    later passes read it from there."""
    return _checked("snapshot", lambda d: d.snapshot(path, compression, reader_func, shard_func))


_debug_mode = [False]


def enable_debug_mode() -> None:
    """TF's tf.data debug mode runs the functions of `map`, `filter`, ... eagerly, in order.
    layerflow's input pipelines always do (user functions run as Python, one element at a
    time, in the caller's thread), so this records that the mode was asked for and changes
    nothing else."""
    _debug_mode[0] = True


def debug_mode_enabled() -> bool:
    return _debug_mode[0]


__all__ = [
    "bucket_by_sequence_length", "choose_from_datasets", "dense_to_ragged_batch",
    "enable_debug_mode", "enumerate_dataset", "get_single_element", "group_by_window",
    "ignore_errors", "map_and_batch", "parallel_interleave", "rejection_resample",
    "sample_from_datasets", "save", "scan", "shuffle_and_repeat", "snapshot", "take_while",
    "unbatch", "unique",
]  # fmt: skip
