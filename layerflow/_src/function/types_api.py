"""`tf.types.experimental`: the abstract types of TF's API, with layerflow's classes registered
under them so that `isinstance` answers as in TF.

- `TensorLike`: the Union TF documents (tensors and variables, Python numbers, strings, lists and
  tuples, NumPy arrays and scalars); `isinstance(x, TensorLike)` works on it (Python >= 3.10).
- `Callable` > `PolymorphicFunction` (alias `GenericFunction`): what `tf.function` returns;
  `Callable` > `ConcreteFunction`: what `get_concrete_function` returns; `AtomicFunction` (TF's
  single-graph function, which layerflow's plans do not expose: nothing is an instance).
- `TraceType`: every `tf.TypeSpec` (TensorSpec, IteratorSpec, ...) is one, as in TF.
- `SupportsTracingProtocol`: objects with `__tf_tracing_type__`, and `tf.function` objects.
- `FunctionType`: an `inspect.Signature` (TF's is a subclass of it too).
- `distributed.Mirrored` / `PerReplica`: the distribute values of `tf.distribute`.

>>> import layerflow as tf
>>> E = tf.types.experimental
>>> isinstance(tf.function(abs), E.GenericFunction), isinstance(3.0, E.TensorLike)
(True, True)
"""

from __future__ import annotations

import abc
import inspect
from typing import Any, Union  # noqa: F401

import numpy as np

from layerflow._src.framework.tensor import TensorLike as _TensorBase
from layerflow._src.framework.type_spec import TypeSpec
from layerflow._src.function import tf_function

TensorLike = Union[  # noqa: UP007 - TF's name is a typing.Union, as in TF
    _TensorBase, int, float, bool, str, bytes, complex, tuple, list, np.ndarray, np.generic
]


class Callable(abc.ABC):  # noqa: B024 - a marker base: layerflow's classes are registered
    """Base of the callable function types (TF's `types.experimental.Callable`)."""


class ConcreteFunction(Callable):
    """A function traced for one input signature (`get_concrete_function`'s result)."""


class PolymorphicFunction(Callable):
    """A function that traces one ConcreteFunction per kind of call (what `tf.function`
    returns)."""


GenericFunction = PolymorphicFunction


class AtomicFunction(Callable):
    """TF's single-graph function object. layerflow's traced programs are plans, not graphs:
    no layerflow object is an AtomicFunction."""


class TraceType(abc.ABC):  # noqa: B024
    """The type of a value for tracing: every TypeSpec."""


class SupportsTracingProtocol(abc.ABC):  # noqa: B024
    """Objects that define `__tf_tracing_type__` (and tf.function objects)."""

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is SupportsTracingProtocol and any(
            "__tf_tracing_type__" in vars(k) for k in other.__mro__
        ):
            return True
        return NotImplemented


class FunctionType(inspect.Signature):
    """A function's signature (TF's FunctionType is an `inspect.Signature` too)."""

    __slots__ = ()


TraceType.register(TypeSpec)
PolymorphicFunction.register(tf_function.Function)
ConcreteFunction.register(tf_function.ConcreteFunction)
SupportsTracingProtocol.register(tf_function.Function)

__all__ = [
    "AtomicFunction", "Callable", "ConcreteFunction", "FunctionType", "GenericFunction",
    "PolymorphicFunction", "SupportsTracingProtocol", "TensorLike", "TraceType",
]  # fmt: skip
