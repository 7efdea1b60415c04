"""Operators for expressions and builtins in converted code (TF's logical, conditional
expression, assert and py_builtins operators): tensors get the TF op, other values Python's own
behaviour, so converted code run on Python values does exactly what the original does.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from typing import Any

from layerflow._src.autograph.variables import is_tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops import array_ops, compare_ops, control_flow_ops, debugging_ops, math_ops
from layerflow._src.ops.gather_ops import gather
from layerflow._src.ops.logging_ops import print_v2 as tf_print


def if_exp(cond: Any, if_true: Callable, if_false: Callable, expr_repr: str) -> Any:
    """`if_true() if cond else if_false()`; a tensor `cond` becomes `tf.cond`."""
    if is_tensor(cond):
        return control_flow_ops.cond(cond, if_true, if_false)
    return if_true() if cond else if_false()


def and_(a: Callable, b: Callable) -> Any:
    """`a() and b()`, lazily: a tensor `a()` becomes `tf.cond(a, b, lambda: a)`."""
    value = a()
    if is_tensor(value):
        return control_flow_ops.cond(value, lambda: _logical(b()), lambda: value)
    return value and b()


def or_(a: Callable, b: Callable) -> Any:
    """`a() or b()`, lazily: a tensor `a()` becomes `tf.cond(a, lambda: a, b)`."""
    value = a()
    if is_tensor(value):
        return control_flow_ops.cond(value, lambda: value, lambda: _logical(b()))
    return value or b()


def _logical(value: Any) -> Any:
    return value if is_tensor(value) else array_ops.constant(bool(value))


def not_(value: Any) -> Any:
    """`not value`; `tf.logical_not` for a tensor."""
    if is_tensor(value):
        return math_ops.logical_not(value)
    return not value


def assert_stmt(expression: Any, message: Callable[[], Any]) -> None:
    """`assert expression, message()`; a tensor becomes `tf.debugging.Assert`."""
    if is_tensor(expression):
        debugging_ops.Assert(expression, [message()])
    elif not expression:
        raise AssertionError(message())


def len_(value: Any) -> Any:
    """`len(value)`: a tensor's first dimension, as a Python int when its shape is static."""
    if not is_tensor(value):
        return len(value)
    shape = TensorShape(value.shape)
    if shape.rank == 0:
        raise ValueError(f"len requires a non-scalar tensor, got one of shape {shape}")
    if shape.rank is not None and shape[0] is not None:
        return shape[0]
    return gather(array_ops.shape(value), 0)


def range_(start: Any, stop: Any = None, step: Any = None) -> Any:
    """`range(...)`; `tf.range` when an argument is a tensor."""
    args = [a for a in (start, stop, step) if a is not None]
    if any(is_tensor(a) for a in args):
        return array_ops.range(start, stop, 1 if step is None else step)
    return builtins.range(*args)


def print_(*objects: Any, **kwargs: Any) -> None:
    """`print(...)`; `tf.print` when an argument is a tensor (so it prints at every call)."""
    if any(is_tensor(o) for o in objects):
        unknown = set(kwargs) - {"sep", "end", "file"}
        if unknown:
            raise TypeError(f"print() got unexpected keyword arguments {sorted(unknown)}")
        stream = kwargs.get("file") or sys.stdout
        tf_print(*objects, output_stream=stream, sep=kwargs.get("sep") or " ",
                 end=kwargs.get("end", "\n"))  # fmt: skip
        return
    builtins.print(*objects, **kwargs)


def abs_(value: Any) -> Any:
    return math_ops.abs(value) if is_tensor(value) else builtins.abs(value)


def int_(value: Any, base: Any = None) -> Any:
    if is_tensor(value):
        if base is not None:
            raise NotImplementedError("base argument is not supported for tensors")
        return compare_ops.cast(value, "int32")
    return builtins.int(value) if base is None else builtins.int(value, base)


def float_(value: Any) -> Any:
    return compare_ops.cast(value, "float32") if is_tensor(value) else builtins.float(value)


# The builtins converted code replaces (by identity, so a user's own `print` stays theirs).
BUILTIN_OVERRIDES: dict[Any, Callable[..., Any]] = {
    builtins.len: len_,
    builtins.print: print_,
    builtins.range: range_,
    builtins.abs: abs_,
    builtins.int: int_,
    builtins.float: float_,
}
