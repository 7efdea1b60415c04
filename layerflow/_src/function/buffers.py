"""Buffers of a plan, allocated once and reused across calls (`out=` writes, in-place chains).

Some ops can write their result into a given array: the elementwise ufuncs (`add`, `relu`,
`exp`, ...), `matmul`, and the fused `dense` (GEMM into the buffer, then bias and relu in
place). `INTO` maps such a primitive's name to a function `into(xp, out, *arrays, *attrs)`
that computes exactly what the op's forward computes (the same NumPy/CuPy calls), into `out`.

`assign(steps, ...)` gives the result of each such step (static shape, float dtype shared by
its inputs) a buffer of a pool, the way a register allocator would:

- A buffer is handed to another slot of the same shape and dtype once every slot that may
  view it is dead (an op outside `INTO`, a reshape or a slice, may return a view of its
  input, so its result counts as a view of all of its inputs' buffers).
- An elementwise step may write into the buffer of an input that dies at that step (the
  in-place chain `matmul -> add bias -> relu` runs in one buffer); a matmul never writes into
  its own inputs.
- A buffer never leaves the plan: a slot that is returned to the caller, handed to a host step
  (which could keep it), written into a variable, or read inside control flow, gets a fresh
  array at every call instead, as eagerly. Variables and captured constants are never slots,
  so they are never written into.

The total size of the pool is at most the largest set of these results alive at once, i.e.
what the eager run holds at its peak, and it is paid once instead of at every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.backend import blas_threads
from layerflow._src.framework.variables import Variable
from layerflow._src.function import fusion
from layerflow._src.function.graph import Const, Graph, Step
from layerflow._src.ops import fused_kernels

Into = Callable[..., None]


def _binary(name: str) -> Into:
    def into(xp: Any, out: Any, a: Any, b: Any) -> None:
        getattr(xp, name)(a, b, out=out)

    return into


def _unary(name: str) -> Into:
    def into(xp: Any, out: Any, a: Any) -> None:
        getattr(xp, name)(a, out=out)

    return into


def _square(xp: Any, out: Any, a: Any) -> None:
    xp.multiply(a, a, out=out)


def _relu(xp: Any, out: Any, a: Any) -> None:
    xp.maximum(a, 0, out=out)


def _relu_grad(xp: Any, out: Any, dy: Any, y: Any) -> None:
    xp.multiply(dy, y > 0, out=out)


# The GEMMs choose BLAS threads per call as the ops do (`backend/blas_threads`: `timed` and
# `done` around the product): without it a small product runs with the thread count the last
# large one set, which on a busy machine cost a 256x256x10 product 25x its single-thread time.
def _matmul(xp: Any, out: Any, a: Any, b: Any, transpose_a: bool = False,
            transpose_b: bool = False) -> None:  # fmt: skip
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    t = blas_threads.timed(a.size, b.shape[-1], 1) if a.size > 255 else None
    xp.matmul(a, b, out=out)
    if t is not None:
        blas_threads.done(t)


def _dense(xp: Any, out: Any, x: Any, kernel: Any, bias: Any, relu: bool) -> None:
    t = blas_threads.timed(x.shape[0], kernel.shape[1], kernel.shape[0])
    xp.matmul(x, kernel, out=out)
    if t is not None:
        blas_threads.done(t)
    fused_kernels.bias_relu(xp, out, bias, relu)


def _sgd_delta(xp: Any, out: Any, g: Any, s: Any, i: int, scratch: Any) -> None:
    # `optimizer_ops.sgd_delta`'s `lr g` (the same scalar, rounded as there). Pooled, it writes
    # over the weight gradient's own buffer when that dies here (the in-place chain below)
    # instead of the optimizer's scratch: SGD on the MLP's 784x256 kernel, after its gradient's
    # GEMM, went from ~43 to ~30 us a step (one thread; one 800 KB array fewer in the caches).
    xp.multiply(g, s[i].astype(g.dtype), out=out)


# name -> (into, elementwise): elementwise ops may write over an input of the same shape. An
# op with several results (`MULTI`) writes its first into the buffer and returns the others.
INTO: dict[str, tuple[Into, bool]] = {
    "add": (_binary("add"), True),
    "subtract": (_binary("subtract"), True),
    "multiply": (_binary("multiply"), True),
    "real_div": (_binary("true_divide"), True),
    "maximum": (_binary("maximum"), True),
    "minimum": (_binary("minimum"), True),
    "negative": (_unary("negative"), True),
    "abs": (_unary("abs"), True),
    "exp": (_unary("exp"), True),
    "log": (_unary("log"), True),
    "sqrt": (_unary("sqrt"), True),
    "tanh": (_unary("tanh"), True),
    "square": (_square, True),
    "relu": (_relu, True),
    "relu_grad": (_relu_grad, True),
    "matmul": (_matmul, False),
    "dense": (_dense, False),
    "sgd_delta": (_sgd_delta, True),
    "relu_grad_bias_grad": (fusion.relu_grad_bias_into, True),
}
MULTI = frozenset(("relu_grad_bias_grad",))
# Ops whose inputs after the first are per-step scalars of another dtype (not elementwise
# operands): only the first input's dtype must be the result's.
_SCALAR_INPUTS = frozenset(("sgd_delta",))


# Ops outside INTO whose result never shares memory with an input (every other op may return
# a view, e.g. reshape): reading a pooled buffer through them does not extend its life.
FRESH = frozenset(
    (
        "reduce_sum",
        "reduce_mean",
        "sparse_softmax_cross_entropy_with_logits_grad",
        fusion.XENT_GRAD_BIAS.name,
        fusion.XENT_LOSS_GRAD_BIAS.name,
        fusion.ACCURACY_TOTAL_COUNT.name,
        *INTO,
    )
)
# Assign steps that only read their value (the others may keep it: a variable's new array).
_READ_ONLY_ASSIGNS = frozenset(("assign_add", "assign_sub", "sgd_update"))


def _dtype(ref: Any, graph: Graph) -> Any:
    if type(ref) is int:
        spec = graph.specs.get(ref)
        return None if spec is None else np.dtype(spec.dtype)
    if isinstance(ref, Variable):
        return np.dtype(ref._data.dtype)
    array = ref.array if isinstance(ref, Const) else None
    return np.dtype(array.dtype) if hasattr(array, "dtype") else None


def eligible(step: Step, graph: Graph) -> bool:
    """Whether the step's result can be written into a buffer of its spec."""
    if step.kind != "op" or step.fn.name not in INTO or step.kwargs:
        return False
    multi = step.fn.name in MULTI
    if len(step.outs) != 1 + multi or step.fn.multi_out != multi:
        return False
    if step.fn.saves or step.fn.list_input:
        return False
    spec = graph.specs.get(step.outs[0])
    if spec is None or any(type(d) is not int for d in spec.shape):
        return False
    dtype = np.dtype(spec.dtype)
    if dtype.kind != "f":
        return False
    refs = step.refs[:1] if step.fn.name in _SCALAR_INPUTS else step.refs
    return all(_dtype(r, graph) == dtype for r in refs)


