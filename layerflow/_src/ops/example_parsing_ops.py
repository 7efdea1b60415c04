"""`tf.io.parse_example` and `tf.io.parse_single_example`: serialized `tf.train.Example`s to
tensors, as described by a dict of feature configurations (see `example_features`).

The bytes are decoded by protobuf (the `proto` extra); everything that comes out of them is
checked before it is used: a feature's type and size against its configuration, row partitions
against the values they split, sparse indices against their dense shape, and the size of every
padded result before it is allocated. Bad data raises `tf.errors.InvalidArgumentError` naming
the feature (and the example's index in a batch); a bad configuration raises `ValueError`.

>>> import layerflow as tf
>>> ex = tf.train.Example(features=tf.train.Features(feature={
...     "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 2.0]))}))
>>> out = tf.io.parse_single_example(ex.SerializeToString(),
...                                  {"x": tf.io.FixedLenFeature([2], tf.float32)})
>>> out["x"].numpy()
array([1., 2.], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.ops import example_proto
from layerflow._src.ops.example_features import (
    FEATURE_TYPES,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    feature_dtype,
)
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.ops.string_ops import as_tensor, strings_of

# A padded dense result (or a ragged partition) larger than this is refused before it is
# allocated: one Example of a batch must not make the parser allocate for all the others.
MAX_RESULT_BYTES = 1 << 33  # 8 GiB
MAX_PARTITION_ROWS = 1 << 28

_KIND = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}
_TYPE_NAME = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}
_NP = {"float32": np.float32, "int64": np.int64, "string": object}
EMPTY = {name: np.empty(0, dtype=t) for name, t in _NP.items()}


def invalid(msg: str, op: str = "ParseExample") -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, op, msg)


def where(key: str, index: int, names: list | None) -> str:
    """TF's prefix of a data error: which feature of which example."""
    if names is None:
        return f"Key: {key}"
    return f"Name: {names[index] or '<unknown>'}, Key: {key}, Index: {index}"


def feature_values(feature: Any, dt: dtypes.DType, at: str) -> np.ndarray | None:
    """The values of one `tf.train.Feature` as a 1-D array; None when it holds no list."""
    if feature is None:
        return None
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    want = _KIND[dt.name]
    if kind != want:
        raise invalid(f"{at}.  Data types don't match. Expected type: {_TYPE_NAME[want]}, "
                      f"Actual type: {_TYPE_NAME[kind]}")  # fmt: skip
    values = getattr(feature, kind).value
    if dt.name != "string":
        return np.array(values, dtype=_NP[dt.name])
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def check_bytes(count: int, itemsize: int, key: str) -> None:
    if count * itemsize > MAX_RESULT_BYTES:
        raise errors.ResourceExhaustedError(
            None, "ParseExample",
            f"Key: {key}.  The parsed result would hold {count} values ({count * itemsize} "
            f"bytes), more than the {MAX_RESULT_BYTES}-byte limit of one parsed feature; the "
            "data is corrupt or needs to be parsed in smaller batches.",
        )  # fmt: skip


def _static_shape(shape: Any, key: str, what: str) -> tuple[int, ...]:
    dims = list(shape) if isinstance(shape, list | tuple) else shape
    try:
        out = tuple(dims) if isinstance(dims, tuple | list) else tuple(dims.as_list())
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"{what} for key {key!r} needs a shape (a list of ints), got "
                         f"{shape!r}.") from None  # fmt: skip
    if any(d is None for d in out):
        raise ValueError(
            f"First dimension of shape for feature {key} unknown. Consider using "
            f"FixedLenSequenceFeature. Received feature={what}(shape={shape!r})."
        )
    if any(not isinstance(d, int | np.integer) or d < 0 for d in out):
        raise ValueError(f"{what} for key {key!r}: every dimension must be a non-negative "
                         f"int, got shape {shape!r}.")  # fmt: skip
    return tuple(int(d) for d in out)


