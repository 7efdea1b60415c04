"""`Dataset.ragged_batch` and `Dataset.sparse_batch`: batches of elements whose shapes differ,
as RaggedTensors or SparseTensors.

`ragged_batch`: each component whose elements differ in shape becomes a RaggedTensor (ragged in
its first dimension when the inner dimensions agree, in every dimension otherwise); a component
whose element spec has an unknown dimension is ragged in every batch, and once a component has
been ragged in a pass it stays ragged for the rest of the pass, so the type of a component does
not change from batch to batch. Components of one shape batch into dense tensors, as in TF.
(TF decides from the element spec alone; layerflow's `map` takes its spec from the first
element, so the shapes seen complete it.)

`sparse_batch`: each element, a tensor of rank len(row_shape) no larger than `row_shape`, becomes
row i of a SparseTensor of dense shape [batch, *row_shape] holding every entry of the element
(zeros included, as in TF); an unknown dimension of `row_shape` takes the largest of the batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import structure
from layerflow._src.data.batching import stack_elements
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.transforms import _Unary
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.sparse_tensor import SparseTensor, SparseTensorSpec
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.ragged.ragged_spec import RaggedTensorSpec
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor


def _batched_cardinality(n: int, size: int, drop: bool) -> int:
    if n < 0:
        return n
    return n // size if drop else -(-n // size)


def _ragged(comps: list[Tensor], splits_dtype: Any) -> RaggedTensor:
    """A RaggedTensor whose row i is comps[i]."""
    device = comps[0]._device
    inner = {tuple(t._data.shape[1:]) for t in comps}
    if len(inner) == 1:  # ragged in the first dimension only
        lengths = [t._data.shape[0] for t in comps]
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(splits_dtype.np)
        values = device.xp.concatenate([t._data for t in comps], axis=0)
        return RaggedTensor.from_row_splits(Tensor(values, device), splits, validate=False)
    from layerflow._src.ops.ragged.ragged_ops import constant

    rows = [backend.to_host(t._data).tolist() for t in comps]
    rank = comps[0]._data.ndim
    return constant(rows, dtype=comps[0].dtype, ragged_rank=rank, row_splits_dtype=splits_dtype)


class RaggedBatchDataset(_Unary):
    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool,
                 row_splits_dtype: Any) -> None:  # fmt: skip
        super().__init__(input_dataset)
        self._batch_size = batch_size
        self._drop = drop_remainder
        self._splits_dtype = row_splits_dtype

    def _elements(self) -> Iterator[Any]:
        it = self._input._elements()
        ragged: list[bool] | None = None
        while True:
            group = list(itertools.islice(it, self._batch_size))
            if not group or (self._drop and len(group) < self._batch_size):
                return
            rows = [structure.flatten(e) for e in group]
            if ragged is None:
                try:
                    spec = structure.flatten(self._input.element_spec)
                    ragged = [s.shape.rank is None or None in s.shape.as_list() for s in spec]
                except ValueError:
                    ragged = [False] * len(rows[0])
            out = []
            for c in range(len(rows[0])):
                comps = [row[c] for row in rows]
                if comps[0]._data.ndim == 0:
                    out.append(stack_elements(comps))
                    continue
                if len({tuple(t._data.shape) for t in comps}) > 1:
                    ragged[c] = True
                if ragged[c]:
                    ranks = {t._data.ndim for t in comps}
                    if len(ranks) > 1:
                        raise errors.InvalidArgumentError(
                            None, "ragged_batch",
                            f"ragged_batch: component {c} has elements of different ranks "
                            f"{sorted(ranks)}; a RaggedTensor's rows share one rank.",
                        )  # fmt: skip
                    out.append(_ragged(comps, self._splits_dtype))
                else:
                    out.append(stack_elements(comps))
            yield structure.pack(group[0], out)

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch_size, self._drop)

    def _element_spec(self) -> Any:
        # From the first batch (as layerflow's other specs come from data): RaggedTensor
        # components get a RaggedTensorSpec, dense ones a TensorSpec; the batch dimension is
        # known only with drop_remainder.
        lead = self._batch_size if self._drop else None
        for element in self._elements():

            def spec(t: Any) -> Any:
                if isinstance(t, RaggedTensor):
                    shape = [lead, *[None] * t.ragged_rank, *t.flat_values.shape[1:]]
                    return RaggedTensorSpec(shape, t.dtype, t.ragged_rank, t.row_splits_dtype)
                return structure.TensorSpec([lead, *t.shape[1:]], t.dtype)

            return structure.pack(element, [spec(t) for t in structure.flatten(element)])
        raise ValueError("The element_spec of this ragged_batch dataset is not known: it is empty.")


class SparseBatchDataset(_Unary):
    def __init__(self, input_dataset: Dataset, batch_size: int, row_shape: list) -> None:
        super().__init__(input_dataset)
        self._batch_size = batch_size
        self._row_shape = row_shape

    def _elements(self) -> Iterator[Any]:
        it = self._input._elements()
        want = self._row_shape
        while True:
            group = list(itertools.islice(it, self._batch_size))
            if not group:
                return
            tensors = []
            for e in group:
                leaves = structure.flatten(e)
                if len(leaves) != 1:
                    raise TypeError(
                        "sparse_batch takes a dataset of single tensors, got elements of "
                        f"{len(leaves)} components ({structure.describe(e)})."
                    )
                t = leaves[0]
                shape = list(t._data.shape)
                if len(shape) != len(want):
                    raise errors.InvalidArgumentError(
                        None, "sparse_batch",
                        f"Input element had shape ({shape}) that is incompatible with the row "
                        f"shape ({want}).",
                    )  # fmt: skip
                if any(w is not None and d > w for d, w in zip(shape, want)):
                    raise errors.DataLossError(
                        None, "sparse_batch",
                        f"Input element had shape ({shape}) that is larger than the row shape "
                        f"({want}).",
                    )  # fmt: skip
                tensors.append(t)
            yield self._sparse(tensors)

    def _sparse(self, tensors: list[Tensor]) -> SparseTensor:
        device = tensors[0]._device
        rank = len(self._row_shape)
        dense = [
            w if w is not None else max([t._data.shape[i] for t in tensors], default=0)
            for i, w in enumerate(self._row_shape)
        ]
        index_parts, value_parts = [], []
        for k, t in enumerate(tensors):
            shape = t._data.shape
            idx = np.indices(shape).reshape(rank, -1).T if rank else np.zeros((1, 0), int)
            index_parts.append(np.concatenate([np.full((idx.shape[0], 1), k), idx], axis=1))
            value_parts.append(backend.to_host(t._data).reshape(-1))
        indices = np.concatenate(index_parts).astype(np.int64)
        values = np.concatenate(value_parts).astype(tensors[0]._data.dtype, copy=False)
        return SparseTensor(
            Tensor(backend.to_device(indices, device), device),
            Tensor(backend.to_device(values, device), device),
            np.asarray([len(tensors), *dense], np.int64),
        )

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch_size, False)

    def _element_spec(self) -> Any:
        dtype = structure.flatten(self._input.element_spec)[0].dtype
        return SparseTensorSpec([None, *self._row_shape], dtype)


def row_shape_arg(row_shape: Any) -> list:
    """`row_shape` as a list of ints and None (TF's checks)."""
    if isinstance(row_shape, TensorShape):
        dims = row_shape.as_list() if row_shape.rank is not None else None
    else:
        try:
            dims = [None if d is None else int(d) for d in np.asarray(row_shape, object).ravel()]
        except (TypeError, ValueError):
            dims = None
    if dims is None:
        raise ValueError(
            f"sparse_batch: row_shape must be a list of dimensions (ints or None), got "
            f"{row_shape!r}."
        )
    for d in dims:
        if d is not None and d < 0:
            raise ValueError(f"Dimension {d} must be >= 0")
    return dims


def splits_dtype_arg(row_splits_dtype: Any) -> Any:
    dt = dtypes.as_dtype(row_splits_dtype)
    if dt not in (dtypes.int32, dtypes.int64):
        raise ValueError(f"row_splits_dtype must be tf.int32 or tf.int64, got {dt.name}.")
    return dt


__all__ = ["RaggedBatchDataset", "SparseBatchDataset"]
