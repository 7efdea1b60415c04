"""`tf.summary`: write TensorBoard event files (needs the `tensorboard` package to write).

`trace_on`, `trace_off` and `trace_export` record the graphs of `tf.function` traces for
TensorBoard's Graphs dashboard (`profiler=True` is accepted; layerflow writes no device profile).
"""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.summary import (
    SummaryWriter,
    audio,
    create_file_writer,
    create_noop_writer,
    flush,
    histogram,
    image,
    record_if,
    scalar,
    should_record_summaries,
    text,
    write,
)
from layerflow._src.summary.trace import trace_export, trace_off, trace_on
from layerflow.summary import experimental

_ABSENT: dict[str, str] = {}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    why = _ABSENT.get(name)
    if why is None:
        raise AttributeError(f"module 'layerflow.summary' has no attribute {name!r}")
    raise AttributeError(
        f"tf.summary.{name} is not provided by layerflow: {why}, and layerflow runs eagerly on "
        "NumPy/CuPy without graphs. Log scalars, histograms, images and text instead."
    )
