"""Batching: `batch` (sliced in bulk on the in-memory fast path), `padded_batch`, `unbatch`."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import INFINITE, UNKNOWN
from layerflow._src.data.transforms import _Unary
from layerflow._src.framework import errors
from layerflow._src.framework.sparse_tensor import SparseTensor, SparseTensorSpec
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.utils import nest

# --- batch / unbatch -----------------------------------------------------------------------------


def stack_elements(elements: list[Any]) -> Any:
    """Stack a list of same-structure elements into one batched element."""
    rows = [structure.flatten(e) for e in elements]
    first = rows[0]
    out = []
    for c, head in enumerate(first):
        arrays = []
        for k, row in enumerate(rows):
            a = row[c]._data
            if a.shape != head._data.shape or a.dtype != head._data.dtype:
                raise errors.InvalidArgumentError(
                    None, "batch",
                    f"Cannot batch tensors with different shapes or dtypes in component {c}. "
                    f"First element had {head.dtype.name} shape {list(head._data.shape)} and "
                    f"element {k} had {row[c].dtype.name} shape {list(a.shape)}. Make the "
                    "elements the same shape (e.g. resize or pad them in a map) before batching.",
                )  # fmt: skip
            arrays.append(a)
        device = head._device
        out.append(Tensor(device.xp.stack(arrays), device))
    return structure.pack(elements[0], out)


class BatchDataset(_Unary):
    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool) -> None:
        super().__init__(input_dataset)
        self._batch_size = batch_size
        self._drop = drop_remainder

    def _elements(self) -> Iterator[Any]:
        plan = self._input._plan()
        if plan is not None:
            return plan.batches(self._batch_size, self._drop)
        return self._generic()

    def _generic(self) -> Iterator[Any]:
        it = self._input._elements()
        ragged = ragged_batching.ragged_flags(self._input)  # rows of a RaggedTensor
        while True:
            group = list(itertools.islice(it, self._batch_size))
            if not group or (self._drop and len(group) < self._batch_size):
                return
            if any(ragged) or ragged_batching.has_composite(group[0]):
                yield ragged_batching.batch_with_ragged(group, ragged, "int64")
            else:
                yield stack_elements(group)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return n // self._batch_size if self._drop else -(-n // self._batch_size)

    def _element_spec(self) -> Any:
        lead = self._batch_size if self._drop else None
        if self._input._cardinality() == INFINITE:
            lead = self._batch_size
        return nest.map_structure(
            lambda s: ragged_batching.batched_spec(s, lead), self._input.element_spec
        )


class PaddedBatchDataset(BatchDataset):
    """`padded_batch`: like `batch`, padding each component up to `padded_shapes` (a None or -1
    dimension pads to the longest element of the batch) with `padding_values` (default 0)."""

    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool,
                 padded_shapes: Any, padding_values: Any) -> None:  # fmt: skip
        super().__init__(input_dataset, batch_size, drop_remainder)
        for spec in nest.flatten(input_dataset.element_spec):
            if isinstance(spec, SparseTensorSpec):
                raise TypeError(
                    "`padded_batch` is only supported for datasets that produce tensor elements "
                    "but type spec of elements in the input dataset is not a subclass of "
                    f"TensorSpec: `{spec}`. Batch SparseTensors with `batch` (which takes the "
                    "largest dense shape of the batch)."
                )
        self._shapes = padded_shapes
        self._values = padding_values

    def _per_component(self, arg: Any, n: int, what: str) -> list[Any]:
        if arg is None:
            return [None] * n
        template = self._input.element_spec
        if not structure.is_structure(template):
            return [arg]
        if what == "padding_values" and not structure.is_structure(arg):
            return [arg] * n
        leaves = nest.flatten(arg) if what == "padding_values" else _shape_leaves(arg)
        if len(leaves) != n:
            raise ValueError(
                f"padded_batch: {what} must match the element structure ({n} components), "
                f"got {arg!r}."
            )
        return leaves

    def _elements(self) -> Iterator[Any]:
        it = self._input._elements()
        while True:
            group = list(itertools.islice(it, self._batch_size))
            if not group or (self._drop and len(group) < self._batch_size):
                return
            yield self._pad(group)

    def _pad(self, group: list[Any]) -> Any:
        rows = [structure.flatten(e) for e in group]
        n = len(rows[0])
        shapes = self._per_component(self._shapes, n, "padded_shapes")
        values = self._per_component(self._values, n, "padding_values")
        out = []
        for c in range(n):
            parts = [row[c] for row in rows]
            head = parts[0]
            ranks = {p.ndim for p in parts}
            if len(ranks) != 1:
                raise errors.InvalidArgumentError(
                    None, "padded_batch",
                    f"padded_batch: component {c} has elements of different ranks {sorted(ranks)}.",
                )  # fmt: skip
            longest = [max(p._data.shape[d] for p in parts) for d in range(head.ndim)]
            wanted = shapes[c]
            if wanted is None:
                target = longest
            else:
                wanted = list(wanted)
                if len(wanted) != head.ndim:
                    raise ValueError(
                        f"padded_batch: padded_shapes for component {c} is {wanted}, but its "
                        f"elements have rank {head.ndim}."
                    )
                target = [m if w in (None, -1) else int(w) for w, m in zip(wanted, longest)]
                for w, m, d in zip(target, longest, range(head.ndim)):
                    if m > w:
                        raise errors.InvalidArgumentError(
                            None, "padded_batch",
                            f"padded_batch: an element of component {c} has size {m} in "
                            f"dimension {d}, larger than the padded size {w}.",
                        )  # fmt: skip
            device = head._device
            fill = 0 if values[c] is None else values[c]
            if isinstance(fill, TensorLike):
                fill = fill.numpy()
            batch = device.xp.full([len(parts), *target], fill, dtype=head._data.dtype)
            for i, p in enumerate(parts):
                batch[(i, *(slice(0, k) for k in p._data.shape))] = p._data
            out.append(Tensor(batch, device))
        return structure.pack(group[0], out)

    def _element_spec(self) -> Any:
        lead = self._batch_size if self._drop else None
        specs = nest.flatten(self._input.element_spec)
        shapes = self._per_component(self._shapes, len(specs), "padded_shapes")
        padded = [
            structure.TensorSpec(
                [lead, *([None] * len(s.shape) if w is None
                         else [None if d in (None, -1) else int(d) for d in w])], s.dtype)
            for s, w in zip(specs, shapes)
        ]  # fmt: skip
        return structure.pack(self._input.element_spec, padded)


def _shape_leaves(shapes: Any) -> list[Any]:
    """Shapes are tuples/lists of dims, so flatten a structure of them by hand."""
    if isinstance(shapes, dict):
        return [leaf for k in sorted(shapes) for leaf in _shape_leaves(shapes[k])]
    if (
        isinstance(shapes, tuple | list)
        and shapes
        and all(
            isinstance(s, tuple | list | dict) or s is None or hasattr(s, "as_list") for s in shapes
        )
    ):
        return [leaf for s in shapes for leaf in _shape_leaves(s)]
    return [shapes]


class UnbatchDataset(_Unary):
    def _generic(self) -> Iterator[Any]:
        for element in self._input._elements():
            leaves = structure.flatten(element)
            if ragged_batching.has_composite(element):  # SparseTensors split into their rows
                columns = [sparse_elements.unbatch_rows(t) if isinstance(t, SparseTensor)
                           else t for t in leaves]  # fmt: skip
                sizes = {len(c) if isinstance(c, list) else c.shape[0] if c.shape.rank else None
                         for c in columns}  # fmt: skip
                if None in sizes or len(sizes) != 1:
                    raise errors.InvalidArgumentError(
                        None, "unbatch",
                        "unbatch needs every component to have the same first dimension, got "
                        f"{sorted(map(str, sizes))}.",
                    )  # fmt: skip
                for i in range(sizes.pop()):
                    yield structure.pack(element, [c[i] for c in columns])
                continue
            sizes = {t._data.shape[0] if t._data.ndim else None for t in leaves}
            if None in sizes or len(sizes) != 1:
                raise errors.InvalidArgumentError(
                    None, "unbatch",
                    "unbatch needs every component to have the same first dimension, got "
                    f"{structure.describe(element)}.",
                )  # fmt: skip
            for i in range(sizes.pop()):
                yield structure.pack(element, [Tensor(t._data[i, ...], t._device) for t in leaves])

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return n if n in (0, INFINITE) else UNKNOWN

    def _element_spec(self) -> Any:
        return nest.map_structure(
            lambda s: sparse_elements.unbatched_spec(s) if isinstance(s, SparseTensorSpec)
            else structure.TensorSpec(s.shape[1:], s.dtype), self._input.element_spec,
        )  # fmt: skip


# ragged_batching subclasses BatchDataset: imported last (as dataset.py imports its nodes).
from layerflow._src.data import ragged_batching, sparse_elements  # noqa: E402
