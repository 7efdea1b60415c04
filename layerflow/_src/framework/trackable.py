"""The Trackable protocol: objects that own state expose their children by attribute name.

Checkpoints walk this graph and key every variable by the path of names that reaches it
(`hidden/kernel`, `layers/1/bias`), never by auto-generated variable names, so that a fresh
instance of the same class finds its values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from layerflow._src.framework.variables import Variable


class Trackable:
    """Base of everything that owns variables or other trackables."""

    def _trackable_children(self) -> dict[str, Any]:
        """Named children: Variables, Trackables, or lists/tuples/dicts of them."""
        return {}


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
