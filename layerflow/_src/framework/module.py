"""`tf.Module`: a named container of variables and other modules, found by attribute.

Attributes are scanned when asked (not registered on assignment), so a list assigned empty and
appended to later (`self.modules = []; self.modules.append(layer)`) is seen like any other.
Attributes whose name starts with `_` are private and never tracked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.utils import naming


def holds_state(value: Any) -> bool:
    """Whether `value` is, or is a list/tuple/dict containing, a Variable or a Trackable."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, Variable | Trackable):
            return True
        if isinstance(item, list | tuple | dict) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return False


def _state_only(value: Any) -> Any:
    """`value` with the entries that hold no state removed (lists stay lists, dicts dicts)."""
    if isinstance(value, Variable | Trackable):
        return value
    if isinstance(value, dict):
        return {k: _state_only(v) for k, v in value.items() if holds_state(v)}
    if isinstance(value, list | tuple):
        return [_state_only(v) for v in value if holds_state(v)]
    return value


def flatten_state(value: Any, kind: type) -> Iterator[Any]:
    """Instances of `kind` inside `value` (nested lists/tuples/dicts), depth first, in order."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, kind):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))


class Module(Trackable):
    """Base class of objects that own variables: TF's `tf.Module`.

    >>> class Scale(Module):
    ...     def __init__(self):
    ...         super().__init__(name="scale")
    ...         with self.name_scope:
    ...             self.w = Variable(2.0, name="w")
    >>> m = Scale()
    >>> [v.name for v in m.variables]
    ['scale/w:0']
    """

    def __init__(self, name: str | None = None) -> None:
        if name is None:
            name = naming.to_snake_case(type(self).__name__)
        elif not isinstance(name, str) or not name:
            raise ValueError(
                f"{type(self).__name__}: name must be a non-empty string, got {name!r}."
            )
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_module_initialized", True)

    # --- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.__dict__.get("_name") or naming.to_snake_case(type(self).__name__)

    @property
    def name_scope(self) -> contextlib.AbstractContextManager[str]:
        """A context in which new variables are named `<module name>/...`."""
        return naming.name_scope(self.name + "/")

    # --- tracking -------------------------------------------------------------------------
    # tf.Module lists attributes sorted by name (TF's order); Keras layers keep assignment order.
    _sorted_tracking = True

    def _tracked_attributes(self) -> Iterator[tuple[str, Any]]:
        """(name, value) of public attributes holding state (see `_sorted_tracking`)."""
        items = list(vars(self).items())
        if self._sorted_tracking:
            items.sort(key=lambda kv: kv[0])
        for key, value in items:
            if key[0] == "_":
                continue
            if isinstance(value, Variable | Trackable) or (
                isinstance(value, list | tuple | dict) and holds_state(value)
            ):
                yield key, value

    def _trackable_children(self) -> dict[str, Any]:
        return {key: _state_only(value) for key, value in self._tracked_attributes()}

    def _flatten(self, kind: type, recursive: bool = True) -> list[Any]:
        """Unique instances of `kind` reachable through tracked attributes, breadth first."""
        out: list[Any] = []
        seen: set[int] = {id(self)}
        queue: list[Module] = [self]
        while queue:
            module = queue.pop(0)
            for _, value in module._tracked_attributes():
                for item in flatten_state(value, Variable | Trackable):
                    if id(item) in seen:
                        continue
                    seen.add(id(item))
                    if isinstance(item, kind):
                        out.append(item)
                    if recursive and isinstance(item, Module):
                        queue.append(item)
        return out

    @property
    def variables(self) -> list[Variable]:
        """Every variable of this module and its submodules (each once)."""
        return self._flatten(Variable)

    @property
    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if v.trainable]

    @property
    def non_trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if not v.trainable]

    @property
    def submodules(self) -> list[Module]:
        """Every module reachable from this one (not itself), breadth first, each once."""
        return self._flatten(Module)

    @classmethod
    def with_name_scope(cls, method: Any) -> Any:
        """Decorate a method so that it runs inside the module's name scope."""

        def wrapped(self: Module, *args: Any, **kwargs: Any) -> Any:
            with self.name_scope:
                return method(self, *args, **kwargs)

        wrapped.__name__ = getattr(method, "__name__", "wrapped")
        wrapped.__doc__ = getattr(method, "__doc__", None)
        return wrapped

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} object named {self.name!r}>"
