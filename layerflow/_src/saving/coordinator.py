"""`tf.train.Coordinator`: stop a group of threads together, and report the first error.

TF's semantics: `request_stop(ex)` records the first exception (unless it is a "clean stop"
type, by default `tf.errors.OutOfRangeError`, which only stops); `stop_on_exception()` turns an
exception in a thread into a stop request; `join()` waits for the threads, gives them
`stop_grace_period_secs` after a stop request, raises RuntimeError naming the ones still alive
(unless `ignore_live_threads`), and then re-raises the recorded exception.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from layerflow._src.framework import errors


class Coordinator:
    """A coordinator for threads.

    >>> import threading, layerflow as tf
    >>> coord = tf.train.Coordinator()
    >>> def work():
    ...     with coord.stop_on_exception():
    ...         while not coord.should_stop():
    ...             coord.request_stop()
    >>> threads = [threading.Thread(target=work) for _ in range(2)]
    >>> for t in threads: t.start()
    >>> coord.join(threads)
    >>> coord.should_stop()
    True
    """

    def __init__(self, clean_stop_exception_types: Any = None) -> None:
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: Any = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex: Any) -> Any:
        value = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(value, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex: Any = None) -> None:
        """Ask the threads to stop; `ex` (an exception, or an exc_info tuple) is recorded if it
        is the first and not a clean-stop type, and `join` re-raises it."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    _, value, tb = ex
                    raise value.with_traceback(tb)
                if ex is not None:
                    raise ex
            if ex is not None and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    if len(ex) != 3 or not isinstance(ex[1], BaseException):
                        raise ValueError(
                            f"request_stop: expected an exception or a sys.exc_info() tuple, got "
                            f"{ex!r}."
                        )
                    self._exc_info_to_raise = ex
                elif isinstance(ex, BaseException):
                    self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                else:
                    raise ValueError(
                        f"request_stop: expected an exception or a sys.exc_info() tuple, got "
                        f"{ex!r}."
                    )
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Forget the stop request and the recorded exception (so threads may run again)."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A context in which an exception requests a stop (recording it) instead of
        propagating; a clean-stop exception just stops."""
        try:
            yield
        except BaseException:
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested or `timeout` seconds pass; whether it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Add a thread that `join()` waits for even when not passed to it."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Any = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:  # fmt: skip
        """Wait for `threads` (and the registered ones) to end; see the module docstring."""
        with self._lock:
            if threads is None:
                threads = set(self._registered_threads)
            else:
                threads = set(self._registered_threads) | set(threads)
        # Wait for the threads to end or a stop to be requested.
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        # A stop was requested (or all ended): give the rest the grace period.
        deadline = time.monotonic() + stop_grace_period_secs
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            exc_info = self._exc_info_to_raise
        if exc_info is not None:
            _, value, tb = exc_info
            raise value.with_traceback(tb)
        if stragglers and not ignore_live_threads:
            raise RuntimeError(
                f"Coordinator stopped with threads still running: {' '.join(stragglers)}. "
                "Make the threads check coord.should_stop(), or pass ignore_live_threads=True."
            )

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Re-raise the recorded exception, if any."""
        with self._lock:
            exc_info = self._exc_info_to_raise
        if exc_info is not None:
            _, value, tb = exc_info
            raise value.with_traceback(tb)


__all__ = ["Coordinator"]
