"""Keras 2's tracking containers: a list or dict of layers held by a layer attribute.

`self.blocks = [Dense(2), Dense(3)]` stores a `ListWrapper` (a `list` subclass) and
`self.heads = {"a": Dense(1)}` a `DictWrapper` (a `dict` subclass), as tf.keras 2 does: they
behave as the list or dict, and add `.layers` and the weight lists of what they hold. Lists and
dicts that hold no layers or variables stay plain, unless empty (they are likely to be filled).
Changes through the wrapper need no hook: the layer's structure cache compares the ids held
by every tracked container on read (layer_state.py).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.module import flatten_state, holds_state
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.engine.layer_state import LayerState


def wrap_container(value: Any) -> Any:
    """A list or dict of layers/variables (or an empty one, to be filled) as the Keras 2
    wrapper that a layer attribute holds; anything else unchanged.

    Unlike Keras 2's wrapper, which keeps the list it wraps as its storage, this one is a copy
    (a `list` subclass cannot share another list's storage): add layers through the attribute
    (`self.blocks.append(...)`), not through another name bound to the list assigned.
    """
    kind = type(value)
    if kind is list and (not value or holds_state(value)):
        return ListWrapper(value)
    if kind is dict and (not value or holds_state(value)):
        return DictWrapper(value)
    return value


class _Tracking:
    """`.layers` and the weight lists of a tracking container (Keras 2's `List`/`Dict`)."""

    __slots__ = ()

    @property
    def layers(self) -> list[Any]:
        """The layers held, also inside nested containers (not their sublayers), each once."""
        out: list[Any] = []
        seen: set[int] = set()
        for layer in flatten_state(self, LayerState):
            if id(layer) not in seen:
                seen.add(id(layer))
                out.append(layer)
        return out

    def _gather(self, kind: str) -> list[Variable]:
        out: list[Variable] = []
        seen: set[int] = set()
        for item in flatten_state(self, Variable | LayerState):
            if isinstance(item, LayerState):
                found = item._collect(kind, seen, set())
            elif id(item) in seen or (kind != "all" and item.trainable != (kind == "trainable")):
                found = []
            else:
                seen.add(id(item))
                found = [item]
            out.extend(found)
        return out

    @property
    def weights(self) -> list[Variable]:
        return self._gather("all")

    @property
    def trainable_weights(self) -> list[Variable]:
        return self._gather("trainable")

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return self._gather("non_trainable")

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights


class ListWrapper(_Tracking, list):
    """A list held by a layer attribute (Keras 2's `ListWrapper`): a `list`, plus `.layers`.

    >>> import layerflow as tf
    >>> class Net(tf.keras.layers.Layer):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.blocks = [tf.keras.layers.Dense(2, name="a")]
    >>> net = Net()
    >>> net.blocks.append(tf.keras.layers.Dense(3, name="b"))
    >>> isinstance(net.blocks, list), [layer.name for layer in net.blocks.layers]
    (True, ['a', 'b'])
    """

    __slots__ = ()

    def __init__(self, items: Any = ()) -> None:
        super().__init__(map(wrap_container, items))

    def append(self, value: Any) -> None:
        super().append(wrap_container(value))

    def extend(self, values: Any) -> None:
        super().extend(map(wrap_container, values))

    def insert(self, index: Any, value: Any) -> None:
        super().insert(index, wrap_container(value))

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            value = map(wrap_container, value)
        else:
            value = wrap_container(value)
        super().__setitem__(index, value)

    def __iadd__(self, values: Any) -> ListWrapper:
        self.extend(values)
        return self

    def __repr__(self) -> str:
        return f"ListWrapper({list.__repr__(self)})"


class DictWrapper(_Tracking, dict):
    """A dict held by a layer attribute (Keras 2's `DictWrapper`): a `dict`, plus `.layers`."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.update(*args, **kwargs)

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, wrap_container(value))

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def __ior__(self, other: Any) -> DictWrapper:
        self.update(other)
        return self

    def __repr__(self) -> str:
        return f"DictWrapper({dict.__repr__(self)})"
