"""`tf.sets`: union, intersection, difference and size of the sets in the last dimension.

Every position of the leading dimensions (a "group") of `a` and `b` holds one set: for a dense
tensor all the values of its last dimension (duplicates count once), for a sparse one the
values whose indices share the leading coordinates. The set ops compare `a` and `b` group by
group and return the results as a sparse tensor: int64 `indices` [N, rank], `values` [N] sorted
ascending within each group, and `dense_shape` the group shape plus the largest result size,
as TF. Integer (int8/16/32/64, uint8/16) and string dtypes; no gradients. The work is done on
the host with NumPy's sorted set routines.

Results are `tf.SparseTensor`s, built in `_sparse_result` alone; sparse *inputs* are any object
with `indices`, `values` and `dense_shape` (a SparseTensor, or a `SparseTensorValue` as TF also
takes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.array_ops import constant

__all__ = ["difference", "intersection", "size", "union"]

_SUPPORTED = ("int8", "int16", "int32", "int64", "uint8", "uint16", "string")


def _is_sparse(x: Any) -> bool:
    return not isinstance(x, TensorLike) and all(
        hasattr(x, f) for f in ("indices", "values", "dense_shape")
    )


def _host(t: Any) -> np.ndarray:
    return np.asarray(backend.to_host(convert_to_tensor(t)._data))


def _dtype_name(arr: np.ndarray) -> str:
    return dtypes.from_numpy(arr.dtype).name


def _check_dtype(arr: np.ndarray, what: str) -> None:
    name = _dtype_name(arr)
    if name not in _SUPPORTED:
        raise TypeError(
            f"tf.sets: {what} has invalid dtype {name}, not in the supported dtypes "
            f"{', '.join(_SUPPORTED)}. Cast it first, e.g. tf.cast({what}, tf.int64)."
        )


class _Groups:
    """One operand as `group_shape` plus the sorted unique values of each flat group."""

    def __init__(self, x: Any, what: str, opname: str, validate_indices: bool) -> None:
        if _is_sparse(x):
            self._from_sparse(x, what, opname, validate_indices)
        else:
            self._from_dense(x, what, opname)

    def _from_dense(self, x: Any, what: str, opname: str) -> None:
        arr = _host(x)
        _check_dtype(arr, what)
        if arr.ndim < 2:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: {what} has shape {list(arr.shape)} of rank "
                f"{arr.ndim} < 2; the last dimension holds the sets, so give at least a batch "
                "of sets, e.g. tf.expand_dims(x, 0).",
            )  # fmt: skip
        self.dtype = arr.dtype
        self.group_shape = tuple(arr.shape[:-1])
        rows = arr.reshape(int(np.prod(self.group_shape, dtype=np.int64)), arr.shape[-1])
        self.sets = [np.unique(row) for row in rows]

    def _from_sparse(self, x: Any, what: str, opname: str, validate: bool) -> None:
        idx = _host(x.indices).astype(np.int64).reshape(-1, _host(x.dense_shape).size)
        vals = _host(x.values)
        shape = _host(x.dense_shape).astype(np.int64)
        _check_dtype(vals, what)
        if shape.size < 2:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: {what} is a sparse tensor of rank {shape.size} "
                "(Invalid rank); the last dimension holds the sets, so it needs rank >= 2.",
            )  # fmt: skip
        _check_indices(idx, shape, what, opname, validate)
        self.dtype = vals.dtype
        self.group_shape = tuple(int(d) for d in shape[:-1])
        n_groups = int(np.prod(self.group_shape, dtype=np.int64))
        flat = np.zeros(0, np.int64)
        if len(idx):
            flat = np.ravel_multi_index(tuple(idx[:, :-1].T), self.group_shape)
        order = np.argsort(flat, kind="stable")
        bounds = np.searchsorted(flat[order], np.arange(n_groups + 1))
        self.sets = [np.unique(vals[order[bounds[g] : bounds[g + 1]]]) for g in range(n_groups)]


def _check_indices(
    idx: np.ndarray, shape: np.ndarray, what: str, opname: str, validate: bool
) -> None:
    def fail(i: int, why: str) -> None:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what}.indices[{i}] = {idx[i].tolist()} {why}",
        )  # fmt: skip

    # Out-of-bounds indices are always an error (TF fails too, with validate_indices=False
    # through an InternalError); order and repeats are checked only when asked, as TF.
    bad = np.nonzero(((idx < 0) | (idx >= shape)).any(1))[0]
    if len(bad):
        fail(int(bad[0]), f"is out of bounds: need 0 <= index < {shape.tolist()}.")
    if not validate or len(idx) < 2:
        return
    for i in range(1, len(idx)):
        a, b = tuple(idx[i - 1]), tuple(idx[i])
        if b == a:
            fail(i, "is repeated. Remove the duplicate entry.")
        if b < a:
            fail(i, "is out of order. Many sparse ops require sorted indices; use "
                 "tf.sparse.reorder to create a correctly ordered copy.")  # fmt: skip


def _sparse_result(indices: np.ndarray, values: np.ndarray, dense_shape: list[int]) -> Any:
    return SparseTensor(
        constant(indices), constant(values), constant(np.array(dense_shape, np.int64))
    )


def _set_operation(a: Any, b: Any, how: str, validate_indices: bool, opname: str) -> Any:
    ga = _Groups(a, "a", opname, validate_indices)
    gb = _Groups(b, "b", opname, validate_indices)
    if ga.dtype != gb.dtype:
        raise TypeError(
            f"{opname}: types don't match, a is {_dtype_name(np.empty(0, ga.dtype))} and b is "
            f"{_dtype_name(np.empty(0, gb.dtype))}. Cast one to the other's dtype."
        )
    if ga.group_shape != gb.group_shape:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: mismatched shapes {list(ga.group_shape)} vs "
            f"{list(gb.group_shape)}: a and b must have the same shape in every dimension but "
            "the last (one set per position).",
        )  # fmt: skip
    fn = {"union": np.union1d, "intersection": np.intersect1d,
          "a-b": np.setdiff1d, "b-a": lambda x, y: np.setdiff1d(y, x)}[how]  # fmt: skip
    results = [fn(x, y) for x, y in zip(ga.sets, gb.sets)]
    width = max((len(r) for r in results), default=0)
    rank = len(ga.group_shape) + 1
    coords = np.array(list(np.ndindex(*ga.group_shape)), np.int64).reshape(-1, rank - 1)
    counts = np.array([len(r) for r in results], np.int64)
    indices = np.empty((int(counts.sum()), rank), np.int64)
    indices[:, :-1] = np.repeat(coords, counts, axis=0)
    indices[:, -1] = np.concatenate([np.arange(c) for c in counts]) if len(counts) else []
    values = np.concatenate(results) if results else np.empty(0, ga.dtype)
    return _sparse_result(indices, values.astype(ga.dtype), [*ga.group_shape, width])


def union(a: Any, b: Any, validate_indices: bool = True) -> Any:
    """The union of the sets in the last dimension of `a` and `b` (dense or sparse).

    >>> import layerflow as tf
    >>> u = tf.sets.union([[3, 1], [2, 2]], [[9], [0]])
    >>> u.values.numpy().tolist(), u.dense_shape.numpy().tolist()
    ([1, 3, 9, 0, 2], [2, 3])
    """
    return _set_operation(a, b, "union", validate_indices, "tf.sets.union")


def intersection(a: Any, b: Any, validate_indices: bool = True) -> Any:
    """The intersection of the sets in the last dimension of `a` and `b` (dense or sparse).

    >>> import layerflow as tf
    >>> tf.sets.intersection([[1, 2, 3]], [[2, 3, 4]]).values.numpy().tolist()
    [2, 3]
    """
    return _set_operation(a, b, "intersection", validate_indices, "tf.sets.intersection")


def difference(a: Any, b: Any, aminusb: bool = True, validate_indices: bool = True) -> Any:
    """`a - b` (or `b - a` with `aminusb=False`) of the sets in the last dimension.

    >>> import layerflow as tf
    >>> tf.sets.difference([[1, 2, 3]], [[2, 5]]).values.numpy().tolist()
    [1, 3]
    >>> tf.sets.difference([[1, 2, 3]], [[2, 5]], aminusb=False).values.numpy().tolist()
    [5]
    """
    how = "a-b" if aminusb else "b-a"
    return _set_operation(a, b, how, validate_indices, "tf.sets.difference")


def size(a: Any, validate_indices: bool = True) -> Any:
    """The number of unique values in each set of the sparse tensor `a` (int32, shaped as `a`
    without its last dimension). As TF, only sparse input is accepted.

    >>> import layerflow as tf
    >>> st = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 1, 3], [3, 3])
    >>> tf.sets.size(st).numpy().tolist()
    [1, 1, 0]
    """
    if not _is_sparse(a):
        raise TypeError(
            f"tf.sets.size: expected a SparseTensor, got {type(a).__name__}. For a dense tensor "
            "whose last dimension holds the sets, count the unique values of each row instead."
        )
    groups = _Groups(a, "a", "tf.sets.size", validate_indices)
    counts = np.array([len(s) for s in groups.sets], np.int32).reshape(groups.group_shape)
    return constant(counts)


# TF 1 names, still exported by TF (tf.compat.v1.sets).
set_union = union
set_intersection = intersection
set_difference = difference
set_size = size