def _default(value: Any, dt: dtypes.DType, shape: tuple[int, ...], key: str) -> np.ndarray:
    arr = np.asarray(convert_to_tensor(value, dtype=dt).numpy(), dtype=_NP[dt.name])
    size = math.prod(shape)
    if arr.size != size:
        raise invalid(f"Key: {key}.  default_value has {arr.size} values, but the feature's "
                      f"shape {list(shape)} needs {size}; give a default of that "
                      "shape.")  # fmt: skip
    return arr.reshape(shape)


class Spec:
    """One feature configuration, checked and normalized."""

    __slots__ = ("key", "config", "dtype", "shape", "default", "index_keys")

    def __init__(self, key: str, config: Any) -> None:
        self.key, self.config = key, config
        self.shape: tuple[int, ...] = ()
        self.default: Any = None
        self.index_keys: list[str] = []
        kind = type(config).__name__
        self.dtype = feature_dtype(config.dtype, f"{kind} for key {key!r}")
        if isinstance(config, FixedLenFeature):
            self.shape = _static_shape(config.shape, key, kind)
            if config.default_value is not None:
                self.default = _default(config.default_value, self.dtype, self.shape, key)
        elif isinstance(config, FixedLenSequenceFeature):
            self.shape = _static_shape(config.shape, key, kind)
            if config.default_value is not None:
                self.default = _default(config.default_value, self.dtype, (), key)[()]
        elif isinstance(config, SparseFeature):
            index_keys = config.index_key
            index_keys = [index_keys] if isinstance(index_keys, str) else list(index_keys)
            sizes = config.size
            sizes = [sizes] if isinstance(sizes, int | np.integer) else list(sizes)
            if not all(isinstance(k, str) and k for k in [*index_keys, config.value_key]):
                raise ValueError(f"SparseFeature for key {key!r}: index_key and value_key must "
                                 f"be feature names (non-empty strings), got "
                                 f"{config.index_key!r} and {config.value_key!r}.")  # fmt: skip
            if not index_keys or len(index_keys) != len(sizes):
                raise ValueError(f"SparseFeature for key {key!r}: index_key and size must have "
                                 f"the same length, got {config.index_key!r} and "
                                 f"{config.size!r}.")  # fmt: skip
            if any(not isinstance(s, int | np.integer) or s < 0 for s in sizes):
                raise ValueError(f"SparseFeature for key {key!r}: size must be non-negative "
                                 f"ints, got {config.size!r}.")  # fmt: skip
            self.shape = tuple(int(s) for s in sizes)
            self.index_keys = index_keys


def prepare(features: Any, op: str) -> list[Spec]:
    """The checked configurations of a `features` dict."""
    if not isinstance(features, dict):
        raise TypeError(f"{op}: features must be a dict of feature configurations, got "
                        f"{type(features).__name__}.")  # fmt: skip
    specs = []
    for key, config in features.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"{op}: feature keys must be non-empty strings, got {key!r}.")
        if not isinstance(config, FEATURE_TYPES):
            raise ValueError(
                f"{op}: unsupported feature configuration {config!r} for key {key!r}; use "
                "tf.io.FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, "
                "SparseFeature or RaggedFeature."
            )
        specs.append(Spec(key, config))
    return specs


# --- one configuration over a batch of feature maps ----------------------------------------------


def _dense(spec: Spec, maps: list, names: list | None) -> np.ndarray:
    dt, shape, key = spec.dtype, spec.shape, spec.key
    size = math.prod(shape)
    check_bytes(len(maps) * size, 8, key)
    out = np.empty((len(maps),) + shape, dtype=_NP[dt.name])
    for i, fmap in enumerate(maps):
        at = where(key, i, names)
        values = feature_values(fmap.get(key), dt, at)
        if values is None:
            if spec.default is None:
                raise invalid(f"{'Name: ' + (names[i] or '<unknown>') + ', ' if names else ''}"
                              f"Feature: {key} (data type: {dt.name}) is required but could "
                              "not be found.")  # fmt: skip
            out[i, ...] = spec.default  # `[i, ...]`: object arrays copy the element
        elif values.size != size:
            raise invalid(f"{at}.  Can't parse serialized Example: the feature has "
                          f"{values.size} {_TYPE_NAME[_KIND[dt.name]]} values, but its shape "
                          f"{list(shape)} needs {size}.")  # fmt: skip
        else:
            out[i, ...] = values.reshape(shape)
    return out


