"""`tf.summary.trace_on`, `trace_off`, `trace_export`: the graphs of `tf.function` traces in
TensorBoard's Graphs dashboard.

As TF's: `trace_on()` starts a process-wide collection (a warning and nothing else when one is
already on, or inside a `tf.function`); each `tf.function` traced while it is on is recorded;
`trace_export(name, step)` writes the recorded graphs to the default writer as one
`graph_run_metadata_graph` summary (a serialized `RunMetadata` whose `function_graphs` hold a
GraphDef per trace, `function/graph_export.py`) and stops the collection; `trace_off()` stops
it and discards what was recorded.

`profiler=True`: TF then also runs its device profiler into `profiler_outdir`. layerflow has no
device profiler (its programs are NumPy/CuPy calls that Python's own profilers see), so the
flag is accepted and only changes the summary, as in TF: the whole `RunMetadata` is written
under TensorBoard's `graph_run_metadata` plugin (graphs and, in TF, step stats, which are
empty here), and a warning says that no profile is written to `profiler_outdir`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.function import graph_export
from layerflow._src.summary import summary_ops
from layerflow._src.summary import writer as _w

_log = logging.getLogger("layerflow")
_lock = threading.Lock()
_context: dict[str, Any] | None = None


def _in_function() -> bool:
    return backend.flags.tracer is not None


def trace_on(graph: bool = True, profiler: bool = False, profiler_outdir: Any = None) -> None:
    """Start recording the graphs of the `tf.function`s traced from now on (see the module
    docstring; `profiler=True` is accepted but no device profile is written).

    >>> import layerflow as tf
    >>> tf.summary.trace_on(graph=True)
    >>> tf.summary.trace_off()
    """
    global _context
    if _in_function():
        _log.warning("Cannot enable trace inside a tf.function.")
        return
    with _lock:
        if _context is not None:
            _log.warning("Trace already enabled")
            return
        if profiler:
            _log.warning(
                "tf.summary.trace_on(profiler=True): layerflow has no device profiler, so no "
                "profile is written%s; the graphs are recorded and exported as TF's "
                "run_metadata summary.",
                "" if profiler_outdir is None else f" to {profiler_outdir!r}",
            )
        if graph or profiler:
            graph_export.start()
        _context = {"graph": bool(graph), "profiler": bool(profiler)}


def trace_off() -> None:
    """Stop the current trace and discard what it recorded (nothing when none is on)."""
    global _context
    with _lock:
        if _context is None:
            return
        _context = None
    graph_export.stop()


def trace_export(name: str, step: Any = None, profiler_outdir: Any = None) -> None:
    """Write the graphs recorded since `trace_on` to the default writer under `name` at `step`
    (default: `tf.summary.experimental.get_step()`), then stop the trace. Without a default
    writer nothing is written (the trace still stops).

    >>> import layerflow as tf, tempfile
    >>> writer = tf.summary.create_file_writer(tempfile.mkdtemp())
    >>> @tf.function
    ... def f(x):
    ...     return x * 2.0
    >>> tf.summary.trace_on()
    >>> _ = f(tf.constant(1.0))
    >>> with writer.as_default():
    ...     tf.summary.trace_export("f_graph", step=0)
    """
    if step is not None:
        _w.step_value(step)
    if _in_function():
        _log.warning("Cannot export trace inside a tf.function.")
        return
    with _lock:
        if _context is None:
            raise ValueError("Must enable trace before export through tf.summary.trace_on.")
        profiler = _context["profiler"]
    if profiler and profiler_outdir:
        _log.warning(
            "Ignoring `profiler_outdir` passed to trace_export(). Please pass it to trace_on() "
            "instead."
        )
    traces = graph_export.stop()
    try:
        if _w.default_writer() is not None:
            _write(name, traces, step, profiler)
    finally:
        trace_off()


def _write(name: str, traces: list[Any], step: Any, profiler: bool) -> Any:
    from tensorboard.compat.proto import summary_pb2

    meta = graph_export.run_metadata(traces)
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.content = b"1"
    if profiler:
        metadata.plugin_data.plugin_name = "graph_run_metadata"
        scope_default = "graph_run_metadata_summary"
    else:
        metadata.plugin_data.plugin_name = "graph_run_metadata_graph"
        scope_default = "graph_run_metadata_graph_summary"
    with summary_ops.summary_scope(name, scope_default) as (tag, _):
        # An object array keeps the bytes whole (NumPy's `S` dtype would drop trailing NULs).
        data = np.empty((), dtype=object)
        data[()] = meta.SerializeToString()
        return summary_ops.write(tag, data, step=step, metadata=metadata)


__all__ = ["trace_export", "trace_off", "trace_on"]
