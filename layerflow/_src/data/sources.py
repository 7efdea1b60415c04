"""Datasets that start a pipeline: slices of tensors, one tensor, ranges, zips, generators."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.data import sparse_elements, structure
from layerflow._src.data.dataset import Dataset, count_arg
from layerflow._src.data.plan import INFINITE, UNKNOWN, Plan
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor, host_array
from layerflow._src.framework.sparse_tensor import SparseTensorSpec
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.utils import nest

# Ranges up to this many values are materialized so that they get the batching fast path.
_RANGE_TABLE_LIMIT = 1 << 22


def _same_device(leaves: list[Tensor]) -> tuple[list[Any], backend.Device]:
    device = leaves[0]._device
    return [t._data if t._device is device else backend.to_device(
        backend.to_host(t._data), device) for t in leaves], device  # fmt: skip


class TensorSliceDataset(Dataset):
    """`Dataset.from_tensor_slices`: one element per row of every component."""

    def __init__(self, tensors: Any) -> None:
        if isinstance(tensors, Dataset):
            raise TypeError(
                "from_tensor_slices takes tensors, arrays or tuples/dicts of them, not a Dataset."
            )
        element = structure.normalize(tensors)
        leaves = structure.flatten(element)
        if not leaves:
            raise ValueError("from_tensor_slices needs at least one tensor, got an empty one.")
        for i, t in enumerate(leaves):
            if t.ndim == 0:
                raise ValueError(
                    f"from_tensor_slices: component {i} is a scalar (shape ()); every component "
                    "needs a first dimension to slice along. Use from_tensors for one element."
                )
        rows = {int(t.shape[0]) for t in leaves}
        if len(rows) > 1:
            shapes = ", ".join(str(tuple(t.shape)) for t in leaves)
            raise ValueError(
                "from_tensor_slices: all components must have the same size in their first "
                f"dimension, got shapes {shapes}."
            )
        self._structure = element
        self._columns, self._device = _same_device(leaves)
        self._rows = rows.pop()

    def _plan(self) -> Plan:
        n = self._rows

        def chunks() -> Iterator[slice]:
            if n:
                yield slice(0, n)

        return Plan(self._structure, self._columns, self._device, chunks, n)

    def _elements(self) -> Iterator[Any]:
        return self._plan().elements()

    def _cardinality(self) -> int:
        return self._rows

    def _element_spec(self) -> Any:
        return nest.map_structure(
            lambda t: structure.TensorSpec(t.shape[1:], t.dtype), self._structure
        )


class TensorDataset(Dataset):
    """`Dataset.from_tensors`: exactly one element."""

    def __init__(self, tensors: Any) -> None:
        self._element = structure.normalize(tensors)

    def _elements(self) -> Iterator[Any]:
        yield self._element

    def _cardinality(self) -> int:
        return 1

    def _element_spec(self) -> Any:
        return structure.spec_of(self._element)


class RangeDataset(Dataset):
    """`Dataset.range(stop)`, `range(start, stop[, step])`."""

    def __init__(self, args: tuple[Any, ...], dtype: dtypes.DType) -> None:
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range takes 1 to 3 arguments (start, stop, step), got {len(args)}.")
        nums = [count_arg(a, "range argument", -(2**63)) for a in args]
        if len(nums) == 1:
            nums = [0, nums[0]]
        start, stop, step = (nums + [1])[:3]
        if step == 0:
            raise errors.InvalidArgumentError(None, None, "range: step must not be 0.")
        self._range = range(start, stop, step)
        self._dtype = dtype
        self._device = backend.current_device()
        self._column = None
        if len(self._range) <= _RANGE_TABLE_LIMIT:
            column = np.arange(start, stop, step, dtype=dtype.np)
            self._column = backend.to_device(column, self._device)

    def _plan(self) -> Plan | None:
        if self._column is None:
            return None
        n = len(self._range)

        def chunks() -> Iterator[slice]:
            if n:
                yield slice(0, n)

        return Plan(None, [self._column], self._device, chunks, n)

    def _elements(self) -> Iterator[Any]:
        plan = self._plan()
        if plan is not None:
            yield from plan.elements()
            return
        xp, npd, device = self._device.xp, self._dtype.np, self._device
        for v in self._range:
            yield Tensor(xp.asarray(v, dtype=npd), device)

    def _cardinality(self) -> int:
        return len(self._range)

    def _element_spec(self) -> Any:
        return structure.TensorSpec((), self._dtype)


class ZipDataset(Dataset):
    """`Dataset.zip`: elements of several datasets side by side."""

    def __init__(self, datasets: Any) -> None:
        if isinstance(datasets, list):
            datasets = tuple(datasets)
        leaves = nest.flatten(datasets)
        for i, d in enumerate(leaves):
            if not isinstance(d, Dataset):
                raise TypeError(
                    f"zip takes datasets (or a tuple/dict of them); item {i} is a "
                    f"{type(d).__name__}."
                )
        self._structure = datasets
        self._inputs = leaves

    def _elements(self) -> Iterator[Any]:
        iterators = [d._elements() for d in self._inputs]
        for items in zip(*iterators):
            yield structure.pack(self._structure, list(items))

    def _cardinality(self) -> int:
        cards = [d._cardinality() for d in self._inputs]
        finite = [c for c in cards if c >= 0]
        if finite and (min(finite) == 0 or UNKNOWN not in cards):
            return min(finite)
        return UNKNOWN if UNKNOWN in cards else INFINITE

    def _element_spec(self) -> Any:
        return structure.pack(self._structure, [d.element_spec for d in self._inputs])


class ConcatenateDataset(Dataset):
    """`a.concatenate(b)`: the elements of `a`, then those of `b`."""

    def __init__(self, first: Dataset, second: Dataset) -> None:
        if not isinstance(second, Dataset):
            raise TypeError(f"concatenate takes a Dataset, got {type(second).__name__}.")
        a, b = first.element_spec, second.element_spec
        try:
            nest.assert_same_structure(a, b, check_types=False)
            same = all(x.dtype == y.dtype and isinstance(x, SparseTensorSpec) == isinstance(
                y, SparseTensorSpec) for x, y in zip(nest.flatten(a), nest.flatten(b)))  # fmt: skip
        except (ValueError, TypeError):
            same = False
        if not same:
            raise TypeError(
                f"concatenate: the two datasets have different element types: {a} vs {b}."
            )
        self._inputs = (first, second)

    def _elements(self) -> Iterator[Any]:
        for d in self._inputs:
            yield from d._elements()

    def _cardinality(self) -> int:
        a, b = (d._cardinality() for d in self._inputs)
        if INFINITE in (a, b):
            return INFINITE
        return UNKNOWN if UNKNOWN in (a, b) else a + b

    def _element_spec(self) -> Any:
        a, b = (nest.flatten(d.element_spec) for d in self._inputs)
        merged = [
            sparse_elements.merged_spec(x, y) if isinstance(x, SparseTensorSpec) else
            structure.TensorSpec(
                x.shape if tuple(x.shape) == tuple(y.shape) else
                ([None] * len(x.shape) if len(x.shape) == len(y.shape) else None), x.dtype)
            for x, y in zip(a, b)
        ]  # fmt: skip
        return structure.pack(self._inputs[0].element_spec, merged)


def _signature(types: Any, shapes: Any) -> Any:
    """TensorSpecs from `output_types` and `output_shapes` (a shape is a tuple, not a structure,
    so the walk follows the types)."""
    if isinstance(types, tuple | list):
        shapes = [None] * len(types) if shapes is None else shapes
        return tuple(_signature(t, s) for t, s in zip(types, shapes))
    if isinstance(types, dict):
        shapes = {} if shapes is None else shapes
        return {k: _signature(t, shapes.get(k)) for k, t in types.items()}
    return structure.TensorSpec(TensorShape(shapes), types)


class GeneratorDataset(Dataset):
    """`Dataset.from_generator`: elements from a fresh call of a Python generator per pass."""

    def __init__(self, generator: Callable[..., Any], args: Any, output_types: Any,
                 output_shapes: Any, output_signature: Any) -> None:  # fmt: skip
        if not callable(generator):
            raise TypeError(
                f"from_generator takes a callable that returns an iterator, got {generator!r}."
            )
        if output_signature is None and output_types is None:
            raise TypeError("from_generator needs output_signature (or output_types).")
        if output_signature is None:
            output_signature = _signature(output_types, output_shapes)
        self._signature = output_signature
        self._generator = generator
        self._args = () if args is None else tuple(args)

    def _convert(self, value: Any, sig: Any = None) -> Any:
        """`value` shaped by the signature: tuples/dicts follow it, anything else is a tensor."""
        sig = self._signature if sig is None else sig
        if isinstance(sig, tuple):
            if not isinstance(value, tuple | list) or len(value) != len(sig):
                raise self._mismatch(value)
            return tuple(self._convert(v, s) for v, s in zip(value, sig))
        if isinstance(sig, dict):
            if not isinstance(value, dict) or set(value) != set(sig):
                raise self._mismatch(value)
            return {k: self._convert(value[k], s) for k, s in sig.items()}
        if isinstance(sig, SparseTensorSpec):
            return sparse_elements.check_generated(value, sig)
        if isinstance(value, TensorLike):
            t = convert_to_tensor(value)
        else:  # TF's conversion rules: ints may become floats, floats never silently ints
            t = convert_to_tensor(host_array(np.asarray(value), sig.dtype))
        if t.dtype != sig.dtype or not sig.shape.is_compatible_with(t.shape):
            raise errors.InvalidArgumentError(
                None, None,
                f"from_generator: expected a value of {sig}, got {t.dtype.name} with shape "
                f"{tuple(t.shape)}.",
            )  # fmt: skip
        return t

    def _mismatch(self, value: Any) -> TypeError:
        return TypeError(
            f"from_generator: the generator yielded {value!r}, which does not match the "
            f"output signature {self._signature}."
        )

    def _elements(self) -> Iterator[Any]:
        for value in self._generator(*self._args):
            yield self._convert(value)

    def _element_spec(self) -> Any:
        return self._signature
