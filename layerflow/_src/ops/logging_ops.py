"""`tf.print`: print tensors as TF formats them, at every call of a `tf.function` too."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.utils import nest

_STREAMS = {"stdout": "stdout", "stderr": "stderr"}


def _scalar_text(v: Any) -> str:
    """One element as TF writes it: shortest of 6 (float32) / 15 (float64) significant digits
    that reads back to the same value, else 9 / 17; bools as 1/0, strings quoted."""
    if isinstance(v, bytes):
        return '"' + v.decode("utf-8", "backslashreplace") + '"'
    if isinstance(v, np.bool_ | bool):
        return "1" if v else "0"
    if isinstance(v, np.floating):
        short, full = (6, 9) if v.dtype.itemsize <= 4 else (15, 17)
        text = f"{float(v):.{short}g}"
        if type(v)(text) != v:
            text = f"{float(v):.{full}g}"
        return text
    if isinstance(v, np.complexfloating):
        return f"({_scalar_text(v.real)},{_scalar_text(v.imag)})"
    return str(v)


def format_array(arr: np.ndarray, summarize: int = 3) -> str:
    """A host array as TF's `tf.print` shows it (`[1 2 ... 9 10]` past `summarize` elements)."""
    if arr.ndim == 0:
        return _scalar_text(arr[()])
    limit = None if summarize is None or summarize < 0 else summarize

    def rows(a: np.ndarray, depth: int) -> str:
        n = a.shape[0]
        cut = limit is not None and n > 2 * limit
        idx = list(range(limit)) + [-1] + list(range(n - limit, n)) if cut else list(range(n))
        if a.ndim == 1:
            return "[" + " ".join("..." if i == -1 else _scalar_text(a[i]) for i in idx) + "]"
        sep = "\n" * (a.ndim - 1) + " " * (depth + 1)
        parts = ["..." if i == -1 else rows(a[i], depth + 1) for i in idx]
        return "[" + sep.join(parts) + "]"

    return rows(arr, 0)


def _text(value: Any, summarize: int) -> str:
    if isinstance(value, TensorLike):
        return format_array(np.asarray(backend.to_host(value._data)), summarize)
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list | tuple):
        return str(nest.map_structure(lambda v: _Shown(_text(v, summarize)), value))
    return str(value)


class _Shown:
    """A leaf already formatted (so that `str` of its container shows it unquoted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _write(inputs: tuple, output_stream: Any, summarize: int, sep: str, end: str) -> None:
    text = sep.join(_text(v, summarize) for v in inputs) + end
    if output_stream is None or output_stream == "stderr" or output_stream is sys.stderr:
        sys.stderr.write(text)
    elif output_stream == "stdout" or output_stream is sys.stdout:
        sys.stdout.write(text)
    elif hasattr(output_stream, "write"):
        output_stream.write(text)
    elif isinstance(output_stream, str) and output_stream.startswith("file://"):
        with open(output_stream[len("file://") :], "a", encoding="utf-8") as f:
            f.write(text)
    else:
        raise ValueError(
            f"tf.print: output_stream must be sys.stdout, sys.stderr, 'stdout', 'stderr', a "
            f"'file://<path>' string or an object with write(), got {output_stream!r}."
        )


def print_v2(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",
             end: str = "\n", name: str | None = None) -> None:  # fmt: skip
    """Print tensors and Python values (`tf.print`); inside a `tf.function`, at every call.

    >>> import layerflow as tf
    >>> import sys
    >>> tf.print(tf.range(10), "done", output_stream=sys.stdout)
    [0 1 2 ... 7 8 9] done
    """
    tracer = backend.flags.tracer
    if tracer is not None:
        return tracer.host_call(_write, (inputs, output_stream, summarize, sep, end), {},
                                name="PrintV2")  # fmt: skip
    _write(inputs, output_stream, summarize, sep, end)
    return None
