"""`tf.keras.utils.TimedThread`: call `on_interval()` every `interval` seconds in a thread."""

from __future__ import annotations

import logging
import threading
from typing import Any


class TimedThread:
    """Runs `on_interval` every `interval` seconds in a (daemon) thread, as in Keras 2.

    Subclass it and define `on_interval`; `start()`/`stop()` it, or use it as a context
    manager. Subclass `TimedThread` and `Callback` together to follow training events.

    >>> import layerflow as tf
    >>> class Tick(tf.keras.utils.TimedThread):
    ...     def on_interval(self):
    ...         pass
    >>> with Tick(interval=0.01) as t:
    ...     t.is_alive()
    True
    """

    def __init__(self, interval: float, **kwargs: Any) -> None:
        if not isinstance(interval, int | float) or interval < 0:
            raise ValueError(
                f"TimedThread interval must be a non-negative number, got {interval!r}."
            )
        self.interval = interval
        self.daemon = kwargs.pop("daemon", True)
        self.thread_kwargs = kwargs
        self.thread: threading.Thread | None = None
        self.thread_stop_event: threading.Event | None = None

    def _call_on_interval(self) -> None:
        event = self.thread_stop_event
        while event is not None and not event.is_set():
            self.on_interval()
            event.wait(self.interval)

    def start(self) -> None:
        """Create and start the thread (a warning if it is already running)."""
        if self.thread and self.thread.is_alive():
            logging.getLogger("layerflow").warning("Thread is already running.")
            return
        self.thread_stop_event = threading.Event()
        self.thread = threading.Thread(
            target=self._call_on_interval, daemon=self.daemon, **self.thread_kwargs
        )
        self.thread.start()

    def stop(self) -> None:
        """Ask the thread to stop after its current `on_interval` call."""
        if self.thread_stop_event:
            self.thread_stop_event.set()

    def is_alive(self) -> bool:
        return bool(self.thread and self.thread.is_alive())

    def __enter__(self) -> TimedThread:
        self.start()
        return self

    def __exit__(self, *args: Any) -> None:
        self.stop()

    def on_interval(self) -> None:
        """What to run every `interval` seconds; subclasses define it."""
        raise NotImplementedError(
            "Runs every x interval seconds. Needs to be implemented in subclasses of `TimedThread`"
        )
