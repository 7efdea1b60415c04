"""Public names of ops, and the dispatch of public functions called on symbolic values.

Every op knows the name TF gives it (`tf.math.reduce_sum`, `tf.nn.relu`, `tf.concat`): the
functional API names the `TFOpLambda` layer that replays an op after it. Two sources, no
stack frames and no module scans at call time:

- `@public_api("math.reduce_sum")` on a public function composed over primitives: the name is
  part of its definition, and a call with a symbolic argument (a KerasTensor) is handed, as ONE
  call of the public function, to the handler registered with `framework/convert.py`'s
  `register_symbolic` (so the node replays `reduce_sum(x, 1)` with its original arguments,
  never attributes computed from unknown dimensions). `spec=` gives the function an output
  spec rule of its own (see `autodiff/specs.py`); without one its body is traced through its
  primitives' rules.
- `register_namespace("nn", {...})`, called once by the facade for each public namespace,
  names the primitives the facade exports and the ops whose `@op` name is a public name.

>>> import layerflow as tf
>>> name_of(tf.nn.relu), name_of(tf.reduce_sum)
('tf.nn.relu', 'tf.math.reduce_sum')
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff import specs
from layerflow._src.framework import composite_dispatch, convert

# id(function) -> public name; op name (`@op("relu")`) -> public name. First registration wins,
# so the facade registers its namespaces most specific first (nn, math, linalg, ..., top level).
_by_function: dict[int, str] = {}
_by_op_name: dict[str, str] = {}
_keep: list[Any] = []  # the registered functions stay alive, so their ids stay unique
_by_name: dict[str, Any] = {}  # public name -> function (first registration wins)
# Every registration in order: ("fn", function, name) or ("ns", namespace, members, lazy).
# A namespace may have names its facade imports on first use (`lazy()` imports and returns
# them); at the first lookup they are imported and the maps are rebuilt from this log, so each
# name is registered where its namespace was and "first wins" gives the same names as eager
# imports would.
_log: list[tuple] = []
_pending = [False]
_resolve_lock = threading.RLock()
_rebuilding = [False]


def _add(fn: Any, name: str) -> None:
    if id(fn) not in _by_function:
        _by_function[id(fn)] = name
        _keep.append(fn)
    _by_name.setdefault(name, fn)
    prim = getattr(fn, "prim", None)
    if prim is not None:
        _by_op_name.setdefault(prim.name, name)


def _add_namespace(namespace: str, members: dict[str, Any]) -> None:
    prefix = f"tf.{namespace}." if namespace else "tf."
    for key, value in members.items():
        if key.startswith("_") or not callable(value) or isinstance(value, type):
            continue
        _add(value, prefix + key)
        _by_op_name.setdefault(key, prefix + key)


def register_public_name(fn: Any, name: str) -> None:
    """Record that `fn` is public as `name` (e.g. "tf.nn.relu"); the first name wins."""
    _log.append(("fn", fn, name))
    _add(fn, name)


def register_namespace(namespace: str, members: dict[str, Any],
                       lazy: Callable[[], dict[str, Any]] | None = None) -> None:  # fmt: skip
    """Name the public callables of one facade namespace ("" is the top level `tf.`);
    `lazy()` gives the ones the facade imports on first use (called at the first lookup)."""
    _log.append(("ns", namespace, members, lazy))
    _add_namespace(namespace, members)
    if lazy is not None:
        _pending[0] = True


def _resolve_pending() -> None:
    with _resolve_lock:  # (another thread may look a name up meanwhile: it waits)
        if _pending[0] and not _rebuilding[0]:  # (a lookup while importing: the maps so far)
            _rebuilding[0] = True
            try:
                _rebuild()
            finally:
                _rebuilding[0] = False


def _rebuild() -> None:
    entries = list(_log)
    loaded = {i: e[3]() for i, e in enumerate(entries) if e[0] == "ns" and e[3] is not None}
    for i, names in loaded.items():  # (importing them may have logged public_api names)
        _log[i] = ("ns", entries[i][1], {**entries[i][2], **names}, None)
    _by_function.clear()
    _by_op_name.clear()
    _by_name.clear()
    _keep.clear()
    for entry in _log:
        if entry[0] == "fn":
            _add(entry[1], entry[2])
        else:
            _add_namespace(entry[1], entry[2])
    _pending[0] = False


def function_named(name: str) -> Any:
    """The public function registered as `name` ("tf.nn.relu"), or None."""
    if _pending[0]:
        _resolve_pending()
    return _by_name.get(name)


def name_of(fn: Any) -> str:
    """The public name of an op or public function: declared, registered, or `tf.<op name>`."""
    declared = getattr(fn, "public_name", None)
    if declared is not None:
        return declared
    if _pending[0]:
        _resolve_pending()
    found = _by_function.get(id(fn))
    if found is not None:
        return found
    prim = getattr(fn, "prim", None)
    if prim is not None:
        return _by_op_name.get(prim.name, f"tf.{prim.name}")
    return f"tf.{getattr(fn, '__name__', 'op').lstrip('_')}"


def _has_symbolic(args: tuple, kwargs: dict) -> bool:
    types = convert.symbolic[0]
    for v in args:
        if isinstance(v, types):
            return True
        if isinstance(v, list | tuple) and any(isinstance(t, types) for t in v):
            return True
    return any(isinstance(v, types) for v in kwargs.values())


def public_api(
    name: str, spec: Callable[..., Any] | None = None
) -> Callable[[Callable[..., Any]], Any]:
    """Declare a public function's TF name ("math.reduce_sum") and its symbolic dispatch.

    `spec(*args, **kwargs)`, given the call's arguments with symbolic values as ArraySpecs,
    returns the output spec; without it, the function's body is traced on the symbolic values.
    """
    public = f"tf.{name}"

    def decorate(fn: Callable[..., Any]) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if composite_dispatch.types[0] and composite_dispatch.has_composite(args, kwargs):
                return composite_dispatch.dispatch(wrapper, args, kwargs)
            if convert.symbolic[0] and _has_symbolic(args, kwargs):
                if specs.is_tracing():
                    if spec is not None:
                        return convert.symbolic[1](wrapper, args, kwargs)
                    return fn(*args, **kwargs)
                return convert.symbolic[1](wrapper, args, kwargs)
            return fn(*args, **kwargs)

        wrapper.public_name = public  # type: ignore[attr-defined]
        wrapper.spec_rule = spec  # type: ignore[attr-defined]
        wrapper.traced = fn  # type: ignore[attr-defined]
        register_public_name(wrapper, public)
        return wrapper

    return decorate


def output_spec(fn: Any, args: tuple, kwargs: dict) -> Any:
    """The output spec(s) of `fn(*args, **kwargs)` with symbolic values among the arguments.

    `fn` is an op (its spec rule, or its forward run twice), a `public_api` function (its
    `spec`, or its body traced), or any other callable (traced). Runs inside `specs.tracing()`;
    a body that cannot be traced (it needs values) runs on zeros twice (`specs.run_twice`).
    """
    with specs.tracing():
        if hasattr(fn, "prim"):
            return specs.abstract_eval(fn, args, kwargs)
        rule = getattr(fn, "spec_rule", None)
        if rule is not None:
            spec_args = tuple(_as_specs(a) for a in args)
            spec_kwargs = {k: _as_specs(v) for k, v in kwargs.items() if k != "name"}
            return rule(*spec_args, **spec_kwargs)
        traced = getattr(fn, "traced", fn)
        try:
            return traced(*args, **kwargs)
        except specs.SpecError:
            raise
        except Exception:  # noqa: BLE001 - a body that needs values: the exact two-size run
            pass
    return specs.run_twice(traced, args, kwargs, what=name_of(fn))


def _as_specs(value: Any) -> Any:
    if convert.is_symbolic_value(value):
        return specs.spec_of(value)
    if isinstance(value, list | tuple) and any(convert.is_symbolic_value(v) for v in value):
        return type(value)(_as_specs(v) for v in value)
    return value
