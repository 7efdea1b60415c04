"""Rewrites of a trace's steps before they become a plan: constant folding, common
subexpressions, transpose-free matmuls.

Each pass takes the top-level steps and returns new ones (the graph's own `Step`s are never
changed: `Plan.replay` runs those through the op wrappers). A slot that a pass removes is
replaced, in every later step (sub-blocks included) and in the outputs, by its new reference:
a `Const` (folded) or another slot (a common subexpression, a matmul operand).

- Folding runs at plan-build time the pure steps whose inputs are all constants (and the
  `ones_like`/`zeros_like` fills of a tensor of known shape, e.g. a gradient's seed). Host
  steps (random draws, prints, optimizer updates) and ops named `*random*` are never folded,
  nor results over `_FOLD_MAX_BYTES` (a folded constant lives as long as the plan).
- Common subexpressions: a pure step identical to an earlier one (same op, same inputs, same
  attributes) reuses its result. Variables may change at a stateful step, so the table is
  cleared there and at control flow.
- `matmul(a, transpose(b))` becomes `matmul(a, b, transpose_b=True)` (a strided view that BLAS
  reads as is, no copy); the transpose step is then dead unless something else reads it.
"""

from __future__ import annotations

import math
from typing import Any

from layerflow._src import backend
from layerflow._src.framework.variables import Variable
from layerflow._src.function.graph import Const, Graph, Step, _ones_like, _zeros_like

_FOLD_MAX_BYTES = 1 << 20
_FILLS = (_ones_like, _zeros_like)


class Folded(Const):
    """A value computed at plan-build time. Returned as a result, it is copied at every call
    (as the step it replaces made a fresh array), so no caller can change another's."""

    __slots__ = ()


def optimize(steps: list[Step], graph: Graph, outputs: list[Any],
             device: backend.Device) -> tuple[list[Step], list[Any]]:  # fmt: skip
    """The rewritten top-level steps and outputs (see the module docstring)."""
    subst: dict[int, Any] = {}
    steps = fold_constants(steps, graph, device, subst)
    steps = eliminate_common(steps, subst)
    steps = transpose_free_matmul(steps, graph, subst)
    return steps, [_sub(r, subst) for r in outputs]


# --- substitution ------------------------------------------------------------------------------


def _sub(ref: Any, subst: dict[int, Any]) -> Any:
    if type(ref) is int:
        while type(ref) is int and ref in subst:
            ref = subst[ref]
    return ref


def rewrite(step: Step, subst: dict[int, Any]) -> Step:
    """A copy of `step` with its references (sub-blocks included) substituted."""
    if not subst:
        return step
    new = Step(step.kind, step.fn, [_sub(r, subst) for r in step.refs], step.rest, step.kwargs,
               step.outs, step.stateful)  # fmt: skip
    new.wrapper = step.wrapper
    new.blocks = [[rewrite(s, subst) for s in block] for block in step.blocks]
    extra = step.extra
    if step.kind == "cond":
        extra = [[_sub(r, subst) for r in refs] for refs in extra]
    elif step.kind == "while":
        loop_slots, pred, body_out, limit, stack = extra
        body_out = [_sub(r, subst) for r in body_out]
        extra = (loop_slots, _sub(pred, subst), body_out, _sub(limit, subst), stack)
    elif step.kind == "while_grad":
        holders, dy_holders, grad_refs = extra
        extra = (holders, dy_holders, [_sub(r, subst) for r in grad_refs])
    new.extra = extra
    return new


# --- constant folding --------------------------------------------------------------------------


def _foldable(step: Step) -> bool:
    if step.stateful or step.blocks:
        return False
    if step.kind == "op":
        return "random" not in step.fn.name and all(isinstance(r, Const) for r in step.refs)
    if step.kind == "array":
        return step.fn in _FILLS or all(isinstance(r, Const) for r in step.refs)
    return False


def _small(value: Any) -> bool:
    return hasattr(value, "nbytes") and value.nbytes <= _FOLD_MAX_BYTES


def fold_constants(steps: list[Step], graph: Graph, device: backend.Device,
                   subst: dict[int, Any]) -> list[Step]:  # fmt: skip
    xp = device.xp
    out: list[Step] = []
    for step in steps:
        step = rewrite(step, subst)
        if not _foldable(step):
            out.append(step)
            continue
        try:
            values = _evaluate(step, graph, xp)
        except Exception:  # noqa: BLE001 - left to fail at run time, with the op's own error
            values = None
        if values is None or not all(_small(v) for v in values):
            out.append(step)
            continue
        for slot, value in zip(step.outs, values):
            subst[slot] = Folded(value)
    return out


