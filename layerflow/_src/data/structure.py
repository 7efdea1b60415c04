"""Elements of a dataset: nested tuples/dicts of Tensors, their specs, and calling user functions.

TF's data rules differ from `tf.nest` in one place: a Python *list* is a tensor (it is converted),
not a structure. Only tuples (namedtuples too) and dicts nest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import composite_dispatch
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.type_spec import TensorSpec  # noqa: F401 - data specs use it
from layerflow._src.utils import nest


def is_structure(value: Any) -> bool:
    return isinstance(value, tuple | Mapping)


def normalize(value: Any, copy_arrays: bool = True) -> Any:
    """Tuples and dicts kept, everything else turned into a Tensor (lists become tensors).

    NumPy arrays are copied so that later changes to the caller's array do not leak into the
    dataset (TF copies too).
    """
    if isinstance(value, tuple):
        items = [normalize(v, copy_arrays) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, Mapping):
        return {k: normalize(v, copy_arrays) for k, v in value.items()}
    if type(value) is Tensor or isinstance(value, (SparseTensor, *composite_dispatch.types[0])):
        # composite tensors (tf.io.parse_example's results; RaggedTensor once loaded) are
        # elements as they are
        return value
    if isinstance(value, np.ndarray) and copy_arrays:
        value = np.array(value)
    return convert_to_tensor(value)


def normalize_output(value: Any) -> Any:
    """What a `map` function returned, as an element: lists become tuples, as in TF."""
    if isinstance(value, list):
        value = tuple(value)
    return normalize(value, copy_arrays=False)


def flatten(element: Any) -> list[Any]:
    return nest.flatten(element)


def pack(structure: Any, leaves: list[Any]) -> Any:
    if not is_structure(structure):
        return leaves[0]
    return nest.pack_sequence_as(structure, leaves)


def call(fn: Callable[..., Any], element: Any) -> Any:
    """Call a user function on an element: a plain tuple is unpacked into arguments (TF's rule)."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


def spec_of(element: Any) -> Any:
    return nest.map_structure(
        lambda t: t._type_spec if isinstance(t, SparseTensor) else TensorSpec(t.shape, t.dtype),
        element,
    )


def to_numpy(element: Any) -> Any:
    return nest.map_structure(lambda t: t.numpy(), element)


def wrap(array: Any, device: backend.Device) -> Tensor:
    return Tensor(array, device)


def describe(element: Any) -> str:
    """A short description of an element for error messages."""
    leaves = flatten(element)
    parts = [
        f"{t.dtype.name}{tuple(t.shape)}" if isinstance(t, TensorLike) else type(t).__name__
        for t in leaves
    ]
    return ", ".join(parts)
