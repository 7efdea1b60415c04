"""Fused steps of a plan: pairs of steps around a dense layer's GEMMs done in one pass.

A training step spends its time outside the GEMMs in passes over arrays the GEMM before them
just evicted from the caches, one NumPy call (and one plan step) each. Where the fused CPU
kernels apply (`ops/fused_kernels.py`: numba enabled, the plan on the CPU), this pass rewrites
the top-level steps:

- `relu_grad(dy, y)` and the `reduce_sum(., axis 0)` of its result (a dense layer's masked
  gradient and its bias gradient) become one step with both results;
- `sparse_softmax_cross_entropy_with_logits_grad` and the `reduce_sum(., axis 0)` of its
  result (the last layer's bias gradient) likewise, and with the loss forward too where the
  program keeps it (a compiled `fit`'s loss metric): one softmax for all three;
- `sgd_delta(g, scalars)` followed by `assign_sub(var, .)` (plain SGD) becomes one in-place
  update `var -= lr g` (an "assign" step, through `Variable._update`), without the `lr g` array;
- `sparse_categorical_accuracy_values` only summed and counted by a Mean metric becomes a
  count of argmax hits.

Each fused step gives the bits of the steps it replaces (the kernels' module says how), and
runs the replaced steps' own NumPy code where a kernel does not apply at run time (CuPy
arrays, `jit.use(False)`, other layouts or dtypes, and the batch sizes where `reduce_sum` sums
by a GEMV: its summation order, not the kernels'). A fused step stands where the first of its
steps stood (a `reduce_sum` reads only a slot, so it may move up; so may a gradient whose
operands are slots, constants or a slot defined before; SGD's pair must be adjacent), the
accuracy count where its metric stood. `Plan.replay` runs the traced steps, never these.

Measured on the seed MLP's compiled train step, see `bench/README.md` ("MLP: fused kernels").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import Primitive
from layerflow._src.backend import jit
from layerflow._src.function.graph import Const, Graph, Step
from layerflow._src.ops import fused_kernels, metric_ops
from layerflow._src.ops.core_ops import _reduce_sum
from layerflow._src.ops.math_ops import _relu_grad
from layerflow._src.ops.nn_ops import _check_labels, _class_major, _sparse_xent, _sparse_xent_grad
from layerflow._src.ops.optimizer_ops import _sgd_delta

# `reduce_sum` over the leading axis of at least this many rows sums by a GEMV with a ones
# vector (`ops/core_ops.py`); below it NumPy adds row after row, as the kernels do. The fused
# steps take `reduce_sum`'s own path from here on (a test pins both sides of the threshold).
_GEMV_ROWS = 1024
_SUM_PRIM = _reduce_sum.prim
_XENT_PRIM = _sparse_xent_grad.prim
_LOSS_PRIM = _sparse_xent.prim
_ACCURACY_PRIM = metric_ops.sparse_categorical_accuracy.prim
_SUM_COUNT_PRIM = metric_ops._sum_and_count.prim
_RELU_GRAD_PRIM = _relu_grad.prim
_SGD_DELTA_PRIM = _sgd_delta.prim


def _bias_sum(xp: Any, g: Any, total: Any) -> Any:
    """The kernel's row-by-row sum where `reduce_sum` would give the same bits, else its own."""
    if total is not None and g.shape[0] < _GEMV_ROWS:
        return total
    return _SUM_PRIM.forward(xp, g, (0,), False)


def relu_grad_bias_into(xp: Any, out: Any, dy: Any, y: Any) -> tuple[Any]:
    """`out = dy * (y > 0)`; returns `(out.sum(axis=0),)` (the plan's buffer protocol:
    `buffers.INTO`, the first result written into `out`, the others returned)."""
    total = fused_kernels.relu_grad_sum(xp, out, dy, y)
    return (_bias_sum(xp, out, total),)


def _relu_grad_bias(xp: Any, dy: Any, y: Any) -> tuple[Any, Any]:
    out = xp.empty_like(dy) if dy.dtype == y.dtype else xp.empty(dy.shape, np.result_type(dy, y))
    (total,) = relu_grad_bias_into(xp, out, dy, y)
    return out, total


def _xent_grad_bias(xp: Any, dy: Any, logits: Any, labels: Any, backprop: Any) -> tuple[Any, Any]:
    if backprop is None and _class_major(logits, labels):
        fused = fused_kernels.xent(logits, labels, dy, loss=False, grad=True)
        if fused is not None:
            _, g, total, bad = fused
            if bad >= 0:
                _check_labels(labels, logits.shape[-1])  # raises the op's own error
            return g, _bias_sum(xp, g, total)
    g = _XENT_PRIM.forward(xp, dy, logits, labels, backprop)
    return g, _SUM_PRIM.forward(xp, g, (0,), False)


