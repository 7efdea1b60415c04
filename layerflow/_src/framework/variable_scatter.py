"""`Variable.scatter_*`: sparse in-place updates of a variable's rows from a `tf.IndexedSlices`,
and `scatter_nd_add/sub`, `batch_scatter_update`.

Every write goes through `Variable._update` (the one in-place entry), so a mirrored variable
updates every replica. Everything is checked before the write: bad input leaves the variable
unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.indexed_slices import IndexedSlices
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape


def _set(array: Any, index: Any, values: Any) -> None:
    array[index] = values  # with duplicate indices the last write wins, as TF's CPU kernel


def _ufunc_at(name: str) -> Any:
    def apply(array: Any, index: Any, values: Any) -> None:
        xp = backend.array_device(array).xp
        getattr(xp, name).at(array, index, values)

    return apply


def _divide(array: Any, index: Any, values: Any) -> None:
    xp = backend.array_device(array).xp
    if array.dtype.kind in "iu":
        # Integer division truncates toward zero in TF; apply duplicates one after another.
        for i in range(len(index[0]) if isinstance(index, tuple) else len(index)):
            at = tuple(int(ix[i]) for ix in index) if isinstance(index, tuple) else int(index[i])
            array[at] = xp.trunc(array[at] / values[i]).astype(array.dtype)
        return
    xp.divide.at(array, index, values)


_KINDS = {
    "update": _set,
    "add": _ufunc_at("add"),
    "sub": _ufunc_at("subtract"),
    "mul": _ufunc_at("multiply"),
    "div": _divide,
    "max": _ufunc_at("maximum"),
    "min": _ufunc_at("minimum"),
}


class ScatterMethods:
    """The sparse update methods of `tf.Variable` (mixed into it)."""

    __slots__ = ()
    _data: Any
    _name: str
    _device: Any
    dtype: Any
    _update: Any

    def _scatter(self, kind: str, sparse_delta: Any, what: str) -> Any:
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(
                f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: "
                f"{sparse_delta!r}"
            )
        values = self._checked_values(sparse_delta.values, what)
        idx = backend.to_host(sparse_delta.indices._data)
        rows = self._data.shape[0] if self._data.ndim else 0
        wanted = tuple(idx.shape) + tuple(self._data.shape[1:])
        if tuple(values.shape) != wanted:
            raise errors.InvalidArgumentError(
                None,
                what,
                f"{what}: variable '{self._name}' of shape {TensorShape(self._data.shape)} needs "
                f"updates of shape indices.shape + variable.shape[1:] = {TensorShape(wanted)}, "
                f"got {TensorShape(values.shape)}.",
            )
        _check_range(idx, rows, what)
        n = idx.size
        index = backend.to_device(idx.reshape(n).astype(np.int64), self._device)
        return self._update(_KINDS[kind], index, values.reshape((n, *self._data.shape[1:])))

    def _checked_values(self, value: Any, what: str) -> Any:
        tensor = value if isinstance(value, TensorLike) else convert_to_tensor(value, self.dtype)
        if tensor._data.dtype != self._data.dtype:
            raise ValueError(
                f"{what}: Tensor conversion requested dtype {self.dtype.name} for Tensor with "
                f"dtype {tensor.dtype.name}; cast the updates with tf.cast(..., "
                f"{self.dtype!r}) first."
            )
        data = tensor._data
        device = self._device
        return data if tensor._device is device else backend.to_device(data, device)

    def scatter_update(self, sparse_delta: Any, use_locking: bool = False,
                       name: str | None = None) -> Any:  # fmt: skip
        """`v[indices] = values` for an IndexedSlices `sparse_delta`; returns the variable.

        >>> import layerflow as tf
        >>> v = tf.Variable([0.0, 0.0, 0.0])
        >>> v.scatter_update(tf.IndexedSlices(tf.constant([5.0]), tf.constant([1]))).numpy()
        array([0., 5., 0.], dtype=float32)
        """
        return self._scatter("update", sparse_delta, "scatter_update")

    def scatter_add(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
        """`v[indices] += values` (duplicate indices add up)."""
        return self._scatter("add", sparse_delta, "scatter_add")

    def scatter_sub(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
        return self._scatter("sub", sparse_delta, "scatter_sub")

    def scatter_mul(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
        return self._scatter("mul", sparse_delta, "scatter_mul")

    def scatter_div(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
        return self._scatter("div", sparse_delta, "scatter_div")

    def scatter_max(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
        return self._scatter("max", sparse_delta, "scatter_max")

    def scatter_min(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Any:  # fmt: skip
        return self._scatter("min", sparse_delta, "scatter_min")

    def batch_scatter_update(self, sparse_delta: Any, use_locking: bool = False,
                             name: str | None = None) -> Any:  # fmt: skip
        """`v[b..., indices[b..., i]] = values[b..., i]`: the indices' leading dimensions are
        batch dimensions of the variable (TF's `batch_scatter_update`).

        >>> import layerflow as tf
        >>> v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
        >>> s = tf.IndexedSlices(tf.constant([[9.0], [8.0]]), tf.constant([[1], [0]]))
        >>> v.batch_scatter_update(s).numpy().tolist()
        [[1.0, 9.0], [8.0, 4.0]]
        """
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(
                f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: "
                f"{sparse_delta!r}"
            )
        idx = backend.to_host(sparse_delta.indices._data)
        batch = idx.ndim - 1
        if batch <= 0:
            return self.scatter_update(sparse_delta)
        what = "batch_scatter_update"
        values = self._checked_values(sparse_delta.values, what)
        shape = tuple(self._data.shape)
        wanted = tuple(idx.shape) + shape[batch + 1 :]
        if shape[:batch] != tuple(idx.shape[:batch]) or tuple(values.shape) != wanted:
            raise errors.InvalidArgumentError(
                None,
                what,
                f"{what}: variable '{self._name}' of shape {TensorShape(shape)} with indices of "
                f"shape {TensorShape(idx.shape)} needs the indices' leading dimensions to match "
                f"the variable's and updates of shape {TensorShape(wanted)}; got updates of "
                f"shape {TensorShape(values.shape)}.",
            )
        _check_range(idx, shape[batch], what)
        grids = np.meshgrid(*[np.arange(n) for n in idx.shape], indexing="ij")[:batch]
        index = tuple(backend.to_device(a.astype(np.int64), self._device) for a in (*grids, idx))
        return self._update(_set, index, values)

    def _scatter_nd(self, kind: str, indices: Any, updates: Any, what: str) -> Any:
        idx = backend.to_host(convert_to_tensor(indices)._data)
        if idx.dtype.kind not in "iu" or idx.ndim < 1:
            raise TypeError(f"{what}: indices must be an integer tensor of rank >= 1, got {idx!r}.")
        values = self._checked_values(updates, what)
        shape = tuple(self._data.shape)
        k = idx.shape[-1]
        wanted = tuple(idx.shape[:-1]) + shape[k:]
        if k > len(shape) or tuple(values.shape) != wanted:
            raise errors.InvalidArgumentError(
                None,
                what,
                f"{what}: variable '{self._name}' of shape {TensorShape(shape)} with indices of "
                f"shape {TensorShape(idx.shape)} needs updates of shape {TensorShape(wanted)}, "
                f"got {TensorShape(values.shape)}.",
            )
        flat = idx.reshape(-1, k)
        for axis in range(k):
            _check_range(flat[:, axis], shape[axis], what)
        index = tuple(
            backend.to_device(flat[:, a].astype(np.int64), self._device) for a in range(k)
        )
        rows = values.reshape((flat.shape[0],) + shape[k:])
        return self._update(_KINDS[kind], index, rows)

    def scatter_nd_add(self, indices: Any, updates: Any, name: str | None = None) -> Any:
        """`v[indices[i]] += updates[i]` for multi-indices in the last axis of `indices`."""
        return self._scatter_nd("add", indices, updates, "scatter_nd_add")

    def scatter_nd_sub(self, indices: Any, updates: Any, name: str | None = None) -> Any:
        return self._scatter_nd("sub", indices, updates, "scatter_nd_sub")


def _check_range(idx: np.ndarray, limit: int, what: str) -> None:
    flat = idx.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= limit))
    if bad.size:
        i = int(bad[0])
        raise errors.InvalidArgumentError(
            None, what, f"{what}: indices[{i}] = {int(flat[i])} is not in [0, {limit})"
        )
