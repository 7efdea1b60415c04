"""Which strategy is current, per thread, and whether code runs in replica or cross-replica context.

An entry is pushed by `strategy.scope()` (cross-replica), by each replica of `strategy.run`
(replica context), and around a `merge_call` (cross-replica again). The innermost entry decides.
Kept separate from the strategies so that mirrored variables can ask "which replica am I?"
without importing them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_local = threading.local()


class Entry:
    """One level of distribution context: a strategy, and a replica context or None."""

    __slots__ = ("strategy", "replica_context", "local_index")

    def __init__(self, strategy: Any, replica_context: Any = None, local_index: int | None = None):
        self.strategy = strategy
        self.replica_context = replica_context
        # The index of this replica among the devices of this process (None: cross-replica).
        self.local_index = local_index


def _stack() -> list[Entry]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def top() -> Entry | None:
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def push(entry: Entry) -> Iterator[Entry]:
    stack = _stack()
    stack.append(entry)
    try:
        yield entry
    finally:
        stack.pop()


def local_replica(strategy: Any) -> int | None:
    """The local replica index when running inside `strategy.run`, else None (hot path)."""
    stack = getattr(_local, "stack", None)
    if not stack:
        return None
    entry = stack[-1]
    if entry.strategy is strategy:
        return entry.local_index
    return None
