"""`tf.print`: prints tensors as TF formats them (`[1 2 3]`, `[0 1 2 ... 7 8 9]`).

Eagerly it prints when called. Inside a traced `tf.function` it must run at every call of the
traced program, not at trace time (AutoGraph turns `print` of tensors into this function).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from layerflow._src.framework.tensor import TensorLike
from layerflow._src.utils import nest


def _scalar(value: Any) -> str:
    if isinstance(value, bytes):
        return '"' + value.decode("utf-8", "replace") + '"'
    if isinstance(value, np.bool_ | bool):
        return str(int(value))
    if isinstance(value, np.floating | float):
        return f"{float(value):g}"
    return str(value)


def _array(arr: np.ndarray, summarize: int, indent: int = 0) -> str:
    if arr.ndim == 0:
        return _scalar(arr.item() if arr.dtype != object else arr[()])
    n = arr.shape[0]
    if 0 <= summarize < n and n > 2 * summarize:
        idx = [*range(summarize), None, *range(n - summarize, n)]
    else:
        idx = list(range(n))
    parts = ["..." if i is None else _array(arr[i], summarize, indent + 1) for i in idx]
    if arr.ndim == 1:
        return "[" + " ".join(parts) + "]"
    return "[" + ("\n" + " " * (indent + 1)).join(parts) + "]"


def _format(value: Any, summarize: int) -> str:
    if isinstance(value, TensorLike):
        return _array(np.asarray(value.numpy()), summarize)
    if isinstance(value, str):
        return value
    if nest.is_nested(value):
        texts = nest.map_structure(lambda v: _Raw(_format(v, summarize)), value)
        return repr(texts)
    return str(value)


class _Raw:
    """A formatted leaf that `repr` of its container shows unquoted."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def print_(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",
           end: str = "\n", name: str | None = None) -> None:  # fmt: skip
    """Print `inputs` to `output_stream` (default `sys.stderr`, as TF) (`tf.print`).

    >>> import sys, layerflow as tf
    >>> tf.print("x:", tf.constant([1, 2, 3]), output_stream=sys.stdout)
    x: [1 2 3]
    """
    summarize = -1 if summarize is None else int(summarize)
    text = sep.join(_format(v, summarize) for v in inputs) + end
    stream = sys.stderr if output_stream is None else output_stream
    stream.write(text)
