"""`tf.summary.scalar`, `histogram`, `image`, `audio`, `text`, `write`, `write_raw_pb` and
`experimental.summary_scope`, writing the same summary protos as TF 2.x's TensorBoard plugins
(tensor summaries with each plugin's metadata), so TensorBoard shows them as it shows TF's.

Each returns a bool tensor: True when it wrote, False when no writer is the default, the writer
is a no-op one, or `record_if` says no; as in TF, a missing step is an error only when a
summary would be written. Values are computed only then.
"""

from __future__ import annotations

import contextlib
import io
import re
import struct
import wave
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.summary import writer as _w
from layerflow._src.utils import naming

_INVALID_SCOPE_CHARACTERS = re.compile(r"[^-_/.A-Za-z0-9]")


@contextlib.contextmanager
def summary_scope(
    name: str, default_name: str | None = None, values: Any = None
) -> Iterator[tuple[str, str]]:
    """`(tag, scope)` for a summary named `name` under the current `tf.name_scope`.

    >>> import layerflow as tf
    >>> with tf.name_scope("outer"):
    ...     with tf.summary.experimental.summary_scope("loss") as (tag, scope):
    ...         tag, scope
    ('outer/loss', 'outer/loss/')
    """
    name = name or default_name
    if not name:
        raise ValueError("summary_scope: give a name or a default_name.")
    current = naming.current_scope().rstrip("/")
    tag = f"{current}/{name}" if current else name
    clean = _INVALID_SCOPE_CHARACTERS.sub("", name) or default_name
    with naming.name_scope(clean) as scope:
        yield tag, scope


def _array(data: Any) -> np.ndarray:
    return np.asarray(data)


def _step_or_raise(step: Any) -> int:
    if step is None:
        step = _w.get_step()
    if step is None:
        raise ValueError(
            "No step set. Please specify one either through the `step` argument or through "
            "tf.summary.experimental.set_step()"
        )
    return _w.step_value(step)


def _write_values(values: list[Any], step: Any) -> Any:
    """Write one event holding `values` (summary_pb2.Summary.Value) to the default writer."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    event = event_pb2.Event(
        step=_step_or_raise(step),
        wall_time=_w.wall_time(),
        summary=summary_pb2.Summary(value=values),
    )
    _w.default_writer().write_event(event)
    return _w._bool(True)


def _will_write(what: str) -> bool:
    if not _w._recording():
        return False
    _w.require_tensorboard(what)
    return True


def write(tag: str, tensor: Any, step: Any = None, metadata: Any = None, name: Any = None) -> Any:
    """Write `tensor` (or `tensor()`, called only when recording) under `tag` with `metadata`
    (a SummaryMetadata proto or its serialized bytes): the primitive the other summaries use."""
    if not _will_write("tf.summary.write"):
        return _w._bool(False)
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    step = _step_or_raise(step)
    value = tensor() if callable(tensor) else tensor
    if metadata is None:
        meta = summary_pb2.SummaryMetadata()
    elif isinstance(metadata, bytes):
        meta = summary_pb2.SummaryMetadata.FromString(metadata)
    else:
        meta = metadata
    array = _array(value)
    if array.dtype.kind == "U":
        array = array.astype(object)
    proto = tensor_util.make_tensor_proto(array)
    return _write_values([summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=proto)], step)


def write_raw_pb(tensor: Any, step: Any = None, name: Any = None) -> Any:
    """Write already serialized `Summary` protos (bytes, or a list of them)."""
    if not _will_write("tf.summary.experimental.write_raw_pb"):
        return _w._bool(False)
    from tensorboard.compat.proto import summary_pb2

    step = _step_or_raise(step)
    raw = tensor if isinstance(tensor, (list, tuple)) else [tensor]
    values = []
    for item in raw:
        data = item if isinstance(item, bytes) else _array(item).item()
        if not isinstance(data, bytes):
            raise TypeError(
                f"write_raw_pb expects serialized Summary protos (bytes), got {type(data)}."
            )
        values.extend(summary_pb2.Summary.FromString(data).value)
    return _write_values(values, step)


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
    """Write a scalar (cast to float32) under `name`.

    >>> import layerflow as tf
    >>> bool(tf.summary.scalar("loss", 0.5, step=1))  # no default writer
    False
    """
    with summary_scope(name, "scalar_summary") as (tag, _):
        if not _will_write("tf.summary.scalar"):
            return _w._bool(False)
        from tensorboard.plugins.scalar import summary_v2

        array = _array(data)
        if array.shape != ():
            raise ValueError(
                f"tf.summary.scalar '{tag}': data must be a scalar (rank 0), got shape "
                f"{array.shape}. Log a reduction such as tf.reduce_mean(x) instead."
            )
        pb = summary_v2.scalar_pb(tag, array.astype(np.float32), description=description)
        return _write_values(list(pb.value), step)


def histogram(
    name: str,
    data: Any,
    step: Any = None,
    buckets: int | None = None,
    description: str | None = None,
) -> Any:
    """Write a histogram of `data` (any shape) in `buckets` equal-width buckets (default 30),
    as TensorBoard's histogram plugin stores it: rows of [left edge, right edge, count]."""
    with summary_scope(name, "histogram_summary") as (tag, _):
        if not _will_write("tf.summary.histogram"):
            return _w._bool(False)
        if buckets is not None and (int(buckets) != buckets or buckets < 0):
            raise ValueError(f"tf.summary.histogram '{tag}': buckets must be an int >= 0.")
        from tensorboard.plugins.histogram import summary_v2

        array = _array(data).astype(np.float64)
        pb = summary_v2.histogram_pb(tag, array, buckets=buckets, description=description)
        return _write_values(list(pb.value), step)