def pad_rows(spec: Spec, rows: list[np.ndarray], at: Any) -> tuple[np.ndarray, np.ndarray]:
    """Items of `spec.shape` stacked per example, padded to the longest: `[B, T] + shape`,
    and the lengths. `rows[i]` is example i's flat values (None when missing)."""
    dt, shape = spec.dtype, spec.shape
    stride = math.prod(shape)
    lengths = np.zeros(len(rows), dtype=np.int64)
    for i, values in enumerate(rows):
        n = 0 if values is None else values.size
        if stride == 0 and n or stride and n % stride:
            raise invalid(f"{at(i)}.  Number of {_TYPE_NAME[_KIND[dt.name]]} values is not a "
                          f"multiple of stride length. Saw {n} values but output shape is: "
                          "[?" + "".join(f",{d}" for d in shape) + "]")  # fmt: skip
        lengths[i] = n // stride if stride else 0
    longest = int(lengths.max()) if len(rows) else 0
    check_bytes(len(rows) * longest * stride, 8, spec.key)
    fill = spec.default if spec.default is not None else (b"" if dt.name == "string" else 0)
    out = np.full((len(rows), longest) + shape, fill, dtype=_NP[dt.name])
    for i, values in enumerate(rows):
        if lengths[i]:
            out[i, : lengths[i]] = values.reshape((int(lengths[i]),) + shape)
    return out, lengths


def var_len(rows: list[np.ndarray | None], dt: dtypes.DType) -> SparseTensor:
    """Per-example value lists as a `[B, longest]` SparseTensor."""
    lengths = np.array([0 if r is None else r.size for r in rows], dtype=np.int64)
    total = int(lengths.sum())
    batch = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    indices = np.stack([batch, np.arange(total, dtype=np.int64) - starts], axis=1)
    parts = [r for r in rows if r is not None and r.size]
    values = np.concatenate(parts) if parts else EMPTY[dt.name]
    shape = [len(rows), int(lengths.max()) if len(rows) else 0]
    return SparseTensor(indices, as_tensor(values), shape)


def _sparse(spec: Spec, maps: list, names: list | None) -> SparseTensor:
    key, config, sizes = spec.key, spec.config, spec.shape
    int64 = dtypes.as_dtype("int64")
    all_indices, all_values = [], []
    for i, fmap in enumerate(maps):
        values = feature_values(fmap.get(config.value_key), spec.dtype,
                                where(config.value_key, i, names))  # fmt: skip
        values = EMPTY[spec.dtype.name] if values is None else values
        cols = [np.full(values.size, i, dtype=np.int64)]
        for index_key, size in zip(spec.index_keys, sizes):
            ids = feature_values(fmap.get(index_key), int64, where(index_key, i, names))
            ids = EMPTY["int64"] if ids is None else ids
            if ids.size != values.size:
                raise invalid(f"{where(key, i, names)}.  SparseFeature: index feature "
                              f"{index_key!r} has {ids.size} values but value feature "
                              f"{config.value_key!r} has {values.size}; they must match "
                              "one to one.")  # fmt: skip
            bad = (ids < 0) | (ids >= size)
            if bad.any():
                raise invalid(f"{where(key, i, names)}.  SparseFeature: index "
                              f"{int(ids[bad][0])} in {index_key!r} is out of range "
                              f"[0, {size}).")  # fmt: skip
            cols.append(ids)
        idx = np.stack(cols, axis=1)
        if not config.already_sorted and len(idx):
            order = np.lexsort(idx[:, ::-1].T)
            idx, values = idx[order], values[order]
        all_indices.append(idx)
        all_values.append(values)
    indices = (np.concatenate(all_indices) if all_indices
               else np.zeros((0, 1 + len(sizes)), dtype=np.int64))  # fmt: skip
    values = np.concatenate(all_values) if all_values else EMPTY[spec.dtype.name]
    return SparseTensor(indices, as_tensor(values), [len(maps), *sizes])


