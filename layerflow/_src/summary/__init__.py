"""`tf.summary`: TensorBoard event files (writers, per-thread state, summary ops)."""

from layerflow._src.summary.summary_ops import (
    audio,
    histogram,
    image,
    scalar,
    summary_scope,
    text,
    write,
    write_raw_pb,
)
from layerflow._src.summary.writer import (
    SummaryWriter,
    create_file_writer,
    create_noop_writer,
    flush,
    get_step,
    record_if,
    set_step,
    should_record_summaries,
)

__all__ = [
    "SummaryWriter",
    "audio",
    "create_file_writer",
    "create_noop_writer",
    "flush",
    "get_step",
    "histogram",
    "image",
    "record_if",
    "scalar",
    "set_step",
    "should_record_summaries",
    "summary_scope",
    "text",
    "write",
    "write_raw_pb",
]
