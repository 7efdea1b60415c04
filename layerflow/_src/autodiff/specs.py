"""Output specs: an op's output shape and dtype computed from its inputs' shapes and dtypes.

Symbolic execution (the functional API's KerasTensors) never runs an op on data. Each op may
declare a *spec rule*, a function of its inputs' `ArraySpec`s (shape with None for unknown
dimensions, NumPy dtype) and its attributes, returning the output's `ArraySpec` (or a tuple of
them for a multi-output op), as Keras 3's `compute_output_spec` or JAX's abstract evaluation:

    @op("square", spec="same")              # a named family (see `FAMILIES`), or
    def square(xp, x): ...

    @square.spec                            # a rule of its own
    def _(x):
        return ArraySpec(x.shape, x.dtype)

Rules for the op families used by layers live in `ops/shape_rules.py`. An op without a rule
falls back to running its forward on zeros TWICE, each unknown dimension set to 2 and then 3:
exactly the output axes whose size differs between the two runs are unknown (None). The
fallback never guesses from a coincidence of sizes.

>>> spec = ArraySpec((None, 3), "float32")
>>> spec.shape, spec.ndim, spec.dtype.name
((None, 3), 2, 'float32')
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import _dtype_error, _family_error
from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.framework import convert, dtypes
from layerflow._src.framework.tensor import Tensor, TensorLike

# Unknown dimensions take these sizes in the fallback's two runs.
FALLBACK_SIZES = (2, 3)


class ArraySpec:
    """The static facts of an array: `shape` (a tuple, None where unknown), `ndim`, `dtype`.

    A KerasTensor answers `._data` with one of these, so Python-level op functions that read
    `x._data.ndim` or `.shape` to normalise their arguments work on symbolic inputs too.
    """

    __slots__ = ("shape", "ndim", "dtype")

    def __init__(self, shape: Any, dtype: Any) -> None:
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.ndim = len(self.shape)
        self.dtype = dtypes.as_dtype(dtype).np if not isinstance(dtype, np.dtype) else dtype

    @property
    def size(self) -> int | None:
        """The number of elements, None when a dimension is unknown (code that reads
        `x._data.size` works on a spec of a fully known shape)."""
        if None in self.shape:
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        return f"ArraySpec(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ArraySpec) and self.shape == other.shape and self.dtype == other.dtype
        )

    __hash__ = None  # type: ignore[assignment]


class SpecError(ValueError):
    """A spec rule found the inputs incompatible (the eager op would fail on them too): never
    hidden by the two-size fallback."""


# Named rule families an op can declare with `@op(..., spec="<family>")`; `ops/shape_rules.py`
# fills this table (rules are functions of ArraySpecs and attributes).
FAMILIES: dict[str, Callable[..., Any]] = {}


def register_family(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: make `rule` the spec rule of every op declared with `spec=name`."""

    def decorate(rule: Callable[..., Any]) -> Callable[..., Any]:
        FAMILIES[name] = rule
        return rule

    return decorate


def rule_of(prim: Any) -> Callable[..., Any] | None:
    """The spec rule of a primitive (resolving a family name), or None when it has none."""
    rule = prim.spec
    if isinstance(rule, str):
        found = FAMILIES.get(rule)
        if found is None:
            raise ValueError(
                f"op {prim.name!r} declares spec={rule!r}, which is not a registered spec family; "
                f"known families: {sorted(FAMILIES)}."
            )
        return found
    return rule


# --- tracing state: inside `tracing()`, ops on symbolic values compute specs, record nothing --