def _xent_loss_grad_bias(xp: Any, logits: Any, labels: Any, dy: Any) -> tuple[Any, Any, Any]:
    """The loss forward, its gradient and the gradient's bias sum from one softmax."""
    if _class_major(logits, labels):
        fused = fused_kernels.xent(logits, labels, dy, loss=True, grad=True)
        if fused is not None:
            loss, g, total, bad = fused
            if bad >= 0:
                _check_labels(labels, logits.shape[-1])
            return loss, g, _bias_sum(xp, g, total)
    loss = _LOSS_PRIM.forward(xp, logits, labels)[0]
    return (loss, *_xent_grad_bias(xp, dy, logits, labels, None))


RELU_GRAD_BIAS = Primitive("relu_grad_bias_grad", _relu_grad_bias, 2, True, True, False, False)
XENT_GRAD_BIAS = Primitive("sparse_softmax_cross_entropy_with_logits_grad_bias_grad",
                           _xent_grad_bias, 3, True, False, False, False)  # fmt: skip
XENT_LOSS_GRAD_BIAS = Primitive("sparse_softmax_cross_entropy_with_logits_and_grads",
                                _xent_loss_grad_bias, 3, True, False, False, False)  # fmt: skip


def _accuracy_total_count(xp: Any, labels: Any, logits: Any, dtype: Any) -> tuple[Any, Any]:
    """`metric_sum_and_count(sparse_categorical_accuracy_values(labels, logits))`: the number
    of hits counted in one pass (their float64 sum is exact: the same bits)."""
    hits = fused_kernels.argmax_hits(logits, labels) if xp is np else None
    if hits is None:
        values = _ACCURACY_PRIM.forward(xp, labels, logits)
        return _SUM_COUNT_PRIM.forward(xp, [values], dtype)
    return np.asarray(float(hits), dtype=dtype), np.asarray(float(labels.size), dtype=dtype)


ACCURACY_TOTAL_COUNT = Primitive("sparse_categorical_accuracy_total_and_count",
                                 _accuracy_total_count, 2, True, False, False, False)  # fmt: skip


def sgd_update(var: Any, g: Any, scalars: Any, index: int) -> None:
    """Plain SGD's `var -= lr g` in place (`optimizer_ops.sgd_delta`'s `lr`, rounded alike)."""
    var._update(fused_kernels.sgd_update, g, scalars[index].astype(g.dtype))


# --- the rewrite -------------------------------------------------------------------------------


def applies(device: backend.Device) -> bool:
    """Whether plans on `device` get fused steps (the CPU, with the kernels enabled)."""
    return device.xp is np and jit.enabled()


def _sums_leading_axis(step: Step, slot: int, graph: Graph) -> bool:
    spec = graph.specs.get(slot)
    return (
        step.kind == "op"
        and step.fn is _SUM_PRIM
        and step.refs == [slot]
        and not step.kwargs
        and tuple(step.rest) == ((0,), False)
        and spec is not None
        and len(spec.shape) == 2
    )


def fuse(steps: list[Step], graph: Graph, outputs: list[Any], reads: Any) -> list[Step]:
    """The steps with the fusable pairs replaced (see the module docstring); `reads(step)`
    gives the slots a step reads (sub-blocks included)."""
    readers: dict[int, list[int]] = {}
    for i, s in enumerate(steps):
        for r in reads(s):
            readers.setdefault(r, []).append(i)
    defined = {o: i for i, s in enumerate(steps) for o in s.outs}
    returned = {r for r in outputs if type(r) is int}
    drop: set[int] = set()
    later: dict[int, Step] = {}  # a fused step that stands at the place of its second step
    out: list[Step] = []
    for i, step in enumerate(steps):
        if i in later:
            out.append(later.pop(i))
            continue
        if i in drop:
            continue
        fused = None
        if step.fn is _ACCURACY_PRIM and step.kind == "op":
            moved = _accuracy(step, i, steps, readers, returned)
            if moved is not None:
                later[moved[1]] = moved[0]
                continue
        if step.kind == "op" and not step.kwargs and len(step.outs) == 1:
            if step.fn is _RELU_GRAD_PRIM and not step.rest:
                fused = _with_bias_sum(step, RELU_GRAD_BIAS, i, steps, graph, readers)
            elif step.fn is _XENT_PRIM and step.rest == (None,):
                fused = _with_bias_sum(step, XENT_GRAD_BIAS, i, steps, graph, readers)
            elif step.fn is _LOSS_PRIM and not step.rest:
                fused = _xent_all(step, i, steps, graph, readers, defined, drop)
            elif step.fn is _SGD_DELTA_PRIM and i + 1 < len(steps):
                fused = _sgd(step, i, steps, readers, returned)
        if fused is None:
            out.append(step)
            continue
        new, gone = fused
        drop.update(gone)
        out.append(new)
    return out