def _evaluate(step: Step, graph: Graph, xp: Any) -> list[Any] | None:
    if step.kind == "array":
        if step.fn in _FILLS:
            spec = graph.specs.get(step.refs[0]) if type(step.refs[0]) is int else None
            if spec is None or any(d is None for d in spec.shape):
                if not isinstance(step.refs[0], Const):
                    return None
                like = step.refs[0].array
            else:
                like = xp.empty(spec.shape, spec.dtype)
            return [xp.asarray(step.fn(xp, like))]
        return [xp.asarray(step.fn(xp, *[r.array for r in step.refs]))]
    prim = step.fn
    arrays = [r.array for r in step.refs]
    if prim.list_input:
        result = prim.forward(xp, arrays, *step.rest, **step.kwargs)
    else:
        result = prim.forward(xp, *arrays, *step.rest, **step.kwargs)
    if prim.saves:
        result = result[0]
    results = list(result) if prim.multi_out else [result]
    return [xp.asarray(r) for r in results]


# --- common subexpressions ---------------------------------------------------------------------


class _Unhashable(Exception):
    pass


def _key(value: Any) -> Any:
    """A hashable key that tells apart values Python calls equal (True and 1, 0.0 and -0.0)."""
    if value is None or isinstance(value, bool | int | str):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", repr(value) if not math.isnan(value) else "nan")
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(_key(v) for v in value))
    raise _Unhashable


def _ref_key(ref: Any) -> Any:
    if type(ref) is int:
        return ("slot", ref)
    if isinstance(ref, Variable):
        return ("var", id(ref))
    array = ref.array
    if hasattr(array, "nbytes") and array.nbytes <= 64 and hasattr(array, "tobytes"):
        return ("const", str(array.dtype), tuple(array.shape), array.tobytes())
    return ("const-object", id(ref))


def eliminate_common(steps: list[Step], subst: dict[int, Any]) -> list[Step]:
    seen: dict[Any, list[int]] = {}
    out: list[Step] = []
    for step in steps:
        step = rewrite(step, subst)
        if step.stateful or step.kind not in ("op", "array"):
            seen.clear()  # a variable may have changed
            out.append(step)
            continue
        try:
            key = (
                step.kind,
                id(step.fn),
                tuple(_ref_key(r) for r in step.refs),
                _key(step.rest),
                _key(sorted(step.kwargs.items())),
            )
        except _Unhashable:
            out.append(step)
            continue
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = step.outs
            out.append(step)
            continue
        for slot, same in zip(step.outs, earlier):
            subst[slot] = same
    return out


# --- transpose-free matmul ---------------------------------------------------------------------


def _swaps_last_two(perm: Any, ndim: int) -> bool:
    if not isinstance(perm, tuple | list) or len(perm) != ndim or ndim < 2:
        return False
    want = list(range(ndim))
    want[-2], want[-1] = want[-1], want[-2]
    return [int(p) for p in perm] == want


def transpose_free_matmul(steps: list[Step], graph: Graph,
                          subst: dict[int, Any]) -> list[Step]:  # fmt: skip
    transposed: dict[int, Any] = {}  # slot of transpose(x) -> x's reference
    out: list[Step] = []
    for step in steps:
        step = rewrite(step, subst)
        if step.kind == "op" and step.fn.name == "transpose" and step.refs:
            src = step.refs[0]
            perm = step.rest[0] if step.rest else step.kwargs.get("perm")
            spec = graph.specs.get(step.outs[0])
            if spec is not None and type(src) is int and _swaps_last_two(perm, len(spec.shape)):
                transposed[step.outs[0]] = src
        elif step.kind == "op" and step.fn.name == "matmul" and not step.kwargs:
            rest = tuple(step.rest) + (False,) * (2 - len(step.rest))
            if len(rest) == 2 and any(r in transposed for r in step.refs if type(r) is int):
                refs = list(step.refs)
                flags = [bool(rest[0]), bool(rest[1])]
                for i in (0, 1):
                    if type(refs[i]) is int and refs[i] in transposed:
                        refs[i] = transposed[refs[i]]
                        flags[i] = not flags[i]
                new = Step("op", step.fn, refs, tuple(flags), {}, step.outs)
                new.wrapper, new.extra = step.wrapper, step.extra
                step = new
        out.append(step)
    return out