class _TraceState(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_trace = _TraceState()


@contextmanager
def tracing() -> Iterator[None]:
    """Within this block, symbolic calls compute output specs and record no nodes."""
    _trace.depth += 1
    try:
        yield
    finally:
        _trace.depth -= 1


def is_tracing() -> bool:
    return _trace.depth > 0


# --- evaluating one op call on specs ---------------------------------------------------------


def _split(prim: Any, args: tuple) -> tuple[list[Any], tuple]:
    if prim.list_input:
        return list(args[0]), tuple(args[1:])
    return list(args[: prim.n_inputs]), tuple(args[prim.n_inputs :])


def spec_of(value: Any, hint: Any = None) -> ArraySpec:
    """The ArraySpec of a symbolic value, a tensor, or a Python/NumPy value (TF's dtype rules;
    `hint` is the dtype a Python number takes from its tensor partner)."""
    if convert.is_symbolic_value(value) or isinstance(value, TensorLike):
        data = value._data
        return data if isinstance(data, ArraySpec) else ArraySpec(data.shape, data.dtype)
    arr = convert.host_array(value, None if hint is None else dtypes.from_numpy(hint))
    return ArraySpec(arr.shape, arr.dtype)


def input_specs(prim: Any, values: list[Any]) -> list[ArraySpec]:
    anchor = next(
        (v for v in values if convert.is_symbolic_value(v) or isinstance(v, TensorLike)), None
    )
    hint = spec_of(anchor).dtype if (anchor is not None and prim.same_dtype) else None
    specs = [spec_of(v, hint) for v in values]
    # The eager op's dtype checks, so a symbolic call fails where the eager call would.
    if prim.accepts is not None and specs and specs[0].dtype.kind not in prim.accepts:
        raise _family_error(prim, specs[0].dtype)
    if prim.same_dtype:
        for s in specs[1:]:
            if s.dtype != specs[0].dtype:
                raise _dtype_error(prim, specs[0].dtype, s.dtype)
    return specs


def abstract_eval(wrapper: Any, args: tuple, kwargs: dict) -> Any:
    """The output spec(s) of op `wrapper` called with `args`/`kwargs` (some values symbolic).

    Uses the op's spec rule when it has one, else `run_twice` (see the module docstring).
    """
    prim = wrapper.prim
    kwargs = {k: v for k, v in kwargs.items() if k != "name"}
    rule = rule_of(prim)
    if rule is None:
        return run_twice(lambda *a, **k: wrapper(*a, **k), args, kwargs)
    values, rest = _split(prim, args)
    specs = input_specs(prim, values)
    if prim.list_input:
        return rule(specs, *rest, **kwargs)
    return rule(*specs, *rest, **kwargs)


def _concrete(value: Any, size: int) -> Any:
    if convert.is_symbolic_value(value):
        data = value._data
        shape = tuple(size if d is None else d for d in data.shape)
        device = backend.current_device()
        return Tensor(backend.to_device(np.zeros(shape, data.dtype), device), device)
    if isinstance(value, list | tuple) and any(convert.is_symbolic_value(v) for v in value):
        return type(value)(_concrete(v, size) for v in value)
    if isinstance(value, dict):
        return {k: _concrete(v, size) for k, v in value.items()}
    return value


def _merge(first: Any, second: Any, what: str) -> Any:
    if isinstance(first, list | tuple) and isinstance(second, list | tuple):
        return type(first)(_merge(a, b, what) for a, b in zip(first, second))
    if isinstance(first, dict):
        return {k: _merge(first[k], second[k], what) for k in first}
    if not hasattr(first, "shape") or not hasattr(first, "dtype"):
        return first
    a, b = tuple(first.shape), tuple(second.shape)
    if len(a) != len(b):
        raise ValueError(
            f"{what}: the output's rank depends on the unknown input dimensions ({a} vs {b} "
            "for two sizes), so its symbolic shape cannot be known. Give the input a fixed "
            "shape, or call it on real tensors."
        )
    return ArraySpec([x if x == y else None for x, y in zip(a, b)], first.dtype)


def run_twice(fn: Callable[..., Any], args: tuple, kwargs: dict, what: str = "op") -> Any:
    """Output specs of `fn` found by running it on zeros with unknown dims 2, then 3.

    Axes whose sizes differ between the two runs are unknown (None); all others are exact.
    Nothing is recorded on any tape, and floating-point warnings of the zeros are silenced.
    """
    outs = []
    for size in FALLBACK_SIZES:
        real_args = tuple(_concrete(a, size) for a in args)
        real_kwargs = {k: _concrete(v, size) for k, v in kwargs.items()}
        with stop_recording_all(), np.errstate(all="ignore"):
            outs.append(fn(*real_args, **real_kwargs))
    return _merge(outs[0], outs[1], what)