class Assignment:
    """Which slot writes into which buffer (`slot_buffer`), and the buffers' specs."""

    def __init__(self) -> None:
        self.slot_buffer: dict[int, int] = {}
        self.specs: list[tuple[tuple[int, ...], Any]] = []


def assign(steps: list[Step], graph: Graph, outputs: list[Any],
           reads: Callable[[Step], set[int]]) -> Assignment:  # fmt: skip
    """The buffer of each pooled result (see the module docstring)."""
    result = Assignment()
    candidates = {s.outs[0] for s in steps if eligible(s, graph)}
    if not candidates:
        return result
    views: dict[int, frozenset[int]] = {}  # slot -> candidates whose buffer it may view
    escaped: set[int] = set()
    last: dict[int, int] = {}
    step_reads = [reads(s) for s in steps]
    for i, (step, rs) in enumerate(zip(steps, step_reads)):
        for r in rs:
            last[r] = i
        if step.outs and step.outs[0] in candidates and step.kind == "op":
            views[step.outs[0]] = frozenset((step.outs[0],))
            continue
        if step.kind == "op" and step.fn.name in FRESH:
            for o in step.outs:
                views[o] = frozenset()
            continue
        seen = frozenset().union(*[views.get(r, frozenset()) for r in rs])
        if step.kind in ("host", "cond", "while", "while_grad") or (
            step.kind == "assign" and step.fn not in _READ_ONLY_ASSIGNS
        ):
            escaped |= seen
        for o in step.outs:
            views[o] = seen
    for r in outputs:
        if type(r) is int:
            escaped |= views.get(r, frozenset())
    pooled = candidates - escaped
    # The step after which each pooled buffer is free: the last read of any slot viewing it.
    ends: dict[int, int] = {}
    defined = {s.outs[0]: i for i, s in enumerate(steps) if s.outs and s.outs[0] in pooled}
    for slot, seen in views.items():
        end = last.get(slot, defined.get(slot, -1))
        for p in seen & pooled:
            ends[p] = max(ends.get(p, defined[p]), end)
    free: dict[tuple[Any, ...], list[int]] = {}
    ending: dict[int, list[int]] = {}
    for p in pooled:
        ending.setdefault(ends.get(p, defined[p]), []).append(p)

    def release(slot: int) -> None:
        b = result.slot_buffer[slot]
        free.setdefault(result.specs[b], []).append(b)

    for i, step in enumerate(steps):
        out = step.outs[0] if step.outs else None
        done = [p for p in ending.get(i, []) if p != out]
        if out in pooled:
            spec = graph.specs[out]
            key = (tuple(spec.shape), np.dtype(spec.dtype))
            if INTO[step.fn.name][1]:  # elementwise: an exact input that dies here may be reused
                for p in done:
                    if (
                        any(type(r) is int and r == p for r in step.refs)
                        and _exact(step, p, views)
                        and result.specs[result.slot_buffer[p]] == key
                    ):
                        release(p)
                        done = [q for q in done if q != p]
                        break
            stack = free.get(key)
            if stack:
                result.slot_buffer[out] = stack.pop()
            else:
                result.slot_buffer[out] = len(result.specs)
                result.specs.append(key)
            if ends.get(out, i) <= i:
                release(out)
        for p in done:
            release(p)
    return result


def _exact(step: Step, p: int, views: dict[int, frozenset[int]]) -> bool:
    """No input of the step but `p` itself views `p`'s buffer (so writing over it elementwise,
    element by element in place, reads each element before it is overwritten)."""
    return all(r == p or p not in views.get(r, frozenset()) for r in step.refs if type(r) is int)
