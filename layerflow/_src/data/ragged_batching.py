"""Ragged elements in `tf.data`: `from_tensor_slices` of a RaggedTensor (its rows) and `batch`
of ragged components (`Dataset.ragged_batch` and `sparse_batch` are in composite_batching).

- Slicing a RaggedTensor yields its rows (dense Tensors for ragged rank 1, RaggedTensors
  deeper); the element spec is a `RaggedTensorSpec` of one less ragged rank, as TF's, and
  `batch` turns such components back into RaggedTensors.

Import cycle, as for every node module: these nodes subclass `Dataset` (dataset), which
constructs them (`from_tensor_slices`, and `batch` in batching); composite_batching's nodes
(built by dataset_methods) use the same spec helpers; the rest of the cycle (sources,
transforms, transforms_extra, persistence, records, resample) is dataset.py's own.

>>> import layerflow as tf
>>> ds = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1, 2], [3]])).batch(2)
>>> [b.to_list() for b in ds]
[[[1, 2], [3]]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.data import sparse_elements, structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.sparse_tensor import SparseTensor, SparseTensorSpec
from layerflow._src.framework.type_spec import TensorSpec
from layerflow._src.ops import array_ops
from layerflow._src.ops.ragged.ragged_dispatch import _concat0
from layerflow._src.ops.ragged.ragged_spec import RaggedTensorSpec
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.utils import nest


def has_ragged(value: Any) -> bool:
    return any(isinstance(v, RaggedTensor) for v in nest.flatten(value))


def has_composite(value: Any) -> bool:
    """Whether `value` holds RaggedTensors or SparseTensors (batched by `batch_with_ragged`)."""
    return any(isinstance(v, RaggedTensor | SparseTensor) for v in nest.flatten(value))


def _normalize(value: Any) -> Any:
    if isinstance(value, tuple):
        items = [_normalize(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, RaggedTensor):
        return value
    return structure.normalize(value)


def stack_ragged(rows: list[Any], row_splits_dtype: Any = "int64") -> RaggedTensor:
    """Rows (Tensors of rank >= 1 or RaggedTensors) as one RaggedTensor, one row each."""
    if all(isinstance(r, RaggedTensor) for r in rows):
        ragged_ranks = {r.ragged_rank for r in rows}
        if len(ragged_ranks) > 1:
            raise errors.InvalidArgumentError(
                None, "batch", f"Cannot batch RaggedTensors of ragged ranks {sorted(ragged_ranks)}."
            )
        values: Any = _concat0(rows)
        lengths = [r.nrows_int() for r in rows]
    else:
        dense = [r for r in rows if not isinstance(r, RaggedTensor)]
        if len(dense) != len(rows) or any(r.shape.rank == 0 for r in dense):
            raise errors.InvalidArgumentError(
                None, "batch", "Cannot batch scalars with RaggedTensors, or ragged with dense "
                "elements of another rank, into one RaggedTensor.",
            )  # fmt: skip
        inner = {tuple(r.shape.as_list()[1:]) for r in dense}
        if len(inner) > 1:  # inner dimensions differ too: every dimension becomes ragged
            rank = dense[0].shape.rank
            rows = [RaggedTensor.from_tensor(r[None], ragged_rank=rank)[0] if rank > 1 else r
                    for r in dense]  # fmt: skip
            return stack_ragged(rows, row_splits_dtype)
        values = array_ops.concat(dense, 0)
        lengths = [int(r.shape[0]) for r in dense]
    dt = dtypes.as_dtype(row_splits_dtype)
    out = RaggedTensor.from_row_lengths(values, np.asarray(lengths, np.int64), validate=False)
    return out.with_row_splits_dtype(dt) if dt != out.row_splits_dtype else out


def batch_with_ragged(elements: list[Any], ragged: list[bool], row_splits_dtype: Any) -> Any:
    """Batch a list of same-structure elements; components marked `ragged` (or holding
    RaggedTensors) become RaggedTensors, the others are stacked."""
    from layerflow._src.data.batching import stack_elements

    rows = [structure.flatten(e) for e in elements]
    out = []
    for c in range(len(rows[0])):
        column = [row[c] for row in rows]
        if isinstance(column[0], SparseTensor):
            out.append(sparse_elements.stack_sparse(column))
        elif (c < len(ragged) and ragged[c]) or any(isinstance(v, RaggedTensor) for v in column):
            out.append(stack_ragged(column, row_splits_dtype))
        else:
            out.append(stack_elements(column))
    return structure.pack(elements[0], out)


def batched_spec(
    spec: Any, lead: Any, ragged: bool = False, row_splits_dtype: Any = "int64"
) -> Any:
    if isinstance(spec, SparseTensorSpec):
        return sparse_elements.batched_spec(spec, lead)
    if isinstance(spec, RaggedTensorSpec):
        return RaggedTensorSpec([lead, *spec.shape], spec.dtype, spec.ragged_rank + 1,
                                spec.row_splits_dtype)  # fmt: skip
    if ragged and spec.shape.rank:
        shape = [lead, None, *spec.shape.as_list()[1:]]
        return RaggedTensorSpec(shape, spec.dtype, 1, row_splits_dtype)
    return TensorSpec([lead, *spec.shape], spec.dtype)


def ragged_flags(dataset: Dataset) -> list[bool]:
    """Which components of `dataset`'s elements are rows of a RaggedTensor, found without
    computing an element: through nodes that keep their input's spec (shuffle, take, repeat,
    prefetch, ...) down to a `RaggedSliceDataset`; [] when there is none."""
    from layerflow._src.data.transforms import _Unary

    node: Any = dataset
    while isinstance(node, _Unary) and type(node)._element_spec is _Unary._element_spec:
        node = node._input
    if not isinstance(node, RaggedSliceDataset):
        return []
    return [isinstance(s, RaggedTensorSpec) for s in nest.flatten(node.element_spec)]


# --- sources ---------------------------------------------------------------------------------


class RaggedSliceDataset(Dataset):
    """`from_tensor_slices` of a structure holding RaggedTensors: one row of each per element."""

    def __init__(self, tensors: Any) -> None:
        element = _normalize(tensors)
        leaves = nest.flatten(element)
        rows = {int(t.nrows_int()) if isinstance(t, RaggedTensor) else int(t.shape[0])
                for t in leaves}  # fmt: skip
        if len(rows) > 1:
            raise ValueError(
                "from_tensor_slices: all components must have the same size in their first "
                f"dimension, got {sorted(rows)}."
            )
        self._structure = element
        self._leaves = leaves
        self._rows = rows.pop()

    def _elements(self) -> Iterator[Any]:
        for i in range(self._rows):
            yield structure.pack(self._structure, [t[i] for t in self._leaves])

    def _cardinality(self) -> int:
        return self._rows

    def _element_spec(self) -> Any:
        def spec(t: Any) -> Any:
            if isinstance(t, RaggedTensor):
                return RaggedTensorSpec(t.shape[1:], t.dtype, t.ragged_rank - 1,
                                        t.row_splits_dtype)  # fmt: skip
            return TensorSpec(t.shape[1:], t.dtype)

        return nest.map_structure(spec, self._structure)


# --- ragged_batch and sparse_batch ----------------------------------------------------------------
