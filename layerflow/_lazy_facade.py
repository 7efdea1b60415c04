"""Facade names imported on first use, to keep `import layerflow` fast.

A facade module lists `_LAZY_NAMES = {public name: "module.path"}` (or `"module.path:attr"`
when the names differ) and gets a module `__getattr__` that imports the implementing module
when a name is first read, then stores the value in the facade's globals (later reads are
plain lookups). `members_of(facade)` gives the op-name registry a function that imports them
all (`autodiff/dispatch.register_namespace`'s `lazy`).

>>> table = {"sqrt": "math"}
>>> g = {}
>>> getattr_ = lazy_getattr("demo", table, g)
>>> getattr_("sqrt")(4.0), "sqrt" in g
(2.0, True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_getattr(facade: str, table: dict[str, str], globs: dict[str, Any],
                 fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:  # fmt: skip
    """A module `__getattr__` that resolves `table`'s names into `globs` (else `fallback`)."""

    def __getattr__(name: str) -> Any:
        source = table.get(name)
        if source is None:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {facade!r} has no attribute {name!r}")
        module, _, attr = source.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        globs[name] = value
        return value

    return __getattr__


def members_of(facade: Any) -> Callable[[], dict[str, Any]] | None:
    """A function importing and returning every lazy name of `facade` (None if it has none)."""
    table = getattr(facade, "_LAZY_NAMES", None)
    if not table:
        return None
    return lambda: {name: getattr(facade, name) for name in table}
