"""Input signatures of `tf.function` calls: what makes a trace reusable (TF's tracing rules).

A call's *key* describes each argument leaf: a tensor (or NumPy array) by its shape and dtype,
a Variable by identity, a hashable Python value by its value, any other object by identity.
A trace made for a key serves every call whose key it *covers*: same structure, same Python
values, same dtypes, and each shape equal where the trace's is known.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from layerflow._src.data.structure import TensorSpec
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import Variable
from layerflow._src.utils import nest


def is_tensor_value(value: Any) -> bool:
    return (
        isinstance(value, TensorLike)
        and not isinstance(value, Variable)
        or isinstance(value, np.ndarray)
    )


def leaf_key(value: Any) -> Any:
    if isinstance(value, TensorSpec):
        dims = None if value.shape.rank is None else tuple(value.shape.as_list())
        return ("T", dims, value.dtype.np.str)
    if isinstance(value, Variable):
        return ("V", id(value))
    if isinstance(value, TensorLike):
        return ("T", tuple(value._data.shape), value._data.dtype.str)
    if isinstance(value, np.ndarray):
        return ("T", value.shape, _np_dtype(value).str)
    try:
        hash(value)
    except TypeError:
        return ("O", _Identity(value))
    # By value, as TF's Literal types: f(1) and f(1.0) share a trace (1 == 1.0).
    return ("P", value)


class _Identity:
    """An unhashable argument in a call key: equal only to itself, and held by the key, so its
    id cannot pass to a new object while a trace keyed by it exists (a bare id could, and the
    new object would reuse a trace with the old one's values baked in)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def _np_dtype(value: np.ndarray) -> np.dtype:
    return value.dtype if value.dtype != np.float64 else np.dtype(np.float64)


def call_key(args: tuple, kwargs: dict) -> tuple:
    """The key of a call (see the module docstring)."""
    return call_key_and_leaves(args, kwargs)[0]


def call_key_and_leaves(args: tuple, kwargs: dict) -> tuple[tuple, list[Any]]:
    """The key of a call and its argument leaves. Positional tensors only (a training step's
    usual call) skip the structure walk."""
    if not kwargs:
        for a in args:
            if type(a) is not Tensor and type(a) is not np.ndarray:
                break
        else:
            # Tensors or NumPy arrays (a training loop's batches): shape and dtype alone.
            leaves = list(args)
            key = tuple([("T", tuple(a._data.shape), a._data.dtype.str) if type(a) is Tensor
                         else ("T", a.shape, a.dtype.str) for a in args])  # fmt: skip
            return (("flat", len(args)), key), leaves
    if not kwargs:
        # Plain tuples and lists of leaves (a compiled fit step's tuple of batches): one walk
        # gives the structure and the leaves.
        leaves = []
        try:
            picture = _plain_structure(args, leaves)
        except _NotPlain:
            pass
        else:
            flat = all(c is None for c in picture[1])
            structure = ("flat", len(args)) if flat else ("seq", picture)
            return (structure, tuple(_leaf_keys(leaves))), leaves
    leaves = nest.flatten((args, kwargs), expand_composites=True)
    flat = not kwargs and all(not nest.is_nested(a) and not nest.is_composite(a) for a in args)
    structure = (
        ("flat", len(args))
        if flat
        else repr(nest.map_structure(lambda _: 0, (args, kwargs), expand_composites=True))
    )
    return (structure, tuple(leaf_key(v) for v in leaves)), leaves


class _NotPlain(Exception):
    pass


def _plain_structure(value: Any, leaves: list[Any]) -> Any:
    """A hashable picture of nested plain tuples and lists (leaves appended in nest's order);
    `_NotPlain` for dicts, namedtuples and other nested types."""
    t = type(value)
    if t is tuple or t is list:
        return (t is list, tuple([_plain_structure(v, leaves) for v in value]))
    if nest.is_nested(value) or nest.is_composite(value):  # composites take nest's walk
        raise _NotPlain
    leaves.append(value)
    return None


def _leaf_keys(leaves: list[Any]) -> list[Any]:
    return [("T", tuple(v._data.shape), v._data.dtype.str) if type(v) is Tensor else leaf_key(v)
            for v in leaves]  # fmt: skip


def covers(trace_key: tuple, key: tuple) -> bool:
    """Whether a trace made for `trace_key` (shapes may hold None) serves a call of `key`."""
    if trace_key[0] != key[0] or len(trace_key[1]) != len(key[1]):
        return False
    for a, b in zip(trace_key[1], key[1]):
        if a[0] == "T" and b[0] == "T":
            if a[2] != b[2] or len(a[1]) != len(b[1]):
                return False
            if any(x is not None and x != y for x, y in zip(a[1], b[1])):
                return False
        elif a != b:
            return False
    return True


def relaxed(keys: list[tuple], key: tuple) -> tuple:
    """The most specific key covering `key` and every key of `keys` it can be merged with."""
    leaves = list(key[1])
    for other in keys:
        if other[0] != key[0] or len(other[1]) != len(leaves):
            continue
        merged = []
        for a, b in zip(other[1], leaves):
            if a[0] == "T" and b[0] == "T" and a[2] == b[2] and len(a[1]) == len(b[1]):
                merged.append(("T", tuple(x if x == y else None for x, y in zip(a[1], b[1])),
                               a[2]))  # fmt: skip
            elif a == b:
                merged.append(b)
            else:
                break
        else:
            leaves = merged
    return (key[0], tuple(leaves))


def bind_signature(fn: Any, input_signature: list[Any], args: tuple, kwargs: dict) -> tuple:
    """Bind a call to an `input_signature`, raising TF's TypeError when it does not fit.

    Returns the positional arguments (tensors), in the signature's order.
    """
    params = _params(fn)
    names = [p.name for p in params][: len(input_signature)]
    shown = ", ".join(f"{n}: {s!r}" for n, s in zip(names, input_signature))

    def fail(why: str) -> TypeError:
        return TypeError(
            f"Binding inputs to tf.function failed due to `{why}`. Received args: {args!r} and "
            f"kwargs: {kwargs!r} for signature: ({shown})."
        )

    if len(args) > len(input_signature):
        raise fail("too many positional arguments")
    bound = list(args)
    for name in names[len(args) :]:
        if name not in kwargs:
            raise fail(f"missing a required argument: '{name}'")
        bound.append(kwargs[name])
    extra = set(kwargs) - set(names[len(args) :])
    if extra:
        raise fail(f"got an unexpected keyword argument '{sorted(extra)[0]}'")
    out = []
    for value, spec in zip(bound, input_signature):
        if nest.is_composite(spec) and not spec.is_compatible_with(value):
            raise fail(f"Can not cast {value!r} to {spec!r}")
        flat_specs = nest.flatten(spec, expand_composites=True)
        flat_values = nest.flatten(value, expand_composites=True)
        if len(flat_specs) != len(flat_values):
            raise fail(f"Can not cast {value!r} to {spec!r}")
        for v, s in zip(flat_values, flat_specs):
            if not isinstance(s, TensorSpec):  # a RaggedTensorSpec: its own compatibility
                if not s.is_compatible_with(v):
                    raise fail(f"Can not cast {v!r} to {s!r}")
                continue
            got = _spec_of(v)
            if not (got.dtype == s.dtype and s.shape.is_compatible_with(got.shape)):
                raise fail(f"Can not cast {got!r} to {s!r}")
        out.append(value)
    return tuple(out)


def _spec_of(value: Any) -> TensorSpec:
    if isinstance(value, TensorSpec):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, TensorLike | np.ndarray) or hasattr(value, "_slot"):
        dt = dtypes.from_numpy(value.dtype) if isinstance(value, np.ndarray) else value.dtype
        return TensorSpec(value.shape, dt)
    from layerflow._src.framework import convert

    arr = convert.host_array(value)
    return TensorSpec(arr.shape, dtypes.from_numpy(arr.dtype))


def _params(fn: Any) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []


def param_names(fn: Any) -> list[str]:
    return [p.name for p in _params(fn)]