# --- ragged ----------------------------------------------------------------------------------


def _check_splits(s: np.ndarray, nvals: int, at: str, what: str) -> np.ndarray:
    if s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0) or s[-1] != nvals:
        raise invalid(f"{at}.  RaggedFeature partition {what} does not split {nvals} values "
                      f"into rows: the row splits {s[:10].tolist()}{'...' if s.size > 10 else ''}"
                      f" must start at 0, never decrease and end at {nvals}.")  # fmt: skip
    return s


def _partition(p: Any, ids: np.ndarray, nvals: int, at: str) -> np.ndarray:
    """Row splits of `nvals` items from one partition feature's values."""
    what = f"{type(p).__name__}({p.key!r})"
    if isinstance(p, RaggedFeature.RowSplits):
        return _check_splits(ids, nvals, at, what)
    if isinstance(p, RaggedFeature.RowLengths):
        if np.any(ids < 0):
            raise invalid(f"{at}.  RaggedFeature partition {what} has a negative row length.")
        return _check_splits(np.concatenate([[0], np.cumsum(ids)]), nvals, at, what)
    if isinstance(p, RaggedFeature.RowStarts):
        return _check_splits(np.concatenate([ids, [nvals]]), nvals, at, what)
    if isinstance(p, RaggedFeature.RowLimits):
        return _check_splits(np.concatenate([[0], ids]), nvals, at, what)
    # ValueRowIds: value j is in row ids[j]; rows without values are empty.
    if ids.size != nvals or np.any(np.diff(ids) < 0) or (ids.size and ids[0] < 0):
        raise invalid(f"{at}.  RaggedFeature partition {what} must hold one sorted, "
                      f"non-negative row id per value ({nvals}), got {ids.size} ids.")  # fmt: skip
    nrows = int(ids[-1]) + 1 if ids.size else 0
    if nrows > MAX_PARTITION_ROWS:
        raise invalid(f"{at}.  RaggedFeature partition {what} names row {nrows - 1}, more "
                      f"than the {MAX_PARTITION_ROWS} rows a partition may have.")  # fmt: skip
    return np.searchsorted(ids, np.arange(nrows + 1), side="left").astype(np.int64)


def _inner_shape(config: RaggedFeature) -> tuple[int, ...]:
    """The dense dims made by the innermost UniformRowLength partitions."""
    dims: list[int] = []
    for p in reversed(config.partitions):
        if not isinstance(p, RaggedFeature.UniformRowLength):
            break
        dims.insert(0, p.length)
    return tuple(dims)


