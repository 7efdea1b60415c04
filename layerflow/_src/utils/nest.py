"""Nested structures (`tf.nest`): lists, tuples, namedtuples and dicts (sorted by key).

With `expand_composites=True`, a composite value (one whose class has `_nest_components()`
and `_nest_rebuild(components)`, as `tf.experimental.ExtensionType` values do) is walked into
too: its components are its children, and rebuilding calls `_nest_rebuild`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def is_nested(structure: Any) -> bool:
    return isinstance(structure, list | tuple | Mapping)


def is_composite(value: Any) -> bool:
    """Whether `value` is a composite that `expand_composites=True` walks into."""
    return hasattr(type(value), "_nest_components")


def _nested(structure: Any, expand: bool) -> bool:
    return isinstance(structure, list | tuple | Mapping) or (expand and is_composite(structure))


def _children(structure: Any) -> list[Any]:
    if is_composite(structure) and not isinstance(structure, list | tuple | Mapping):
        return list(structure._nest_components())
    if isinstance(structure, Mapping):
        return [structure[k] for k in sorted(structure, key=_sort_key)]
    return list(structure)


def _sort_key(key: Any) -> Any:
    return (type(key).__name__, key) if not isinstance(key, str) else ("str", key)


def flatten(structure: Any, expand_composites: bool = False) -> list[Any]:
    """The leaves of `structure`, depth first; dicts in sorted key order.

    >>> flatten({"b": [1, 2], "a": 0})
    [0, 1, 2]
    """
    if not _nested(structure, expand_composites):
        return [structure]
    out: list[Any] = []
    stack = [structure]
    while stack:
        item = stack.pop()
        if _nested(item, expand_composites):
            stack.extend(reversed(_children(item)))
        else:
            out.append(item)
    return out


def _rebuild(structure: Any, children: list[Any]) -> Any:
    if is_composite(structure) and not isinstance(structure, list | tuple | Mapping):
        return structure._nest_rebuild(tuple(children))
    if isinstance(structure, Mapping):
        keys = sorted(structure, key=_sort_key)
        mapping = dict(zip(keys, children))
        return (
            type(structure)((k, mapping[k]) for k in structure)
            if type(structure) is not dict
            else {k: mapping[k] for k in structure}
        )
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*children)
    # Subclasses (Keras' tracked weight lists, say) may need constructor arguments of their own;
    # rebuilt structures are plain lists and tuples, as TF's nest gives for its wrappers.
    return list(children) if isinstance(structure, list) else tuple(children)


def pack_sequence_as(structure: Any, flat_sequence: Any, expand_composites: bool = False) -> Any:
    """Put the leaves of `flat_sequence` back into the shape of `structure`."""
    flat = list(flat_sequence)
    n = len(flatten(structure, expand_composites))
    if len(flat) != n:
        raise ValueError(
            f"pack_sequence_as: the structure has {n} leaves but flat_sequence has {len(flat)}."
        )
    it = iter(flat)

    def build(s: Any) -> Any:
        if not _nested(s, expand_composites):
            return next(it)
        return _rebuild(s, [build(c) for c in _children(s)])

    return build(structure)


def assert_same_structure(a: Any, b: Any, check_types: bool = True,
                          expand_composites: bool = False) -> None:  # fmt: skip
    def check(x: Any, y: Any, path: str) -> None:
        if _nested(x, expand_composites) != _nested(y, expand_composites):
            raise ValueError(f"The two structures differ at {path or 'the top'}: {x!r} vs {y!r}.")
        if not _nested(x, expand_composites):
            return
        if check_types and type(x) is not type(y):
            raise TypeError(
                f"The two structures differ in type at {path or 'the top'}: "
                f"{type(x).__name__} vs {type(y).__name__}."
            )
        if isinstance(x, Mapping) and sorted(x, key=_sort_key) != sorted(y, key=_sort_key):
            raise ValueError(f"The two dicts at {path or 'the top'} have different keys.")
        cx, cy = _children(x), _children(y)
        if len(cx) != len(cy):
            raise ValueError(
                f"The two structures differ in length at {path or 'the top'}: "
                f"{len(cx)} vs {len(cy)}."
            )
        for i, (u, v) in enumerate(zip(cx, cy)):
            check(u, v, f"{path}/{i}")

    check(a, b, "")


def map_structure(func: Callable[..., Any], *structures: Any, **kwargs: Any) -> Any:
    """Apply `func` to the leaves of one or more structures of the same shape."""
    if not structures:
        raise ValueError("map_structure needs at least one structure.")
    expand = kwargs.get("expand_composites", False)
    for other in structures[1:]:
        assert_same_structure(structures[0], other, kwargs.get("check_types", True), expand)
    flats = [flatten(s, expand) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)], expand)
