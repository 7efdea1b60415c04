"""Name scopes (`tf.name_scope`) and process-wide unique names (`dense`, `dense_1`, ...)."""

from __future__ import annotations

import collections
import contextlib
import re
import threading
from collections.abc import Iterator

_local = threading.local()
_counters: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


def _stack() -> list[str]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_scope() -> str:
    """The active name scope as a prefix: "" or "outer/inner/"."""
    stack = _stack()
    return "".join(s + "/" for s in stack)


@contextlib.contextmanager
def name_scope(name: str | None) -> Iterator[str]:
    """Prefix the names of variables created inside with `name/`.

    A name ending in "/" replaces the current scope instead of nesting in it.
    """
    stack = _stack()
    saved = list(stack)
    if name:
        if name.endswith("/"):
            stack[:] = [p for p in name.rstrip("/").split("/") if p]
        else:
            stack.append(name)
    try:
        yield current_scope()
    finally:
        stack[:] = saved


def to_snake_case(name: str) -> str:
    """`Dense` -> `dense`, `MyDenseLayer` -> `my_dense_layer`, `MLP` -> `mlp` (Keras' rule)."""
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if not s.startswith("_") else "private" + s


def unique_name(base: str) -> str:
    """`base` the first time, then `base_1`, `base_2`, ... for the life of the process."""
    with _lock:
        n = _counters[base]
        _counters[base] += 1
    return base if n == 0 else f"{base}_{n}"


def reset_names() -> None:
    """Forget issued names (`tf.keras.backend.clear_session`)."""
    with _lock:
        _counters.clear()
