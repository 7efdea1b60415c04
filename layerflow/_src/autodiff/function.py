"""`tf.function`: accepted everywhere TF accepts it; runs the Python function eagerly.

The compiled (traced) path is a later piece of work. Running eagerly gives the same results as
TF's graph mode for the code the book writes, with Python control flow on tensor values
working as plain Python.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

_run_eagerly = [True]


def function(func: Callable[..., Any] | None = None, input_signature: Any = None,
             autograph: bool = True, jit_compile: bool | None = None,
             reduce_retracing: bool = False, experimental_relax_shapes: Any = None,
             **kwargs: Any) -> Any:  # fmt: skip
    """Decorate a function as `tf.function` does; for now it runs eagerly with identical results.

    >>> import layerflow as tf
    >>> @tf.function
    ... def f(x):
    ...     return x * 2
    >>> int(f(tf.constant(3)))
    6
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            return fn(*args, **kw)

        wrapper.python_function = fn  # type: ignore[attr-defined]
        wrapper.input_signature = input_signature  # type: ignore[attr-defined]
        return wrapper

    return decorate if func is None else decorate(func)


def run_functions_eagerly(run_eagerly: bool) -> None:
    """`tf.config.run_functions_eagerly`: whether `tf.function`s run their Python eagerly.

    The setting is recorded and reported by `functions_run_eagerly()`. It changes nothing yet:
    `tf.function` always runs eagerly until its compiled (traced) path lands; then
    `run_functions_eagerly(True)` will switch that path off for debugging, as in TF.
    """
    _run_eagerly[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """The value last set by `run_functions_eagerly` (see its note: today every `tf.function`
    runs eagerly whatever it says)."""
    return _run_eagerly[0]
