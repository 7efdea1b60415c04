"""The Trackable protocol: objects that own state expose their children by attribute name.

Checkpoints walk this graph and key every variable by the path of names that reaches it
(`hidden/kernel`, `layers/1/bias`), never by auto-generated variable names, so that a fresh
instance of the same class finds its values.

Restoring into an object that has not created its variables yet (a layer before its first call)
is part of the protocol too, so that saving never reaches into an object's private fields:

- `_restore_on_create(source)`: "when you create a variable, take its value from `source`";
- `_call_after_build(fn)`: "call `fn` once you are built", where the load checks what the
  build created against the file and reports (or assigns) what creation did not consume.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from layerflow._src.framework.variables import Variable


class RestoreSource(Protocol):
    """Values a load kept for the variables one object has not created yet."""

    def take(self, key: str) -> Any | None:
        """The value for the variable being created as `key` (its name relative to its owner,
        e.g. `kernel`), or None to use the initializer. A value is handed out once."""


class Trackable:
    """Base of everything that owns variables or other trackables."""

    def _trackable_children(self) -> dict[str, Any]:
        """Named children: Variables, Trackables, or lists/tuples/dicts of them."""
        return {}

    def _restore_on_create(self, source: RestoreSource) -> None:
        """Give the variables this object creates from now on their values from `source`.

        Called by a load on an object that is not built yet. Each time the object creates a
        variable it calls `source.take(key)` (key: the variable's name relative to the object)
        and uses the value instead of the initializer. Sources of later loads come first, and
        every source is asked (so an older load cannot hand out a value a newer one replaced).

        The default ignores the source: such an object gets its values after it is built,
        from the check that `_call_after_build` runs.
        """

    def _call_after_build(self, fn: Callable[[], None]) -> bool:
        """Call `fn()` once, right after the call that builds this object; True if accepted.

        The default returns False: the object has no build step, so `fn` is never called and
        the caller must not wait for it.
        """
        return False


def walk(root: Any, prefix: str = "") -> Iterator[tuple[str, Variable]]:
    """Every (structural path, variable) reachable from `root`, depth first, in child order.

    A variable reachable by several paths is yielded once per path; callers that store
    values deduplicate by identity.
    """
    seen: set[int] = set()

    def visit(obj: Any, path: str) -> Iterator[tuple[str, Variable]]:
        if isinstance(obj, Variable):
            yield path, obj
            return
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield from visit(v, f"{path}/{k}" if path else str(k))
            return
        if isinstance(obj, list | tuple):
            for i, v in enumerate(obj):
                yield from visit(v, f"{path}/{i}" if path else str(i))
            return
        if isinstance(obj, Trackable):
            if id(obj) in seen:
                return
            seen.add(id(obj))
            for name, child in obj._trackable_children().items():
                yield from visit(child, f"{path}/{name}" if path else name)
            seen.discard(id(obj))

    yield from visit(root, prefix)