def _png(image: np.ndarray) -> bytes:
    """A PNG file of an (h, w, c) uint8 image, c in 1 (grey), 2 (grey+alpha), 3, 4."""
    h, w, c = image.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + image[row].tobytes() for row in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _to_uint8(images: np.ndarray) -> np.ndarray:
    """`tf.image.convert_image_dtype(x, tf.uint8, saturate=True)`: floats in [0, 1] scale by
    255.5 and truncate; integers shift to 8 bits."""
    if images.dtype == np.uint8:
        return images
    if images.dtype.kind == "f":
        return np.clip(images.astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
    if images.dtype.kind in "iu":
        bits = images.dtype.itemsize * 8 - (1 if images.dtype.kind == "i" else 0)
        shifted = np.clip(images.astype(np.int64), 0, None) >> max(bits - 8, 0)
        return shifted.astype(np.uint8)
    if images.dtype == np.bool_:
        return images.astype(np.uint8) * 255
    raise TypeError(f"tf.summary.image: unsupported image dtype {images.dtype}.")


def image(
    name: str,
    data: Any,
    step: Any = None,
    max_outputs: int = 3,
    description: str | None = None,
) -> Any:
    """Write up to `max_outputs` images of `data`, shape [k, h, w, c] with c in 1, 3, 4
    (floats in [0, 1], or uint8), PNG-encoded as TensorBoard's image plugin expects."""
    with summary_scope(name, "image_summary") as (tag, _):
        if not _will_write("tf.summary.image"):
            return _w._bool(False)
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.plugins.image import metadata
        from tensorboard.util import tensor_util

        array = _array(data)
        if array.ndim != 4 or array.shape[-1] not in (1, 2, 3, 4):
            raise ValueError(
                f"tf.summary.image '{tag}': data must have shape [k, h, w, c] with c in "
                f"(1, 3, 4), got shape {array.shape}."
            )
        if max_outputs < 0:
            raise ValueError(f"tf.summary.image '{tag}': max_outputs must be >= 0.")
        images = _to_uint8(array[:max_outputs])
        k, h, w, _ = array.shape
        encoded = [str(w).encode(), str(h).encode()] + [_png(img) for img in images]
        proto = tensor_util.make_tensor_proto(np.array(encoded, dtype=object))
        meta = metadata.create_summary_metadata(display_name=None, description=description)
        return _write_values(
            [summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=proto)], step
        )


def _wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """16-bit PCM WAV of (t, channels) floats in [-1, 1], as `tf.audio.encode_wav`."""
    pcm = np.clip(np.round(samples.astype(np.float64) * 32767.0), -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(samples.shape[1])
        out.setsampwidth(2)
        out.setframerate(int(sample_rate))
        out.writeframes(pcm.tobytes())
    return buf.getvalue()


def audio(
    name: str,
    data: Any,
    sample_rate: Any,
    step: Any = None,
    max_outputs: int = 3,
    encoding: str | None = None,
    description: str | None = None,
) -> Any:
    """Write up to `max_outputs` clips of `data`, shape [k, t, c], floats in [-1, 1], as WAV."""
    with summary_scope(name, "audio_summary") as (tag, _):
        if not _will_write("tf.summary.audio"):
            return _w._bool(False)
        if encoding not in (None, "wav"):
            raise ValueError(f"tf.summary.audio: unknown encoding {encoding!r}; use 'wav'.")
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.plugins.audio import metadata
        from tensorboard.util import tensor_util

        array = _array(data)
        if array.ndim != 3:
            raise ValueError(
                f"tf.summary.audio '{tag}': data must have shape [k, t, c], got {array.shape}."
            )
        rate = int(np.asarray(sample_rate))
        clips = [[_wav(clip, rate), b""] for clip in array[:max_outputs]]
        proto = tensor_util.make_tensor_proto(np.array(clips, dtype=object).reshape(-1, 2))
        meta = metadata.create_summary_metadata(
            display_name=None, description=description, encoding=metadata.Encoding.Value("WAV")
        )
        return _write_values(
            [summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=proto)], step
        )


def text(name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
    """Write a string (or an array of strings; Markdown is rendered) under `name`."""
    with summary_scope(name, "text_summary") as (tag, _):
        if not _will_write("tf.summary.text"):
            return _w._bool(False)
        from tensorboard.plugins.text import summary_v2

        array = np.asarray(data, dtype=object) if not isinstance(data, (str, bytes)) else data
        pb = summary_v2.text_pb(tag, array, description=description)
        return _write_values(list(pb.value), step)
