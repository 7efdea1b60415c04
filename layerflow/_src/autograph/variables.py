"""Placeholders for names that converted code has not assigned yet, and the tensor test.

A name assigned in only one branch of an `if`, or first inside a loop, must exist before the
functional form of the statement captures it (`nonlocal` needs a binding); the converter binds it
to `Undefined('name')`. Reading one back through `ld` raises Python's own `UnboundLocalError`.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.convert import is_symbolic_value
from layerflow._src.framework.tensor import TensorLike


class Undefined:
    """The value of a name that is not defined yet (TF's `Undefined`)."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str) -> None:
        self.symbol_name = symbol_name

    def read(self) -> Any:
        raise UnboundLocalError(f"'{self.symbol_name}' is used before assignment")

    def __repr__(self) -> str:
        return self.symbol_name

    def __getattr__(self, name: str) -> Any:
        # An Undefined that escapes `ld` (say inside a tuple) still fails loudly when used.
        if name.startswith("__"):
            raise AttributeError(name)
        return self.read()


class UndefinedReturnValue:
    """The return value of a function whose return statement has not run yet."""

    __slots__ = ()


def ld(value: Any) -> Any:
    """Load a variable: an `Undefined` raises `UnboundLocalError`, anything else passes."""
    if isinstance(value, Undefined):
        return value.read()
    return value


def retval(value: Any) -> Any:
    """The function's result: None when no return statement ran."""
    return None if isinstance(value, UndefinedReturnValue) else value


def is_undefined(value: Any) -> bool:
    return isinstance(value, Undefined | UndefinedReturnValue)


def is_tensor(value: Any) -> bool:
    """Whether converted control flow on `value` becomes a TF op (eager or symbolic tensor)."""
    return isinstance(value, TensorLike) or is_symbolic_value(value)


def is_symbolic(value: Any) -> bool:
    """Whether `value` is a symbolic tensor (a trace in progress), not an eager one."""
    return is_symbolic_value(value)