def ragged_one(config: RaggedFeature, key: str, fmap: Any, at_key: Any) -> tuple:
    """One example's (flat values, [row splits, outermost first]); `at_key(k)` says where."""
    value_key = config.value_key or key
    at = at_key(key)
    flat = feature_values(fmap.get(value_key), config.dtype, at_key(value_key))
    flat = EMPTY[config.dtype.name] if flat is None else flat
    inner = _inner_shape(config)
    if inner:
        stride = math.prod(inner)
        if flat.size % stride if stride else flat.size:
            raise invalid(f"{at}.  RaggedFeature: {flat.size} values cannot be split into rows "
                          f"of UniformRowLength {list(inner)}.")  # fmt: skip
        flat = flat.reshape((flat.size // stride if stride else 0,) + inner)
    splits: list[np.ndarray] = []
    int64 = dtypes.as_dtype("int64")
    for p in reversed(config.partitions[: len(config.partitions) - len(inner)]):
        nvals = flat.shape[0] if not splits else splits[0].size - 1
        if isinstance(p, RaggedFeature.UniformRowLength):
            if p.length == 0 or nvals % p.length:
                raise invalid(f"{at}.  RaggedFeature: {nvals} rows cannot be split into rows of "
                              f"UniformRowLength {p.length}.")  # fmt: skip
            s = np.arange(0, nvals + 1, p.length, dtype=np.int64)
        else:
            ids = feature_values(fmap.get(p.key), int64, at_key(p.key))
            s = _partition(p, EMPTY["int64"] if ids is None else ids, nvals, at)
        splits.insert(0, s)
    return flat, splits


def stack_rows(config: RaggedFeature, parts: list[tuple], depth: int) -> tuple:
    """Rows' (flat, [splits...]) (each with `depth` levels of splits) stacked as the rows of one
    (flat, [outer splits, splits...])."""
    nrows = [s[0].size - 1 if s else f.shape[0] for f, s in parts]
    levels = [np.concatenate([[0], np.cumsum(nrows, dtype=np.int64)])]
    for level in range(depth):
        offset, pieces = 0, [np.zeros(1, dtype=np.int64)]
        for _, s in parts:
            pieces.append(s[level][1:] + offset)
            offset += int(s[level][-1])
        levels.append(np.concatenate(pieces))
    if parts:
        flat = np.concatenate([f for f, _ in parts])
    else:
        flat = np.empty((0,) + _inner_shape(config), dtype=_NP[config.dtype.name])
    return flat, levels


def ragged_depth(config: RaggedFeature) -> int:
    """The levels of row splits one example's RaggedFeature has (uniform inner dims are dense)."""
    return len(config.partitions) - len(_inner_shape(config))


def to_ragged(config: RaggedFeature, flat: np.ndarray, splits: list) -> Any:
    """(flat, splits) as a RaggedTensor (a Tensor when there are no splits)."""
    if not splits:
        return as_tensor(flat)
    sd = config.row_splits_dtype.np
    return RaggedTensor.from_nested_row_splits(
        as_tensor(flat), [s.astype(sd) for s in splits], validate=False
    )


def ragged(config: RaggedFeature, parts: list[tuple], single: bool) -> Any:
    """Per-example (flat, splits) combined: one example as a Tensor or RaggedTensor, a batch
    as a RaggedTensor whose outer rows are the examples."""
    if single:
        return to_ragged(config, *parts[0])
    return to_ragged(config, *stack_rows(config, parts, ragged_depth(config)))


# --- the ops ---------------------------------------------------------------------------------


def parse_feature_maps(specs: list[Spec], maps: list, names: list | None,
                       single: bool) -> dict[str, Any]:  # fmt: skip
    """Every configured feature of `maps` (the `Features.feature` maps of a batch)."""
    out: dict[str, Any] = {}
    for spec in specs:
        key, config = spec.key, spec.config
        if isinstance(config, FixedLenFeature):
            arr = _dense(spec, maps, names)
            out[key] = as_tensor(arr[0, ...] if single else arr)
        elif isinstance(config, FixedLenSequenceFeature):
            rows = [feature_values(m.get(key), spec.dtype, where(key, i, names))
                    for i, m in enumerate(maps)]  # fmt: skip
            arr, _ = pad_rows(spec, rows, lambda i, key=key: where(key, i, names))
            out[key] = as_tensor(arr[0, ...] if single else arr)
        elif isinstance(config, VarLenFeature):
            rows = [feature_values(m.get(key), spec.dtype, where(key, i, names))
                    for i, m in enumerate(maps)]  # fmt: skip
            out[key] = drop_batch(var_len(rows, spec.dtype)) if single else var_len(
                rows, spec.dtype)  # fmt: skip
        elif isinstance(config, SparseFeature):
            sp = _sparse(spec, maps, names)
            out[key] = drop_batch(sp) if single else sp
        else:
            parts = [ragged_one(config, key, m, lambda k, i=i: where(k, i, names))
                     for i, m in enumerate(maps)]  # fmt: skip
            out[key] = ragged(config, parts, single)
    return out


def drop_batch(sp: SparseTensor) -> SparseTensor:
    """The only example of a batch-of-one SparseTensor, without the batch dimension."""
    return SparseTensor(sp.indices.numpy()[:, 1:], sp.values, sp.dense_shape.numpy()[1:])


def decode_all(serialized: np.ndarray, message: str, op: str) -> list:
    """Each string parsed as the protobuf `message`; undecodable bytes raise
    InvalidArgumentError."""
    from google.protobuf.message import DecodeError

    cls = example_proto.classes()[message]
    out = []
    for s in serialized:
        try:
            out.append(cls.FromString(s))
        except (DecodeError, RuntimeError, ValueError):
            shown = s[:64].decode("utf-8", "backslashreplace")
            raise invalid(
                f"Could not parse {'sequence ' if 'Seq' in message else ''}example "
                f"input, value: '{shown}{'...' if len(s) > 64 else ''}'",
                op,
            ) from None
    return out


def names_of(example_names: Any, count: int, op: str) -> list:
    if example_names is None:
        return [""] * count
    names = [n.decode("utf-8", "backslashreplace") if isinstance(n, bytes) else str(n)
             for n in strings_of(example_names, op).reshape(-1)]  # fmt: skip
    if len(names) != count:
        raise ValueError(f"{op}: example_names has {len(names)} names for {count} examples.")
    return names


def _checked_features(features: Any, op: str) -> list[Spec]:
    if not features:
        raise ValueError("Invalid argument: features cannot be empty.")
    specs = prepare(features, op)
    for spec in specs:
        if isinstance(spec.config, FixedLenSequenceFeature) and not spec.config.allow_missing:
            raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be "
                             f"True (key {spec.key!r}); missing features then parse as zero "
                             "rows.")  # fmt: skip
    return specs


def parse_example(serialized: Any, features: Any, example_names: Any = None,
                  name: Any = None) -> dict[str, Any]:  # fmt: skip
    """Parse a batch (1-D string tensor) of serialized `tf.train.Example`s.

    Returns a dict from each key of `features` to a dense Tensor `[batch] + shape`
    (FixedLenFeature; FixedLenSequenceFeature padded), a SparseTensor (VarLenFeature,
    SparseFeature) or a RaggedTensor (RaggedFeature). A scalar `serialized` parses one example
    without the batch dimension.
    """
    example_proto.require_protobuf()
    specs = _checked_features(features, "parse_example")
    arr = strings_of(serialized, "parse_example")
    if arr.ndim > 1:
        raise invalid(f"Expected serialized to be a scalar or vector, got shape: "
                      f"{list(arr.shape)}")  # fmt: skip
    single = arr.ndim == 0
    examples = decode_all(arr.reshape(-1), "Example", "ParseExample")
    maps = [e.features.feature for e in examples]
    names = None if single else names_of(example_names, len(maps), "parse_example")
    return parse_feature_maps(specs, maps, names, single)


def parse_single_example(serialized: Any, features: Any, example_names: Any = None,
                         name: Any = None) -> dict[str, Any]:  # fmt: skip
    """Parse one serialized `tf.train.Example` (a scalar string): like `parse_example`
    without the batch dimension, and a RaggedFeature without partitions is a plain Tensor.

    >>> import layerflow as tf
    >>> ex = tf.train.Example(features=tf.train.Features(feature={
    ...     "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[4, 5]))}))
    >>> sp = tf.io.parse_single_example(ex.SerializeToString(),
    ...                                 {"ids": tf.io.VarLenFeature(tf.int64)})["ids"]
    >>> sp.values.numpy(), sp.dense_shape.numpy()
    (array([4, 5]), array([2]))
    """
    arr = strings_of(serialized, "parse_single_example")
    if arr.ndim != 0:
        raise ValueError(f"Input serialized must be a scalar, got shape {list(arr.shape)}; use "
                         "tf.io.parse_example for a batch.")  # fmt: skip
    return parse_example(arr, features, name=name)
