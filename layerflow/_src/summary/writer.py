"""Summary writers and the per-thread summary state of `tf.summary` (TF 2.x semantics).

Event files are written by TensorBoard's own writer (`tensorboard.summary.writer`), so
TensorBoard reads them: `pip install layerflow[tensorboard]`. Without that package
`create_file_writer` raises an ImportError that says so (TF itself refuses `tf.summary.scalar`
when TensorBoard is missing); the state functions (`record_if`, `get_step`, ...) and the no-op
writer work without it.

State is per thread, as in TF: the default writer, the default step, the recording condition.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.framework.convert import convert_to_tensor

_INSTALL_HINT = (
    "TensorBoard is not installed, so tf.summary cannot write event files. Install it with "
    "`pip install tensorboard` (or `pip install layerflow[tensorboard]`)."
)


def require_tensorboard(what: str) -> None:
    """Raise an ImportError naming `what` when TensorBoard's package is missing."""
    try:
        import tensorboard  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"{what}: {_INSTALL_HINT}") from exc


class _SummaryState(threading.local):
    def __init__(self) -> None:
        super().__init__()
        self.writer: SummaryWriter | None = None
        self.step: Any = None
        self.is_recording: Any = None


_state = _SummaryState()


def _bool(value: bool) -> Any:
    return convert_to_tensor(np.bool_(value))


def step_value(step: Any) -> int:
    """An int from a step given as int, NumPy scalar, tensor or variable (read now)."""
    try:
        return int(np.asarray(step))
    except (TypeError, ValueError):
        raise TypeError(
            f"tf.summary: the step must be an int64-castable scalar (an int, a tensor or a "
            f"variable), got {step!r} ({type(step).__name__})."
        ) from None


def get_step() -> Any:
    """The default step of summaries (set by `set_step` or `writer.as_default(step=...)`), or
    None.

    >>> import layerflow as tf
    >>> tf.summary.experimental.set_step(3)
    >>> tf.summary.experimental.get_step()
    3
    >>> tf.summary.experimental.set_step(None)
    """
    return _state.step


def set_step(step: Any) -> None:
    """Set the default step: an int, or a variable read at each write (`optimizer.iterations`)."""
    _state.step = step


@contextlib.contextmanager
def record_if(condition: Any) -> Iterator[None]:
    """Record summaries only while `condition` holds: a bool, a bool tensor, or a callable
    evaluated at each write (e.g. `lambda: step % 100 == 0`).

    >>> import layerflow as tf
    >>> with tf.summary.create_noop_writer().as_default(), tf.summary.record_if(False):
    ...     bool(tf.summary.should_record_summaries())
    False
    """
    old = _state.is_recording
    _state.is_recording = condition
    try:
        yield
    finally:
        _state.is_recording = old


def _recording() -> bool:
    writer = _state.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter):
        return False
    cond = _state.is_recording
    if cond is None:
        return True
    if callable(cond):
        cond = cond()
    return bool(np.asarray(cond))


def should_record_summaries() -> Any:
    """A bool tensor: True when a (non-no-op) default writer is set and the `record_if`
    condition holds (True without one)."""
    return _bool(_recording())


def default_writer() -> SummaryWriter | None:
    return _state.writer


def flush(writer: Any = None, name: str | None = None) -> None:
    """Flush `writer`, or the default writer (nothing when there is none)."""
    writer = _state.writer if writer is None else writer
    if writer is not None:
        writer.flush()


