"""Python operators on Tensor and Variable (`+`, `@`, `[]`, `==`, ...), installed at import.

The framework layer defines the classes; the ops that implement the operators live here, one
layer up, and are attached with `register_operator` so that imports keep pointing downward.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor, register_operator
from layerflow._src.framework.variables import Variable
from layerflow._src.ops import bitwise_ops
from layerflow._src.ops import math_ops as m
from layerflow._src.ops.array_ops import _variable_getitem, getitem


def _reflect(fn: Any) -> Any:
    def reflected(self: Any, other: Any) -> Any:
        return fn(other, self)

    return reflected


def _bitwise(logical: Any, bitwise: Any) -> Any:
    # TF's Tensor operators: logical ops for bool tensors, tf.bitwise for every other dtype
    # (which refuses floats and mixed dtypes with InvalidArgumentError, as TF does).
    def op(x: Any, y: Any) -> Any:
        dtype = (x if isinstance(x, Tensor | Variable) else y).dtype
        if dtype.is_bool:
            return logical(x, y)
        return bitwise(x, y)

    return op


def _invert(x: Any) -> Any:
    if x.dtype.is_bool:
        return m.logical_not(x)
    return bitwise_ops.invert(x)


def _eq(self: Any, other: Any) -> Any:
    if other is None:
        return False
    try:
        return m.equal(self, other)
    except (errors.InvalidArgumentError, TypeError, ValueError):
        return False


def _ne(self: Any, other: Any) -> Any:
    if other is None:
        return True
    try:
        return m.not_equal(self, other)
    except (errors.InvalidArgumentError, TypeError, ValueError):
        return True


_and = _bitwise(m.logical_and, bitwise_ops.bitwise_and)
_or = _bitwise(m.logical_or, bitwise_ops.bitwise_or)
_xor = _bitwise(m.logical_xor, bitwise_ops.bitwise_xor)

_OPERATORS = {
    "__add__": m.add,
    "__radd__": _reflect(m.add),
    "__sub__": m.subtract,
    "__rsub__": _reflect(m.subtract),
    "__mul__": m.multiply,
    "__rmul__": _reflect(m.multiply),
    "__truediv__": m.truediv,
    "__rtruediv__": _reflect(m.truediv),
    "__floordiv__": m.floordiv,
    "__rfloordiv__": _reflect(m.floordiv),
    "__mod__": m.floormod,
    "__rmod__": _reflect(m.floormod),
    "__pow__": m.pow,
    "__rpow__": _reflect(m.pow),
    # The primitive itself: `a @ b` skips the public wrapper's keyword handling (hot path).
    "__matmul__": m._matmul,
    "__rmatmul__": _reflect(m._matmul),
    "__neg__": m.negative,
    "__pos__": lambda self: self,
    "__abs__": m.abs,
    "__lt__": m.less,
    "__le__": m.less_equal,
    "__gt__": m.greater,
    "__ge__": m.greater_equal,
    "__eq__": _eq,
    "__ne__": _ne,
    "__and__": _and,
    "__rand__": _reflect(_and),
    "__or__": _or,
    "__ror__": _reflect(_or),
    "__xor__": _xor,
    "__rxor__": _reflect(_xor),
    "__invert__": _invert,
}

for _name, _fn in _OPERATORS.items():
    register_operator(_name, _fn, Tensor, Variable)
register_operator("__getitem__", getitem, Tensor)
register_operator("__getitem__", _variable_getitem, Variable)
# Defining __eq__ removes the default hash; keep TF's "unhashable, use .ref()" message.
register_operator("__hash__", Tensor.__dict__["__hash__"], Tensor)
register_operator("__hash__", Variable.__dict__["__hash__"], Variable)
