"""`tf.keras.utils.Sequence` and the enqueuers that read it (or a generator) in threads.

`fit(x=sequence, workers=n)` reads batches with n threads, in order, a bounded number ahead.
`use_multiprocessing=True` is accepted and runs threads too: NumPy's batch assembly releases
the GIL, and worker processes would have to pickle the model's inputs (and the Sequence) across.
"""

from __future__ import annotations

import concurrent.futures
import queue
import random
import threading
from collections.abc import Iterator
from typing import Any


class Sequence:
    """Base class for batch sources that know their length: define `__getitem__(index)`
    (one whole batch) and `__len__()` (the number of batches); `on_epoch_end` runs after each
    epoch of `fit`.

    >>> import numpy as np, layerflow as tf
    >>> class Batches(tf.keras.utils.Sequence):
    ...     def __len__(self):
    ...         return 2
    ...     def __getitem__(self, i):
    ...         return np.full((4, 1), i, "float32"), np.zeros((4, 1), "float32")
    >>> [int(x[0, 0]) for x, _ in Batches()]
    [0, 1]
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index).")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__().")

    def on_epoch_end(self) -> None:
        """Called at the end of every epoch (override to reshuffle, for example)."""

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]


def ordered_map(fetch: Any, indices: list[int], workers: int, max_queue_size: int) -> Iterator:
    """`fetch(i)` for each index, computed by `workers` threads, yielded in order, at most
    `max_queue_size` ahead of the consumer."""
    if workers <= 1:
        for i in indices:
            yield fetch(i)
        return
    ahead = max(int(max_queue_size), 1)
    pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="keras-sequence")
    try:
        pending: list[concurrent.futures.Future] = []
        it = iter(indices)
        for i in it:
            pending.append(pool.submit(fetch, i))
            if len(pending) >= ahead:
                break
        while pending:
            result = pending.pop(0).result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(fetch, nxt))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class SequenceEnqueuer:
    """Base for reading a Sequence or generator ahead of the consumer in threads.

    Use: `enqueuer.start(workers, max_queue_size)`, then iterate `enqueuer.get()`, then
    `enqueuer.stop()`.
    """

    def __init__(self, sequence: Any, use_multiprocessing: bool = False) -> None:
        self.sequence = sequence
        self.use_multiprocessing = use_multiprocessing  # accepted; threads are used
        self.workers = 0
        self.max_queue_size = 10
        self.stop_signal: threading.Event | None = None
        self.queue: queue.Queue | None = None
        self.run_thread: threading.Thread | None = None

    def is_running(self) -> bool:
        return self.stop_signal is not None and not self.stop_signal.is_set()

    def start(self, workers: int = 1, max_queue_size: int = 10) -> None:
        """Start reading with `workers` threads, keeping up to `max_queue_size` items ready."""
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}.")
        self.workers, self.max_queue_size = int(workers), int(max_queue_size)
        self.queue = queue.Queue(max(self.max_queue_size, 1))
        self.stop_signal = threading.Event()
        self.run_thread = threading.Thread(target=self._run, daemon=True)
        self.run_thread.start()

    def _put(self, item: Any) -> bool:
        while self.stop_signal is not None and not self.stop_signal.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def stop(self, timeout: float | None = None) -> None:
        """Stop the reader threads (waiting up to `timeout` seconds)."""
        if self.stop_signal is not None:
            self.stop_signal.set()
        if self.run_thread is not None:
            self.run_thread.join(timeout)
        self.run_thread = None

    def _run(self) -> None:
        raise NotImplementedError

    def get(self) -> Iterator[Any]:
        """The items, in order; an exception raised while reading is raised here."""
        while True:
            if self.queue is None:
                raise ValueError(f"{type(self).__name__}.get() called before start().")
            try:
                kind, item = self.queue.get(timeout=0.05)
            except queue.Empty:
                if not self.is_running():
                    return
                continue
            if kind == "error":
                self.stop()
                raise item
            if kind == "end":
                return
            yield item


class OrderedEnqueuer(SequenceEnqueuer):
    """Reads a `Sequence` in order with threads, epoch after epoch (`shuffle` reorders each
    epoch's batches), calling its `on_epoch_end` between epochs."""

    def __init__(self, sequence: Any, use_multiprocessing: bool = False,
                 shuffle: bool = False) -> None:  # fmt: skip
        super().__init__(sequence, use_multiprocessing)
        self.shuffle = shuffle

    def _run(self) -> None:
        try:
            while self.is_running():
                order = list(range(len(self.sequence)))
                if self.shuffle:
                    random.shuffle(order)
                mapped = ordered_map(self.sequence.__getitem__, order, self.workers,
                                     self.max_queue_size)  # fmt: skip
                for item in mapped:
                    if not self._put(("item", item)):
                        mapped.close()
                        return
                self.sequence.on_epoch_end()
        except Exception as err:  # handed to the consumer, raised in get()
            self._put(("error", err))


class GeneratorEnqueuer(SequenceEnqueuer):
    """Reads a generator (or any iterator) ahead of the consumer in a thread; `get()` ends
    when the generator does."""

    def __init__(self, generator: Any, use_multiprocessing: bool = False,
                 random_seed: Any = None) -> None:  # fmt: skip
        super().__init__(generator, use_multiprocessing)
        self.random_seed = random_seed
        self._lock = threading.Lock()

    def _run(self) -> None:
        it = iter(self.sequence)
        try:
            while self.is_running():
                with self._lock:  # generators are not thread-safe
                    try:
                        item = next(it)
                    except StopIteration:
                        self._put(("end", None))
                        return
                if not self._put(("item", item)):
                    return
        except Exception as err:
            self._put(("error", err))
