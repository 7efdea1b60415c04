"""`tf.train.Example` pipelines and record writing of `tf.data.experimental`:
`parse_example_dataset`, `make_batched_features_dataset` and `TFRecordWriter` (a dataset of
scalar strings written to one TFRecord file)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from layerflow._src.data.dataset import Dataset
from layerflow._src.data.records import TFRecordDataset, _filenames, list_files
from layerflow._src.data.records import TFRecordWriter as _RecordFileWriter
from layerflow._src.framework import dtypes
from layerflow._src.ops.example_parsing_ops import parse_example


def _check_serialized(dataset: Any, what: str) -> Dataset:
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{what} is applied to a tf.data.Dataset, got {type(dataset).__name__}.")
    spec = dataset.element_spec
    if getattr(spec, "dtype", None) != dtypes.string:
        raise TypeError(
            f"{what}: the dataset must hold serialized tf.train.Example strings (a vector per "
            f"element, e.g. after batch), got {spec}."
        )
    return dataset


def parse_example_dataset(features: Any, num_parallel_calls: Any = 1,
                          deterministic: Any = None) -> Callable:  # fmt: skip
    """Parse each element (serialized `tf.train.Example`s) with `tf.io.parse_example`."""
    if not isinstance(features, dict) or not features:
        raise ValueError(
            "parse_example_dataset: features must be a non-empty dict of feature name to "
            f"feature spec (tf.io.FixedLenFeature, ...), got {features!r}."
        )

    def apply(dataset: Any) -> Dataset:
        ds = _check_serialized(dataset, "parse_example_dataset")
        return ds.map(lambda serialized: parse_example(serialized, features))

    return apply


def make_batched_features_dataset(file_pattern: Any, batch_size: Any, features: Any,
                                  reader: Any = None, label_key: Any = None,
                                  reader_args: Any = None, num_epochs: Any = None,
                                  shuffle: bool = True, shuffle_buffer_size: int = 10000,
                                  shuffle_seed: Any = None, prefetch_buffer_size: Any = None,
                                  reader_num_threads: Any = None, parser_num_threads: Any = None,
                                  sloppy_ordering: bool = False,
                                  drop_final_batch: bool = False) -> Dataset:  # fmt: skip
    """Batches of parsed `tf.train.Example`s read from the files matching `file_pattern`
    (TF's pipeline: files shuffled, records shuffled, repeated `num_epochs` times (None:
    forever), batched, parsed with `features`, the `label_key` feature split off)."""
    if label_key is not None and label_key not in features:
        raise ValueError(
            f"The `label_key` provided ({label_key}) must be one of the `features` keys: "
            f"{list(features)}."
        )
    reader = TFRecordDataset if reader is None else reader
    args = list(reader_args or [])
    filenames = _filenames(list_files(file_pattern, shuffle=False), "make_batched_features")
    ds = Dataset.from_tensor_slices(filenames)
    if shuffle:
        ds = ds.shuffle(len(filenames), shuffle_seed)
    threads = 1 if reader_num_threads is None else reader_num_threads
    ds = ds.interleave(lambda f: reader(f, *args),
                       cycle_length=threads if threads != -1 else len(filenames))  # fmt: skip
    spec = ds.element_spec
    if isinstance(spec, tuple) and len(spec) == 2 and all(s.dtype == dtypes.string for s in spec):
        ds = ds.map(lambda _, value: value)  # (key, value) readers
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=bool(drop_final_batch) or num_epochs is None)
    ds = ds.apply(parse_example_dataset(features))
    if label_key is not None:

        def split(parsed: Any) -> Any:
            parsed = dict(parsed)
            label = parsed.pop(label_key)
            return parsed, label

        ds = ds.map(split)
    return ds


class TFRecordWriter:
    """Writes a dataset of scalar strings to one TFRecord file
    (`tf.data.experimental.TFRecordWriter`; the file is overwritten).

    >>> import os, tempfile, layerflow as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "r.tfrecord")
    >>> tf.data.experimental.TFRecordWriter(path).write(tf.data.Dataset.from_tensor_slices(
    ...     [b"a", b"b"]))
    >>> [r.numpy() for r in tf.data.TFRecordDataset(path)]
    [b'a', b'b']
    """

    def __init__(self, filename: Any, compression_type: Any = None) -> None:
        if hasattr(filename, "numpy"):
            filename = filename.numpy()
        if isinstance(filename, bytes):
            filename = filename.decode("utf-8")
        self._filename = os.fspath(filename)
        comp = "" if compression_type is None else compression_type
        if comp not in ("", "GZIP", "ZLIB"):
            raise ValueError(
                f"TFRecordWriter: compression_type must be '', 'GZIP' or 'ZLIB', got "
                f"{compression_type!r}."
            )
        self._compression = comp

    def write(self, dataset: Any) -> None:
        """Write every element of `dataset` (scalar tf.string) as one record."""
        if not isinstance(dataset, Dataset):
            raise TypeError(
                f"Invalid `dataset.` Expected a `tf.data.Dataset` object but got "
                f"{type(dataset).__name__}."
            )
        spec = dataset.element_spec
        if getattr(spec, "dtype", None) != dtypes.string or len(spec.shape) != 0:
            raise TypeError(
                "Invalid `dataset`. Expected a `dataset` that produces scalar `tf.string` "
                f"elements, but got a dataset which produces {spec}."
            )
        with _RecordFileWriter(self._filename, self._compression or None) as writer:
            for element in dataset._elements():
                writer.write(element)


__all__ = ["TFRecordWriter", "make_batched_features_dataset", "parse_example_dataset"]
