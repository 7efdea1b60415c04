"""Sparse elements in `tf.data`: `from_tensor_slices` of a SparseTensor (its rows), and the
row/batch helpers that `batch`, `unbatch`, `concatenate` and `from_generator` use for
SparseTensor components.

- Slicing a SparseTensor of rank r >= 2 yields SparseTensors of rank r - 1 (dense shape
  `dense_shape[1:]` for every row, empty rows included); the element spec is a
  `SparseTensorSpec`, as TF's. The indices must be in canonical (row-major) order, as TF's
  `SerializeManySparse` requires.
- Batching SparseTensors of rank r gives one of rank r + 1 whose dense shape is the batch
  size followed by the largest dense shape of the batch in each dimension (TF's rule); the
  indices of row k are `[k, *index]`, so canonical rows give a canonical batch.

Import cycle, as for every node module: `SparseSliceDataset` subclasses `Dataset` (dataset),
which constructs it in `from_tensor_slices`; the batching nodes (batching, ragged_batching)
and sources (concatenate, from_generator) call the helpers here; the rest of the cycle
(composite_batching, dataset_methods, persistence, records, resample, transforms,
transforms_extra) is dataset.py's own.

>>> import layerflow as tf
>>> st = tf.SparseTensor([[0, 1], [2, 0]], [1.0, 2.0], dense_shape=[3, 2])
>>> [r.values.numpy().tolist() for r in tf.data.Dataset.from_tensor_slices(st)]
[[1.0], [], [2.0]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.framework import errors
from layerflow._src.framework.sparse_tensor import SparseTensor, SparseTensorSpec
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.ragged.ragged_spec import RaggedTensorSpec
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.ops.sparse_ops import check_canonical
from layerflow._src.utils import nest


def has_sparse(value: Any) -> bool:
    return any(isinstance(v, SparseTensor) for v in nest.flatten(value))


def _normalize(value: Any) -> Any:
    if isinstance(value, tuple):
        items = [_normalize(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, SparseTensor | RaggedTensor):
        return value
    return structure.normalize(value)


def _check_order(indices: np.ndarray, shape: tuple[int, ...], opname: str) -> None:
    """TF's bounds/order/repeat checks, vectorized; the exact message comes from
    `check_canonical` (a per-index loop) only when something is wrong."""
    if indices.shape[0] == 0:
        return
    bad = bool(((indices < 0) | (indices >= np.asarray(shape, np.int64))).any())
    if not bad and indices.shape[0] > 1:
        order = np.lexsort(indices.T[::-1])
        keys_differ = (np.diff(indices, axis=0) != 0).any(axis=1).all()
        bad = not (np.array_equal(order, np.arange(indices.shape[0])) and keys_differ)
    if bad:
        check_canonical(indices, shape, opname)


class SparseRows:
    """The rows of one SparseTensor along its first dimension, split once on the host."""

    def __init__(self, st: SparseTensor, opname: str) -> None:
        shape = st.host_shape()
        if not shape:
            raise ValueError(
                "Unbatching a sparse tensor is only supported for rank >= 1. Obtained input: "
                f"{st}. Give from_tensor_slices a SparseTensor of rank >= 2."
            )
        if len(shape) < 2:
            raise errors.InvalidArgumentError(
                None, opname,
                f"Rank of input SparseTensor should be > 1, but saw rank: {len(shape)}. "
                "Slicing a SparseTensor yields SparseTensors of one rank less; reshape it "
                "(tf.sparse.reshape) to [n, ...] first.",
            )  # fmt: skip
        indices = st.host_indices()
        _check_order(indices, shape, opname)
        self.nrows = shape[0]
        self._bounds = np.searchsorted(indices[:, 0], np.arange(shape[0] + 1))
        self._indices = indices[:, 1:]
        self._values = st.values
        self._device = st.values._device
        self._inner = np.asarray(shape[1:], np.int64)

    def row(self, i: int) -> SparseTensor:
        a, b = int(self._bounds[i]), int(self._bounds[i + 1])
        device = self._device
        indices = Tensor(backend.to_device(np.ascontiguousarray(self._indices[a:b]), device),
                         device)  # fmt: skip
        values = Tensor(self._values._data[a:b], device)
        return SparseTensor(indices, values, self._inner)


class SparseRowSource(SparseRows):
    """A SparseTensor that batches are sliced from (Keras `fit(x=sparse, batch_size=...)`):
    `shape`/`ndim` as an array's, and `take(idx)` the rows `idx` (a slice or an index array,
    in that order) as one SparseTensor."""

    def __init__(self, st: SparseTensor) -> None:
        super().__init__(st, "fit")
        self.shape = (self.nrows, *self._inner.tolist())
        self.ndim = len(self.shape)

    def __getitem__(self, idx: slice) -> SparseTensor:
        return self.take(idx)

    def take(self, idx: Any) -> SparseTensor:
        rows = np.arange(self.nrows)[idx] if isinstance(idx, slice) else np.asarray(idx)
        starts, ends = self._bounds[rows], self._bounds[rows + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        # positions of the entries of rows[0], rows[1], ... in the source, in that order
        offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        pick = offsets + np.arange(total)
        lead = np.repeat(np.arange(rows.shape[0]), lengths)[:, None]
        indices = np.concatenate([lead, self._indices[pick]], axis=1).astype(np.int64)
        device = self._device
        values = self._values._data[backend.to_device(pick, device)]
        return SparseTensor(
            Tensor(backend.to_device(indices, device), device),
            Tensor(values, device),
            np.asarray([rows.shape[0], *self._inner.tolist()], np.int64),
        )


def unbatch_rows(st: SparseTensor) -> list[SparseTensor]:
    """The rows of `st` (for `unbatch`)."""
    rows = SparseRows(st, "unbatch")
    return [rows.row(i) for i in range(rows.nrows)]


def stack_sparse(rows: list[Any]) -> SparseTensor:
    """SparseTensors of one rank as one SparseTensor of rank + 1, row k being rows[k]."""
    if not all(isinstance(r, SparseTensor) for r in rows):
        kinds = sorted({type(r).__name__ for r in rows})
        raise errors.InvalidArgumentError(
            None, "batch", f"Cannot batch SparseTensors with {', '.join(kinds)} in one component."
        )
    shapes = [r.host_shape() for r in rows]
    ranks = {len(s) for s in shapes}
    if len(ranks) > 1:
        raise errors.InvalidArgumentError(
            None, "batch",
            f"Cannot batch SparseTensors of different ranks {sorted(ranks)} in one component; "
            "reshape them to one rank (tf.sparse.reshape) before batching.",
        )  # fmt: skip
    rank = ranks.pop()
    dense = np.max(np.asarray(shapes, np.int64).reshape(len(rows), rank), axis=0)
    parts = []
    for k, r in enumerate(rows):
        idx = r.host_indices()
        parts.append(np.concatenate([np.full((idx.shape[0], 1), k, np.int64), idx], axis=1))
    device = rows[0].values._device
    xp = device.xp
    values = xp.concatenate([r.values._data for r in rows], axis=0)
    indices = np.concatenate(parts, axis=0) if parts else np.zeros((0, rank + 1), np.int64)
    return SparseTensor(
        Tensor(backend.to_device(indices, device), device),
        Tensor(values, device),
        np.asarray([len(rows), *dense.tolist()], np.int64),
    )


def batched_spec(spec: SparseTensorSpec, lead: Any) -> SparseTensorSpec:
    return SparseTensorSpec([lead, *spec.shape.as_list()], spec.dtype) if (
        spec.shape.rank is not None) else SparseTensorSpec(None, spec.dtype)  # fmt: skip


def unbatched_spec(spec: SparseTensorSpec) -> SparseTensorSpec:
    return SparseTensorSpec(spec.shape[1:] if spec.shape.rank else None, spec.dtype)


def merged_spec(a: Any, b: Any) -> Any:
    """The spec of `concatenate` for two sparse components (dimensions that differ unknown)."""
    if a.shape.rank is None or b.shape.rank is None or a.shape.rank != b.shape.rank:
        return SparseTensorSpec(None, a.dtype)
    dims = [x if x == y else None for x, y in zip(a.shape.as_list(), b.shape.as_list())]
    return SparseTensorSpec(dims, a.dtype)


def check_generated(value: Any, sig: SparseTensorSpec) -> SparseTensor:
    """A value a generator yielded for a `SparseTensorSpec` signature (TF's messages)."""
    if not isinstance(value, SparseTensor):
        raise errors.InvalidArgumentError(
            None, "from_generator",
            "TypeError: `generator` yielded an element that did not match the expected "
            f"structure. The expected structure was {sig}, but the yielded element was "
            f"{value!r}. Yield a tf.SparseTensor (or tf.sparse.from_dense(x)).",
        )  # fmt: skip
    if not sig.is_compatible_with(value):
        raise errors.InvalidArgumentError(
            None, "from_generator",
            f"TypeError: `generator` yielded an element of {value._type_spec} where an element "
            f"of {sig} was expected.",
        )  # fmt: skip
    return value


# --- source --------------------------------------------------------------------------------------


class SparseSliceDataset(Dataset):
    """`from_tensor_slices` of a structure holding SparseTensors: one row of each per element
    (dense and ragged components beside them give their rows too)."""

    def __init__(self, tensors: Any) -> None:
        element = _normalize(tensors)
        leaves = nest.flatten(element)
        sliced: list[Any] = []
        sizes = []
        for t in leaves:
            if isinstance(t, SparseTensor):
                rows = SparseRows(t, "from_tensor_slices")
                sliced.append(rows)
                sizes.append(rows.nrows)
            elif isinstance(t, RaggedTensor):
                sliced.append(t)
                sizes.append(int(t.nrows_int()))
            else:
                if t.shape.rank == 0:
                    raise ValueError(
                        "from_tensor_slices: a component is a scalar (shape ()); every "
                        "component needs a first dimension to slice along."
                    )
                sliced.append(t)
                sizes.append(int(t.shape[0]))
        if len(set(sizes)) > 1:
            raise ValueError(
                "from_tensor_slices: all components must have the same size in their first "
                f"dimension, got {sizes} (Dimensions {sizes[0]} and "
                f"{next(s for s in sizes if s != sizes[0])} are not compatible)."
            )
        self._structure = element
        self._sliced = sliced
        self._rows = sizes[0]

    def _elements(self) -> Iterator[Any]:
        for i in range(self._rows):
            leaves = [s.row(i) if isinstance(s, SparseRows) else s[i] for s in self._sliced]
            yield structure.pack(self._structure, leaves)

    def _cardinality(self) -> int:
        return self._rows

    def _element_spec(self) -> Any:
        def spec(t: Any) -> Any:
            if isinstance(t, SparseTensor):
                return SparseTensorSpec(TensorShape(t.host_shape()[1:]), t.dtype)
            if isinstance(t, RaggedTensor):
                return RaggedTensorSpec(t.shape[1:], t.dtype, t.ragged_rank - 1,
                                        t.row_splits_dtype)  # fmt: skip
            return structure.TensorSpec(t.shape[1:], t.dtype)

        return nest.map_structure(spec, self._structure)


def dense_to_sparse_batch(batch_size: Any, row_shape: Any) -> Any:
    """`tf.data.experimental.dense_to_sparse_batch`: `Dataset.sparse_batch` as a
    transformation for `Dataset.apply` (TF deprecates it in favour of the method).

    >>> import layerflow as tf
    >>> ds = tf.data.Dataset.range(1, 3).map(lambda n: tf.fill([n], n))
    >>> st = next(iter(ds.apply(tf.data.experimental.dense_to_sparse_batch(2, [3]))))
    >>> st.indices.numpy().tolist()
    [[0, 0], [1, 0], [1, 1]]
    """

    def _apply_fn(dataset: Dataset) -> Any:
        return dataset.sparse_batch(batch_size, row_shape)

    return _apply_fn
