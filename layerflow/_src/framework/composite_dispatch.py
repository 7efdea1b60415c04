"""Dispatch of public ops called on composite values (`tf.RaggedTensor`), TF's
`dispatch_for_api`: the op is defined on Tensors; a higher module registers, for one op and
one composite type, the function that runs it on values of that type.

A composite type is registered once (`register_type`); ops (`autodiff/op.py`) and functions
decorated with `dispatchable` hand a call with an argument of such a type to `dispatch`,
which runs the override registered for that function (`register_override`), or raises
TypeError naming the op and the type when there is none. Overrides are kept on the function
object itself (no global table keyed by `id()`).

>>> class Box:
...     def __init__(self, v): self.v = v
>>> register_type(Box)
>>> @dispatchable
... def double(x): return 2 * x
>>> register_override(double, Box, lambda x: Box(2 * x.v))
>>> double(3), double(Box(4)).v
(6, 8)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

# The registered composite types (a tuple; empty until a type registers).
types: list[Any] = [()]
_SEQUENCES = (list, tuple)


def register_type(cls: type) -> None:
    """Make values of `cls` dispatch through `dispatch` when they reach an op."""
    if not isinstance(cls, type):
        raise TypeError(f"register_type takes a class, got {cls!r}.")
    if cls not in types[0]:
        types[0] = (*types[0], cls)


def _is_composite(value: Any, composite: tuple) -> bool:
    if isinstance(value, composite):
        return True
    if isinstance(value, list | tuple):
        return any(isinstance(v, composite) for v in value)
    return False


def has_composite(args: tuple, kwargs: dict) -> bool:
    """Whether any argument (or element of a list/tuple argument) is a composite value."""
    composite = types[0]
    if not composite:
        return False
    for v in args:
        if _is_composite(v, composite):
            return True
    return any(_is_composite(v, composite) for v in kwargs.values())


def _composite_type(args: tuple, kwargs: dict) -> type | None:
    composite = types[0]
    for value in [*args, *kwargs.values()]:
        for v in value if isinstance(value, list | tuple) else (value,):
            if isinstance(v, composite):
                return type(v)
    return None


def register_override(fn: Any, cls: type, impl: Callable[..., Any]) -> None:
    """Run `impl(*args, **kwargs)` when `fn` is called with a `cls` value among its arguments."""
    register_type(cls)
    table = fn.__dict__.setdefault("composite_overrides", {})
    table[cls] = impl


def dispatch(fn: Any, args: tuple, kwargs: dict) -> Any:
    """Run `fn`'s override for the composite value among `args`/`kwargs`."""
    cls = _composite_type(args, kwargs)
    for klass, impl in getattr(fn, "composite_overrides", {}).items():
        if cls is not None and issubclass(cls, klass):
            return impl(*args, **kwargs)
    name = getattr(fn, "public_name", None) or getattr(fn, "__name__", "this op")
    cls_name = getattr(cls, "__name__", "composite")
    raise TypeError(
        f"{name} does not support {cls_name} arguments. Apply it to the flat values "
        f"instead, e.g. tf.ragged.map_flat_values({getattr(fn, '__name__', 'op')}, x), or "
        f"convert with x.to_tensor()."
    )


def dispatchable(fn: Callable[..., Any]) -> Any:
    """Let `fn` (a public function on Tensors) be overridden for composite arguments."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        composite = types[0]
        if composite:  # inlined: this runs on every call of a hot public function
            for v in args:
                if isinstance(v, composite) or (
                    v.__class__ in _SEQUENCES and _is_composite(v, composite)
                ):
                    return dispatch(wrapper, args, kwargs)
            if kwargs and has_composite((), kwargs):
                return dispatch(wrapper, args, kwargs)
        return fn(*args, **kwargs)

    return wrapper
