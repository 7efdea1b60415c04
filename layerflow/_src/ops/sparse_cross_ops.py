"""`tf.sparse.cross`, `tf.sparse.cross_hashed` and `tf.edit_distance`, as TF 2.21's kernels.

Feature crossing (TF's `SparseCrossV2` / `SparseCross` kernels): every input is a rank-2
`SparseTensor` or dense `Tensor` whose row `b` lists the features of example `b`. Row `b` of
the result holds the Cartesian product of those lists, the LAST column varying fastest, with
the sparse inputs crossed first and the dense ones after them (whatever their order in
`inputs`: TF's kernel builds its columns that way). `cross` joins the features' strings
(integers written in decimal) with `separator`; `cross_hashed` chains
`FingerprintCat64(hash_key, h_1, h_2, ...)` with `h_i` the `Fingerprint64` of a string feature or
the int64 value itself, then takes it modulo `num_buckets` (or INT64_MAX when 0): bit for bit TF's
hashes (`fingerprint.py`, checked against TF's values in tests/ops/fixtures/sparse_cross.json).

`edit_distance` groups both SparseTensors by all but their last index and takes the
Levenshtein distance between the value sequences of each group (TF's `EditDistance` kernel).
None of these has a gradient (neither has TF's).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.fingerprint import M, fingerprint64, fingerprint_cat64
from layerflow._src.ops.sparse_ops import check_canonical, row_major_order

_DEFAULT_HASH_KEY = 0xDECAFCAFFE  # TF's sparse_ops._DEFAULT_HASH_KEY
_INT64_MAX = 2**63 - 1


def _err(opname: str, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, opname, f"{opname}: {message}")


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(backend.to_host(t._data))


def _feature(value: Any, opname: str) -> Any:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return int(value)


def _columns(inputs: Any, opname: str) -> tuple[int, list[list[list[Any]]], Any]:
    """Each input as a list (one per batch row) of its feature lists, sparse inputs first."""
    if not isinstance(inputs, list | tuple):
        raise TypeError(
            f"tf.sparse.{opname}: inputs must be a list of Tensors or SparseTensors, got "
            f"{type(inputs).__name__}."
        )
    sparse, dense = [], []
    for i, x in enumerate(inputs):
        if isinstance(x, SparseTensor):
            sparse.append((i, x))
        elif isinstance(x, TensorLike) or isinstance(x, list | tuple | np.ndarray):
            dense.append((i, x if isinstance(x, TensorLike) else convert_to_tensor(x)))
        else:
            raise TypeError(
                f"tf.sparse.{opname}: inputs[{i}] must be a Tensor or SparseTensor, got "
                f"{type(x).__name__}."
            )
    if not sparse and not dense:
        raise _err(opname, "inputs must not be empty; give at least one feature column.")
    batch, device, columns = None, None, []
    for i, x in sparse:
        shape = _host(x.dense_shape).tolist()
        if len(shape) != 2:
            raise _err(opname, f"inputs[{i}] must be a rank-2 SparseTensor, got shape {shape}.")
        device = device or x.values._device
        _check_kind(x.values, i, opname)
        idx = _host(x.indices)
        vals = _host(x.values)
        rows: list[list[Any]] = [[] for _ in range(shape[0])]
        order = row_major_order(idx) if idx.size else np.zeros(0, np.int64)
        for k in order:
            r = int(idx[k, 0])
            if not 0 <= r < shape[0]:
                raise _err(opname, f"inputs[{i}] has index {idx[k].tolist()} outside {shape}.")
            rows[r].append(_feature(vals[k], opname))
        batch = _same_batch(batch, shape[0], i, opname)
        columns.append(rows)
    for i, x in dense:
        if x.shape.rank != 2:
            raise _err(opname, f"inputs[{i}] must be a rank-2 Tensor, got shape {x.shape}.")
        device = device or x._device
        _check_kind(x, i, opname)
        arr = _host(x)
        batch = _same_batch(batch, arr.shape[0], i, opname)
        columns.append([[_feature(v, opname) for v in row] for row in arr])
    return batch, columns, device


def _check_kind(t: Tensor, i: int, opname: str) -> None:
    if t.dtype != dtypes.string and not t.dtype.is_integer:
        raise TypeError(
            f"tf.sparse.{opname}: inputs[{i}] has dtype {t.dtype.name}; features must be strings "
            "or integers (cast them, e.g. tf.cast(x, tf.int64) or tf.strings.as_string(x))."
        )


def _same_batch(batch: int | None, rows: int, i: int, opname: str) -> int:
    if batch is not None and rows != batch:
        raise _err(opname, f"Expected batch size {batch}, got {rows} for inputs[{i}].")
    return rows


def _cross(inputs: Any, opname: str, combine: Any, out_dtype: Any) -> SparseTensor:
    batch, columns, device = _columns(inputs, opname)
    indices: list[tuple[int, int]] = []
    values: list[Any] = []
    width = 0
    for b in range(batch):
        crossed = [combine(features) for features in itertools.product(*(c[b] for c in columns))]
        width = max(width, len(crossed))
        indices.extend((b, j) for j in range(len(crossed)))
        values.extend(crossed)
    np_dtype = object if out_dtype == dtypes.string else np.int64
    vals = np.empty(len(values), dtype=np_dtype)
    vals[:] = values
    idx = np.asarray(indices, np.int64).reshape(-1, 2)
    dense_shape = np.asarray([batch, width], np.int64)
    if out_dtype == dtypes.string:
        device = backend.cpu_device()  # string tensors live on the host

    def on_device(a: np.ndarray) -> Tensor:
        return Tensor(backend.to_device(a, device), device)

    return SparseTensor(on_device(idx), on_device(vals), on_device(dense_shape))


def cross(inputs: Any, name: str | None = None, separator: Any = None) -> SparseTensor:
    """The string crosses of `inputs` (rank-2 SparseTensors or Tensors of strings/ints).

    >>> import layerflow as tf
    >>> a = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], [b"a", b"b", b"c"], [2, 2])
    >>> tf.sparse.cross([a, tf.constant([["f"], ["g"]])]).values.numpy()
    array([b'a_X_f', b'b_X_g', b'c_X_g'], dtype=object)
    """
    if separator is None:
        separator = "_X_"
    if isinstance(separator, TensorLike):
        separator = _host(separator).item()
    sep = separator if isinstance(separator, bytes) else str(separator).encode("utf-8")

    def join(features: tuple[Any, ...]) -> bytes:
        return sep.join(f if isinstance(f, bytes) else str(f).encode() for f in features)

    return _cross(inputs, "cross", join, dtypes.string)


def cross_hashed(inputs: Any, num_buckets: int = 0, hash_key: Any = None,
                 name: str | None = None) -> SparseTensor:  # fmt: skip
    """The hashed crosses of `inputs` as int64 (bit-identical to TF's `FingerprintCat64` chain).

    >>> import layerflow as tf
    >>> a = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], [b"a", b"b", b"c"], [2, 2])
    >>> d = tf.SparseTensor([[0, 0], [1, 0]], [b"d", b"e"], [2, 1])
    >>> tf.sparse.cross_hashed([a, d, tf.constant([["f"], ["g"]])], num_buckets=1000).values
    <tf.Tensor: shape=(3,), dtype=int64, numpy=array([178, 366, 674])>
    """
    num_buckets = int(num_buckets)
    if num_buckets < 0:
        raise ValueError(f"tf.sparse.cross_hashed: num_buckets must be >= 0, got {num_buckets}.")
    key = _DEFAULT_HASH_KEY if not hash_key else int(hash_key) & M
    modulus = num_buckets if num_buckets > 0 else _INT64_MAX

    def hashed(features: tuple[Any, ...]) -> int:
        h = key
        for f in features:
            h = fingerprint_cat64(h, fingerprint64(f) if isinstance(f, bytes) else f & M)
        return h % modulus

    return _cross(inputs, "cross_hashed", hashed, dtypes.int64)


# --- edit distance --------------------------------------------------------------------------------


def _levenshtein(a: list[Any], b: list[Any]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def _groups(st: SparseTensor, what: str) -> tuple[dict[tuple[int, ...], list[Any]], list[int]]:
    if not isinstance(st, SparseTensor):
        raise TypeError(
            f"tf.edit_distance: {what} must be a SparseTensor, got {type(st).__name__}. Build one "
            "with tf.sparse.from_dense(x) or tf.SparseTensor(indices, values, dense_shape)."
        )
    shape = _host(st.dense_shape).tolist()
    idx = _host(st.indices)
    check_canonical(idx, tuple(shape), "EditDistance")
    vals = _host(st.values)
    groups: dict[tuple[int, ...], list[Any]] = {}
    for k in range(idx.shape[0]):
        groups.setdefault(tuple(int(v) for v in idx[k, :-1]), []).append(vals[k])
    return groups, shape


def edit_distance(hypothesis: Any, truth: Any, normalize: bool = True,
                  name: str = "edit_distance") -> Tensor:  # fmt: skip
    """Levenshtein distances between the sequences of two SparseTensors, grouped by all but
    their last index; divided by the truth's length when `normalize` (inf where the truth is
    empty and the hypothesis not). The result has shape max(shapes)[:-1], float32.

    >>> import layerflow as tf
    >>> h = tf.SparseTensor([[0, 0], [0, 1], [0, 2]], [b"k", b"i", b"t"], [1, 3])
    >>> t = tf.SparseTensor([[0, 0], [0, 1]], [b"s", b"i"], [1, 2])
    >>> tf.edit_distance(h, t).numpy()
    array([1.], dtype=float32)
    """
    hyp, h_shape = _groups(hypothesis, "hypothesis")
    tru, t_shape = _groups(truth, "truth")
    if len(h_shape) != len(t_shape):
        raise _err(
            "EditDistance",
            f"hypothesis and truth must have the same rank, got shapes {h_shape} and {t_shape}.",
        )
    if hypothesis.dtype != truth.dtype:
        raise TypeError(
            f"tf.edit_distance: hypothesis and truth must have the same dtype, got "
            f"{hypothesis.dtype.name} and {truth.dtype.name}."
        )
    if len(h_shape) < 1:
        raise _err("EditDistance", "hypothesis and truth must have rank >= 1.")
    out_shape = [max(a, b) for a, b in zip(h_shape[:-1], t_shape[:-1])]
    out = np.zeros(out_shape, np.float32)
    for loc in set(hyp) | set(tru):
        h, t = hyp.get(loc, []), tru.get(loc, [])
        dist = float(_levenshtein(h, t))
        if normalize:
            dist = dist / len(t) if t else float("inf")
        out[loc] = dist
    device = hypothesis.values._device
    return Tensor(backend.to_device(out, device), device)


__all__ = ["cross", "cross_hashed", "edit_distance"]
