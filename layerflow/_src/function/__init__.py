"""`tf.function`: tracing a Python function into a compiled plan (see `tf_function.py`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from layerflow._src import backend
from layerflow._src.function import control_flow as _control_flow
from layerflow._src.function import graph as _graph
from layerflow._src.function.graph import GraphTensor, host_method
from layerflow._src.function.tf_function import (
    ConcreteFunction,
    Function,
    function,
    functions_run_eagerly,
    run_functions_eagerly,
    set_autograph_converter,
)

_graph.install_operators()
_control_flow.install()


def inside_function() -> bool:
    """`tf.inside_function`: whether a `tf.function` is being traced now."""
    return backend.flags.tracer is not None


@contextlib.contextmanager
def init_scope() -> Iterator[None]:
    """`tf.init_scope`: run the block eagerly, outside any `tf.function` trace (TF lifts
    variable initialisation out of the trace this way)."""
    with _graph.suspended():
        yield


def is_symbolic_tensor(value: Any) -> bool:
    """`tf.is_symbolic_tensor`: whether `value` is a tensor of a `tf.function` trace."""
    return isinstance(value, _graph.GraphTensor)


__all__ = [
    "ConcreteFunction",
    "Function",
    "GraphTensor",
    "function",
    "host_method",
    "functions_run_eagerly",
    "init_scope",
    "inside_function",
    "is_symbolic_tensor",
    "run_functions_eagerly",
    "set_autograph_converter",
]
