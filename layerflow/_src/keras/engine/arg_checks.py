"""Checks of layer arguments that are sizes, shapes and axes: integers, never truncated.

Keras 2 turned `Dense(2.5)` into 2 units and `Conv2D(2.5, 3)` into 2 filters without a word;
here a non-integral value is an error that names the layer and the argument. The rules follow
tf.keras where it has one:

- counts that tf.keras passes through `int()` (`units`, `filters`, ...): ints, NumPy integers,
  anything with `__index__`, and integral floats (`2.0`, accepted by tf.keras) are taken;
  `2.5` raises ValueError, strings, None and bools raise TypeError;
- shapes and axes (`input_shape`, `target_shape`, `axis`...): what `tf.TensorShape` accepts,
  integers (`__index__`) or None; any float raises TypeError, as in TensorFlow.

>>> check_count(2.0, "units", "Dense 'd'")
2
>>> check_shape((None, 3), "input_shape", "Dense 'd'")
(None, 3)
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any


def _index(value: Any) -> int | None:
    """`value` as an int if it is an integer (not a bool), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def check_count(value: Any, name: str, owner: str, *, minimum: int = 1) -> int:
    """A count such as `units` or `filters`: an integer (or integral float) >= `minimum`."""
    n = _index(value)
    if n is None:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            if not (math.isfinite(value) and float(value).is_integer()):
                raise ValueError(
                    f"{owner}: `{name}` must be an integer, got {value!r}. Sizes are whole "
                    "numbers and are never truncated: pass the integer you mean"
                    + (
                        f" ({math.floor(value)} or {math.ceil(value)})."
                        if math.isfinite(value)
                        else "."
                    )
                )
            n = int(value)
        else:
            raise TypeError(
                f"{owner}: `{name}` must be an integer, got {value!r} of type "
                f"{type(value).__name__}. Pass an int, e.g. {name}=4."
            )
    if n < minimum:
        raise ValueError(f"{owner}: `{name}` must be an integer >= {minimum}, got {value!r}.")
    return n


def check_counts(value: Any, n: int, name: str, owner: str, *, minimum: int = 1) -> tuple:
    """`3` -> `(3, 3)` for `n=2`; a sequence of `n` counts stays (as ints)."""
    if _index(value) is not None or isinstance(value, numbers.Real):
        items: tuple = (value,) * n
    elif isinstance(value, str):
        raise TypeError(
            f"{owner}: `{name}` must be an integer or a tuple of {n} integers, got {value!r}."
        )
    else:
        try:
            items = tuple(value)
        except TypeError:
            raise TypeError(
                f"{owner}: `{name}` must be an integer or a tuple of {n} integers, got {value!r}."
            ) from None
        if len(items) != n:
            raise ValueError(
                f"{owner}: `{name}` must be an integer or a tuple of {n} integers, got "
                f"{value!r} ({len(items)} entries)."
            )
    return tuple(check_count(v, name, owner, minimum=minimum) for v in items)


def check_dim(value: Any, name: str, owner: str, *, allow_none: bool = True) -> int | None:
    """One dimension of a shape: an integer (`__index__`), or None when allowed."""
    if value is None and allow_none:
        return None
    n = _index(value)
    if n is None:
        raise TypeError(
            f"{owner}: every entry of `{name}` must be an integer"
            + (" or None" if allow_none else "")
            + f", got {value!r} of type {type(value).__name__}."
        )
    return n


def check_shape(
    value: Any, name: str, owner: str, *, allow_none: bool = True, minimum: int = 0
) -> tuple:
    """A shape: an int (one dimension) or a sequence of integers (or None when allowed)."""
    if _index(value) is not None:
        value = (value,)
    elif isinstance(value, str) or not hasattr(value, "__iter__"):
        raise TypeError(
            f"{owner}: `{name}` must be a tuple of integers, got {value!r} of type "
            f"{type(value).__name__}."
        )
    dims = tuple(check_dim(d, name, owner, allow_none=allow_none) for d in value)
    bad = [d for d in dims if d is not None and d < minimum]
    if bad:
        raise ValueError(f"{owner}: the entries of `{name}` must be >= {minimum}, got {value!r}.")
    return dims


def check_axis(value: Any, name: str, owner: str, *, allow_list: bool = True) -> Any:
    """An axis (int) or, when allowed, a list/tuple of axes (kept as given)."""
    if _index(value) is not None:
        return _index(value)
    if allow_list and isinstance(value, list | tuple):
        return type(value)(check_dim(a, name, owner, allow_none=False) for a in value)
    raise TypeError(
        f"{owner}: `{name}` must be an integer"
        + (" or a list of integers" if allow_list else "")
        + f", got {value!r} of type {type(value).__name__}."
    )