def _with_bias_sum(step: Step, prim: Primitive, i: int, steps: list[Step], graph: Graph,
                   readers: dict[int, list[int]]) -> tuple[Step, tuple[int]] | None:  # fmt: skip
    (slot,) = step.outs
    j = _bias_sum_of(slot, i, steps, graph, readers)
    if j is None:
        return None
    new = Step("op", prim, list(step.refs), step.rest, {}, [slot, steps[j].outs[0]])
    new.extra = step.extra  # the user's line, for errors
    return new, (j,)


def _bias_sum_of(slot: int, i: int, steps: list[Step], graph: Graph,
                 readers: dict[int, list[int]]) -> int | None:  # fmt: skip
    for j in readers.get(slot, []):
        if j > i and _sums_leading_axis(steps[j], slot, graph):
            return j
    return None


def _xent_all(step: Step, i: int, steps: list[Step], graph: Graph,
              readers: dict[int, list[int]], defined: dict[int, int],
              drop: set[int]) -> tuple[Step, tuple[int, ...]] | None:  # fmt: skip
    """The loss forward (a compiled `fit` computes it for the loss metric), its gradient
    (recomputing the softmax) and the bias sum, from one softmax at the forward's place."""
    logits, labels = step.refs
    if type(logits) is not int or not isinstance(labels, int | Const):
        return None
    for j in readers.get(logits, []):
        grad = steps[j]
        if j <= i or j in drop or grad.kind != "op" or grad.fn is not _XENT_PRIM:
            continue
        if grad.rest != (None,) or grad.kwargs or grad.refs[1:] != [logits, labels]:
            continue
        dy = grad.refs[0]
        # dy is read at the forward's place: a constant (the mean's folded seed) or a slot
        # defined before it, or an input (a Variable could change in between: the loss
        # metric's updates).
        if not (isinstance(dy, Const) or type(dy) is int and defined.get(dy, -1) < i):
            return None
        k = _bias_sum_of(grad.outs[0], j, steps, graph, readers)
        if k is None:
            return None
        outs = [step.outs[0], grad.outs[0], steps[k].outs[0]]
        new = Step("op", XENT_LOSS_GRAD_BIAS, [logits, labels, dy], (), {}, outs)
        new.extra = step.extra
        return new, (j, k)
    return None


def _accuracy(step: Step, i: int, steps: list[Step], readers: dict[int, list[int]],
              returned: set[int]) -> tuple[Step, int] | None:  # fmt: skip
    """Accuracy values only summed and counted by a Mean metric: one step at the metric's
    place (its operands are slots or constants, so reading them later reads the same)."""
    (v,) = step.outs
    if step.kwargs or step.rest or not all(type(r) is int or isinstance(r, Const)
                                           for r in step.refs):  # fmt: skip
        return None
    users = readers.get(v, [])
    if len(users) != 1 or v in returned:
        return None
    (j,) = users
    count = steps[j]
    if count.kind != "op" or count.fn is not _SUM_COUNT_PRIM or count.refs != [v]:
        return None
    if count.kwargs or len(count.rest) != 1 or len(count.outs) != 2:
        return None
    new = Step("op", ACCURACY_TOTAL_COUNT, list(step.refs), count.rest, {}, list(count.outs))
    new.extra = count.extra
    return new, j


def _sgd(delta: Step, i: int, steps: list[Step], readers: dict[int, list[int]],
         returned: set[int]) -> tuple[Step, tuple[int]] | None:  # fmt: skip
    (d,) = delta.outs
    nxt = steps[i + 1]
    if len(delta.refs) != 2 or not all(type(r) is int for r in delta.refs):
        return None  # a Variable operand could change between the two steps' places
    if nxt.kind != "assign" or nxt.fn != "assign_sub" or nxt.refs[1] != d or d in returned:
        return None
    if len(readers.get(d, [])) != 1:
        return None
    var = nxt.refs[0]
    new = Step("assign", "sgd_update", [var, *delta.refs], (delta.rest[0],), {}, [],
               stateful=True)  # fmt: skip
    return new, (i + 1,)  # the pair is adjacent: the fused step may stand at either place