class SummaryWriter:
    """A stateful summary writer; make one with `tf.summary.create_file_writer`.

    `with writer.as_default(step=None):` makes it the default of this thread (and the step the
    default step) inside the block, flushing it on exit; `set_as_default` does so for good.
    """

    _closed = False

    def set_as_default(self, step: Any = None) -> None:
        """Make this writer (and `step`, unless None) the default of this thread from now on."""
        self._check_open()
        _state.writer = self
        if step is not None:
            _state.step = step

    @contextlib.contextmanager
    def as_default(self, step: Any = None) -> Iterator[SummaryWriter]:
        """Make this writer the default inside the block; `step`, unless None, is the default
        step inside it and the old one comes back after."""
        self._check_open()
        old_writer, old_step = _state.writer, _state.step
        _state.writer = self
        if step is not None:
            _state.step = step
        try:
            yield self
        finally:
            self.flush()
            _state.writer = old_writer
            if step is not None:
                _state.step = old_step

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(
                f"SummaryWriter {self!r} is already closed; create a new one with "
                "tf.summary.create_file_writer(logdir)."
            )

    def init(self) -> None:
        """Initialize the writer (already done at creation here)."""
        self._check_open()

    def flush(self) -> None:
        """Write what is queued to disk."""

    def close(self) -> None:
        """Flush and close; the writer cannot be used afterwards."""
        self._closed = True

    def write_event(self, event: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class _NoopSummaryWriter(SummaryWriter):
    """Writes nothing: summaries under it return False (`tf.summary.create_noop_writer`)."""

    def write_event(self, event: Any) -> None:
        pass


class _FileSummaryWriter(SummaryWriter):
    def __init__(
        self, logdir: str, max_queue: int, flush_secs: float, filename_suffix: str
    ) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.logdir = logdir
        self._writer = EventFileWriter(
            logdir, max_queue_size=max_queue, flush_secs=flush_secs, filename_suffix=filename_suffix
        )
        self._lock = threading.Lock()
        # An unclosed writer still reaches the disk when it is collected or at exit.
        self._finalizer = weakref.finalize(self, self._writer.close)

    def __repr__(self) -> str:
        return f"<SummaryWriter logdir={self.logdir!r}>"

    def write_event(self, event: Any) -> None:
        with self._lock:
            self._check_open()
            self._writer.add_event(event)

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._finalizer()
        if _state.writer is self:
            _state.writer = None


def create_file_writer(
    logdir: Any,
    max_queue: int | None = None,
    flush_millis: int | None = None,
    filename_suffix: str | None = None,
    name: str | None = None,
    experimental_trackable: bool = False,
    experimental_mesh: Any = None,
) -> SummaryWriter:
    """A writer of TensorBoard event files in `logdir` (created if missing).

    `max_queue` events (default 10) or `flush_millis` ms (default 120000) pass before the queue
    is written; `flush()`, `close()` and leaving `as_default()` write it at once.

    >>> import layerflow as tf, tempfile
    >>> writer = tf.summary.create_file_writer(tempfile.mkdtemp())
    >>> with writer.as_default(step=1):
    ...     bool(tf.summary.scalar("loss", 0.5))
    True
    >>> writer.close()
    """
    if experimental_mesh is not None:
        raise ValueError(
            "create_file_writer: experimental_mesh (DTensor) is not supported by layerflow; "
            "leave it None."
        )
    require_tensorboard("tf.summary.create_file_writer")
    path = os.fspath(logdir)
    if not isinstance(path, str) or not path:
        raise ValueError(f"create_file_writer: logdir must be a non-empty path, got {logdir!r}.")
    if max_queue is not None and int(max_queue) < 0:
        raise ValueError(f"create_file_writer: max_queue must be >= 0, got {max_queue}.")
    os.makedirs(path, exist_ok=True)
    flush_secs = 120.0 if flush_millis is None else max(float(flush_millis) / 1000.0, 0.001)
    return _FileSummaryWriter(
        path,
        max_queue=10 if max_queue is None else int(max_queue),
        flush_secs=flush_secs,
        filename_suffix=".v2" if filename_suffix is None else str(filename_suffix),
    )


def create_noop_writer() -> SummaryWriter:
    """A writer that writes nothing (summaries under it return False)."""
    return _NoopSummaryWriter()


def wall_time() -> float:
    return time.time()
