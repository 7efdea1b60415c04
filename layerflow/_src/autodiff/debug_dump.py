"""`tf.debugging.experimental.enable_dump_debug_info`: a record of every op that runs, written
to a folder.

TF writes Debugger V2 event files (protobuf) for TensorBoard's debugger plugin; layerflow writes
the same information as JSON lines a person or a script can read:

- `dump_root/metadata.json`: the settings (tensor_debug_mode, circular_buffer_size, op_regex,
  tensor_dtypes) and the layerflow version;
- `dump_root/execution.jsonl`: one record per executed op, in order: `index`, `op_type` (the
  op's name), `device`, `wall_time`, the `inputs` (dtype and shape each), the `outputs`
  summarised per `tensor_debug_mode` (TF's modes: NO_TENSOR: dtype only; CURT_HEALTH: whether a
  float output holds any inf/NaN; CONCISE_HEALTH: size and the counts of -inf, +inf, NaN;
  FULL_HEALTH: also dtype, rank and the counts of negative, zero, positive finite values;
  SHAPE: dtype, rank, size, shape), and `stack`, the user frames (file, line, function) that
  called the op.

As in TF, execution records are held in a circular buffer of the last `circular_buffer_size`
(written by `FlushExecutionFiles()`, by `disable_dump_debug_info()`, and at exit); a size <= 0
writes every record at once. The dump sees the ops the tapes see (`debug_hooks.py`): ops with
a gradient, in the thread that enabled it; integer-only and comparison ops are not recorded.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from layerflow._src import backend
from layerflow._src.autodiff import debug_hooks
from layerflow._src.framework import dtypes

_MODES = ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _stack() -> list[list[Any]]:
    frames = []
    f = sys._getframe(3)
    while f is not None and len(frames) < 8:
        path = f.f_code.co_filename
        if not os.path.abspath(path).startswith(_PACKAGE):
            frames.append([path, f.f_lineno, f.f_code.co_name])
        f = f.f_back
    return frames


def _summary(t: Any, mode: str) -> dict[str, Any]:
    data = t._data
    out: dict[str, Any] = {"dtype": t.dtype.name}
    if mode == "NO_TENSOR":
        return out
    if mode == "SHAPE":
        out.update(rank=data.ndim, size=int(data.size), shape=list(data.shape))
        return out
    if data.dtype.kind not in "fcV":
        return out  # the health modes describe float tensors only, as in TF
    host = backend.to_host(data).astype("complex128" if data.dtype.kind == "c" else "float64")
    nan = int((host != host).sum())
    pos_inf, neg_inf = int((host == float("inf")).sum()), int((host == float("-inf")).sum())
    if mode == "CURT_HEALTH":
        out["any_inf_or_nan"] = bool(nan or pos_inf or neg_inf)
        return out
    out.update(size=int(host.size), neg_inf=neg_inf, pos_inf=pos_inf, nan=nan)
    if mode == "FULL_HEALTH" and host.dtype.kind == "f":
        finite = host[(host == host) & (abs(host) != float("inf"))]
        out.update(rank=data.ndim, negative=int((finite < 0).sum()),
                   zero=int((finite == 0).sum()), positive=int((finite > 0).sum()))  # fmt: skip
    return out


class DebugEventsWriter:
    """The writer `enable_dump_debug_info` returns (TF's flushing methods)."""

    def __init__(
        self,
        dump_root: str,
        mode: str,
        buffer_size: int,
        op_regex: str | None,
        dtype_filter: Callable[[Any], bool] | None,
        shown_dtypes: Any,
    ) -> None:
        self.dump_root = dump_root
        self.tensor_debug_mode = mode
        self.circular_buffer_size = buffer_size
        self._op_regex = re.compile(op_regex) if op_regex else None
        self._dtype_filter = dtype_filter
        self._buffer: collections.deque = collections.deque(
            maxlen=buffer_size if buffer_size > 0 else None
        )
        self._count = 0
        os.makedirs(dump_root, exist_ok=True)
        self._path = os.path.join(dump_root, "execution.jsonl")
        open(self._path, "w").close()  # a fresh dump  # noqa: SIM115
        meta = {"tensor_debug_mode": mode, "circular_buffer_size": buffer_size,
                "op_regex": op_regex, "tensor_dtypes": shown_dtypes,
                "layerflow_version": _version()}  # fmt: skip
        with open(os.path.join(dump_root, "metadata.json"), "w") as f:
            json.dump(meta, f, indent=1)

    def record(self, prim: Any, inputs: Any, outs: Any) -> None:
        if self._op_regex is not None and not self._op_regex.match(prim.name):
            return
        if self._dtype_filter is not None and not any(self._dtype_filter(o.dtype) for o in outs):
            return
        entry = {
            "index": self._count,
            "op_type": prim.name,
            "device": str(outs[0].device) if outs else None,
            "wall_time": time.time(),
            "inputs": [
                {"dtype": x.dtype.name, "shape": list(x._data.shape)}
                for x in inputs
                if hasattr(x, "_data")
            ],  # fmt: skip
            "outputs": [_summary(o, self.tensor_debug_mode) for o in outs],
            "stack": _stack(),
        }
        self._count += 1
        self._buffer.append(entry)
        if self.circular_buffer_size <= 0:
            self.FlushExecutionFiles()

    def FlushExecutionFiles(self) -> None:  # noqa: N802 - TF's name
        """Append the buffered execution records to `execution.jsonl`."""
        if not self._buffer:
            return
        with open(self._path, "a") as f:
            for entry in self._buffer:
                f.write(json.dumps(entry) + "\n")
        self._buffer.clear()

    def FlushNonExecutionFiles(self) -> None:  # noqa: N802 - TF's name
        """Nothing is buffered outside the execution records (metadata is written at once)."""

    def Close(self) -> None:  # noqa: N802 - TF's name
        self.FlushExecutionFiles()


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("layerflow")
    except Exception:  # noqa: BLE001 - not installed as a distribution: a source checkout
        return "source"


_active: list[DebugEventsWriter] = []


def _dtype_filter(tensor_dtypes: Any) -> tuple[Callable[[Any], bool] | None, Any]:
    if tensor_dtypes is None:
        return None, None
    if callable(tensor_dtypes):
        return tensor_dtypes, getattr(tensor_dtypes, "__name__", "callable")
    if not isinstance(tensor_dtypes, list | tuple):
        raise TypeError(
            "enable_dump_debug_info: tensor_dtypes must be a list or tuple of dtypes, or a "
            f"callable taking a DType, got {type(tensor_dtypes).__name__}."
        )
    wanted = {dtypes.as_dtype(d) for d in tensor_dtypes}
    return (lambda dt: dt in wanted), sorted(d.name for d in wanted)


def enable_dump_debug_info(dump_root: str, tensor_debug_mode: str = "NO_TENSOR",
                           circular_buffer_size: int = 1000, op_regex: str | None = None,
                           tensor_dtypes: Any = None) -> DebugEventsWriter:  # fmt: skip
    """Record every op that runs (in this thread) under `dump_root`; see the module docstring.

    >>> import layerflow as tf, tempfile, json, os
    >>> root = tempfile.mkdtemp()
    >>> w = tf.debugging.experimental.enable_dump_debug_info(root, "SHAPE")
    >>> _ = tf.exp(tf.constant([1.0, 2.0]))
    >>> tf.debugging.experimental.disable_dump_debug_info()
    >>> with open(os.path.join(root, "execution.jsonl")) as f:
    ...     rec = json.loads(f.readline())
    >>> rec["op_type"], rec["outputs"][0]["shape"]
    ('exp', [2])
    """
    if tensor_debug_mode not in _MODES:
        raise ValueError(
            f"Invalid value in tensor_debug_mode ('{tensor_debug_mode}'). Valid options are: "
            f"{', '.join(_MODES)}"
        )
    if not isinstance(circular_buffer_size, int):
        raise TypeError(
            f"circular_buffer_size must be an int, got {type(circular_buffer_size).__name__}."
        )
    if op_regex is not None:
        re.compile(op_regex)  # a bad pattern raises re.error here, not at the first op
    dump_root = os.fspath(dump_root)
    if _active:
        current = _active[0]
        if current.dump_root == dump_root:
            if current.tensor_debug_mode != tensor_debug_mode:
                raise ValueError(
                    f"There is already a dumping callback configured with a different "
                    f"tensor-debug mode ({current.tensor_debug_mode}). Call "
                    "disable_dump_debug_info() first."
                )
            if current.circular_buffer_size != circular_buffer_size:
                raise ValueError(
                    f"There is already a dumping callback configured for dump root {dump_root} "
                    f"with a different circular-buffer size ({current.circular_buffer_size}). "
                    "Call disable_dump_debug_info() first."
                )
            return current  # idempotent, as TF
        disable_dump_debug_info()  # a new dump_root replaces the old one
    filt, shown = _dtype_filter(tensor_dtypes)
    writer = DebugEventsWriter(dump_root, tensor_debug_mode, circular_buffer_size, op_regex,
                               filt, shown)  # fmt: skip
    _active.append(writer)
    debug_hooks._ensure_watcher().dump = writer.record
    return writer


def disable_dump_debug_info() -> None:
    """Stop dumping and write what is buffered (a no-op when no dump is enabled)."""
    if not _active:
        return
    writer = _active.pop()
    writer.Close()
    watcher = debug_hooks._find_watcher()
    if watcher is not None:
        watcher.dump = None
        debug_hooks._drop_if_idle(watcher)


atexit.register(disable_dump_debug_info)
