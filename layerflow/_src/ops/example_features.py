"""The feature configurations of `tf.io.parse_example`: `FixedLenFeature`,
`FixedLenSequenceFeature`, `VarLenFeature`, `SparseFeature` and `RaggedFeature`.

Named tuples with TF's fields, defaults and reprs, so code that builds, compares or unpacks
them works unchanged.

>>> import layerflow as tf
>>> tf.io.FixedLenFeature([3], tf.int64)
FixedLenFeature(shape=[3], dtype=tf.int64, default_value=None)
"""

from __future__ import annotations

import collections
from typing import Any

from layerflow._src.framework import dtypes

_ALLOWED = ("float32", "int64", "string")


def feature_dtype(dtype: Any, what: str) -> dtypes.DType:
    """`dtype` as a DType, which must be one an Example can hold (float32, int64, string)."""
    dt = dtypes.as_dtype(dtype)
    if dt.name not in _ALLOWED:
        raise ValueError(
            f"{what}: dtype must be one of tf.string, tf.int64, or tf.float32 (the types a "
            f"tf.train.Feature holds); got {dt!r}. Parse as one of these and cast with tf.cast."
        )
    return dt


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A variable-length feature, parsed into a `tf.SparseTensor` of `dtype`."""


class FixedLenFeature(
    collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])
):
    """A feature of fixed `shape`, parsed into a dense tensor; `default_value` (of `shape`'s
    size, or None for a required feature) is used where an Example lacks it."""

    def __new__(cls, shape: Any, dtype: Any, default_value: Any = None) -> FixedLenFeature:
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(
    collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"]
    )
):
    """A sequence of items each of `shape`, parsed into a dense tensor `[rows] + shape`
    (batches are padded with the scalar `default_value`)."""

    def __new__(cls, shape: Any, dtype: Any, allow_missing: bool = False,
                default_value: Any = None) -> FixedLenSequenceFeature:  # fmt: skip
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseFeature(
    collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"]
    )
):
    """A sparse feature stored as index feature(s) `index_key` and a value feature
    `value_key`, parsed into a `tf.SparseTensor` of dense shape `size`."""

    def __new__(cls, index_key: Any, value_key: Any, dtype: Any, size: Any,
                already_sorted: bool = False) -> SparseFeature:  # fmt: skip
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


class RaggedFeature(
    collections.namedtuple(
        "RaggedFeature", ["dtype", "value_key", "partitions", "row_splits_dtype", "validate"]
    )
):
    """A feature parsed into a `tf.RaggedTensor`: the values of `value_key` (default: the
    feature's own key), split into rows by `partitions` (outermost first), each one of
    `RowSplits`, `RowLengths`, `RowStarts`, `RowLimits`, `ValueRowIds` (a feature key) or
    `UniformRowLength` (a length). Innermost uniform partitions reshape the values densely.

    Partitions are always validated (a row partition that does not fit the values raises
    `InvalidArgumentError`), whatever `validate` says: the bytes may come from anywhere.
    """

    RowSplits = collections.namedtuple("RowSplits", ["key"])
    RowLengths = collections.namedtuple("RowLengths", ["key"])
    RowStarts = collections.namedtuple("RowStarts", ["key"])
    RowLimits = collections.namedtuple("RowLimits", ["key"])
    ValueRowIds = collections.namedtuple("ValueRowIds", ["key"])
    UniformRowLength = collections.namedtuple("UniformRowLength", ["length"])

    _PARTITION_TYPES = (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds,
                        UniformRowLength)  # fmt: skip

    def __new__(cls, dtype: Any, value_key: Any = None, partitions: Any = (),
                row_splits_dtype: Any = "int32",
                validate: bool = False) -> RaggedFeature:  # fmt: skip
        if value_key is not None and (not isinstance(value_key, str) or not value_key):
            raise ValueError(f"RaggedFeature: value_key must be a non-empty string, got "
                             f"{value_key!r}.")  # fmt: skip
        dt = feature_dtype(dtype, "RaggedFeature")
        splits = dtypes.as_dtype(row_splits_dtype)
        if splits.name not in ("int32", "int64"):
            raise ValueError(f"RaggedFeature: row_splits_dtype must be tf.int32 or tf.int64, "
                             f"got {splits!r}.")  # fmt: skip
        if not isinstance(partitions, list | tuple):
            raise TypeError(f"RaggedFeature: partitions must be a list or tuple, got "
                            f"{type(partitions).__name__}.")  # fmt: skip
        for p in partitions:
            if not isinstance(p, cls._PARTITION_TYPES):
                raise TypeError(
                    "RaggedFeature: each partition must be one of RaggedFeature.RowSplits, "
                    "RowLengths, RowStarts, RowLimits, ValueRowIds or UniformRowLength; got "
                    f"{p!r}."
                )
            if isinstance(p, cls.UniformRowLength):
                if not isinstance(p.length, int) or p.length < 0:
                    raise ValueError(f"RaggedFeature: UniformRowLength needs a non-negative int "
                                     f"length, got {p.length!r}.")  # fmt: skip
            elif not isinstance(p.key, str) or not p.key:
                raise ValueError(f"RaggedFeature: partition {p!r} needs a non-empty string "
                                 "feature key.")  # fmt: skip
        return super().__new__(cls, dt, value_key, tuple(partitions), splits, validate)


FEATURE_TYPES = (VarLenFeature, FixedLenFeature, FixedLenSequenceFeature, SparseFeature,
                 RaggedFeature)  # fmt: skip
