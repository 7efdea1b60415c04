"""`tf.cond`, `tf.switch_case`, `tf.case` and `tf.while_loop` on symbolic values inside a trace.

Each branch (each of `cond` and `body`) is traced once into a block of its own and the call
records ONE control-flow step, which runs the chosen block (or loops) at every call. The ops in
`ops/control_flow_ops.py` hand their call here while a `tf.function` trace runs (`install`).

Gradients: a traced `cond` is one node on the active tapes whose gradient is again a `cond`,
each branch re-running its function under a tape (the forward recomputed, the gradient program
derived at trace time). A traced `while_loop`'s gradient is a reverse loop over the iterations
it ran (`loop_gradient.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.op import Primitive
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import convert
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import Variable
from layerflow._src.function import graph as _graph
from layerflow._src.function import loop_gradient as _loop_gradient
from layerflow._src.function.graph import GraphTensor, Step
from layerflow._src.ops import control_flow_ops as _cf
from layerflow._src.utils import nest


def _external(graph: _graph.Graph, blocks: list[list[Step]]) -> list[Any]:
    """The float values defined outside `blocks` that their steps read (a cond's inputs)."""
    inside: set[int] = set()
    seen: dict[int, Any] = {}

    def walk(steps: list[Step]) -> None:
        for s in steps:
            for r in s.refs:
                if type(r) is int and r not in inside and r in graph.tensors:
                    seen.setdefault(r, graph.tensors[r])
                elif isinstance(r, Variable):
                    seen.setdefault(-id(r) - 1, r)
            for b in s.blocks:
                walk(b)
            inside.update(s.outs)

    for b in blocks:
        inside.clear()
        walk(b)
    return [v for v in seen.values() if v._data.dtype.kind in "fc"]


def _leaf_ref(tracer: _graph.Tracer, value: Any, what: str) -> tuple[Any, ArraySpec]:
    if value is None:
        raise ValueError(f"{what} returned None; every branch must return tensors.")
    ref = tracer.ref(value)
    if isinstance(value, GraphTensor | TensorLike):
        spec = ArraySpec(value._data.shape, value._data.dtype)
    else:
        spec = ArraySpec(ref.array.shape, ref.array.dtype)
    return ref, spec


def _trace_branches(fns: list[Callable[[], Any]], names: list[str]) -> tuple[Any, list[Any]]:
    tracer = _graph.current()
    graph = tracer.graph
    results = []
    for fn in fns:
        with graph.sub_block() as block, _tape.stop_recording_all():
            out = fn()
        results.append((block, out))
    first = results[0][1]
    for (_, out), name in zip(results[1:], names[1:]):
        try:
            nest.assert_same_structure(first, out, check_types=False, expand_composites=True)
        except (ValueError, TypeError):
            raise ValueError(
                f"{names[0]} and {name} arguments to tf.cond must have the same number, type, and "
                f"overall structure of return values.\n\n{names[0]} output: {first!r}\n{name} "
                f"output: {out!r}"
            ) from None
    refs_per, specs_per = [], []
    for (_, out), name in zip(results, names):
        pairs = [_leaf_ref(tracer, v, name) for v in nest.flatten(out, expand_composites=True)]
        refs_per.append([p[0] for p in pairs])
        specs_per.append([p[1] for p in pairs])
    out_specs = []
    for i, spec in enumerate(specs_per[0]):
        shape = spec.shape
        for other, name in zip(specs_per[1:], names[1:]):
            o = other[i]
            if o.dtype != spec.dtype:
                raise TypeError(
                    f"{names[0]} and {name} arguments to tf.cond must return the same dtypes: "
                    f"output {i} is {spec.dtype.name} in {names[0]} and {o.dtype.name} in {name}."
                )
            if len(o.shape) != len(shape):
                shape = None
            elif shape is not None:
                shape = tuple(a if a == b else None for a, b in zip(shape, o.shape))
        if shape is None:
            raise ValueError(
                f"The outputs of the branches of tf.cond have different ranks for output {i}; "
                "layerflow needs equal ranks."
            )
        out_specs.append(ArraySpec(shape, spec.dtype))
    return first, [(b, refs) for (b, _), refs in zip(results, refs_per)], out_specs


def _record_step(pred: Any, mode: str, branches: list[Any], out_specs: list[ArraySpec],
                 structure: Any) -> Any:  # fmt: skip
    tracer = _graph.current()
    graph = tracer.graph
    outs = [graph.new_tensor(s, tracer.device, "cond") for s in out_specs]
    step = Step("cond", None, [tracer.ref(pred)], (mode,), {}, [t._slot for t in outs])
    step.blocks = [b for b, _ in branches]
    step.extra = [refs for _, refs in branches]
    graph.block.append(step)
    return outs, nest.pack_sequence_as(structure, outs, expand_composites=True)


def _record_gradient(outs: list[GraphTensor], ext: list[Any], regrad: Callable[..., Any]) -> None:
    tapes = _tape._state.tapes
    if not tapes or not ext or not outs:
        return
    prim = Primitive("cond", None, len(ext), True, False, False, True)
    prim.grad_fn = lambda dys, out, inputs: regrad(list(dys), inputs)
    _tape.record(tapes, prim, list(ext), tuple(outs), (), {})


def _branch_gradient(fn: Callable[[], Any], ext: list[Any], dys: list[Any]) -> Callable[[], Any]:
    def run() -> Any:
        with _tape.GradientTape(persistent=True) as t:
            for x in ext:
                t.watch(x)
            out = fn()
        flat = nest.flatten(out, expand_composites=True)
        pairs = [(o, d) for o, d in zip(flat, dys) if _is_float(o)]
        return t.gradient([o for o, _ in pairs], ext, output_gradients=[d for _, d in pairs],
                          unconnected_gradients="zero")  # fmt: skip

    return run


def _is_float(v: Any) -> bool:
    return isinstance(v, GraphTensor | TensorLike) and v._data.dtype.kind in "fc"


def graph_cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    if pred.dtype.name != "bool" or pred._data.shape not in ((), (1,)):
        raise ValueError(
            f"tf.cond: pred must be a scalar bool tensor, got {pred!r}. Reduce it first, e.g. "
            "tf.reduce_all(x > 0)."
        )
    structure, branches, out_specs = _trace_branches([true_fn, false_fn], ["true_fn", "false_fn"])
    outs, result = _record_step(pred, "bool", branches, out_specs, structure)
    ext = _external(_graph.current().graph, [b for b, _ in branches])

    def regrad(dys: list[Any], inputs: list[Any]) -> Any:
        return graph_cond(pred, _branch_gradient(true_fn, inputs, dys),
                          _branch_gradient(false_fn, inputs, dys))  # fmt: skip

    _record_gradient(outs, ext, regrad)
    return result


def graph_switch_case(branch_index: Any, fns: list[Callable[[], Any]]) -> Any:
    if branch_index.dtype.name not in ("int32", "int64") or branch_index._data.shape != ():
        raise TypeError(
            f"branch_index must be a scalar int32 or int64 tensor, got {branch_index!r}."
        )
    names = [f"branch {i}" for i in range(len(fns))]
    structure, branches, out_specs = _trace_branches(list(fns), names)
    outs, result = _record_step(branch_index, "index", branches, out_specs, structure)
    ext = _external(_graph.current().graph, [b for b, _ in branches])

    def regrad(dys: list[Any], inputs: list[Any]) -> Any:
        return graph_switch_case(branch_index, [_branch_gradient(f, inputs, dys) for f in fns])

    _record_gradient(outs, ext, regrad)
    return result


def graph_while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
                     shape_invariants: Any, maximum_iterations: Any) -> Any:  # fmt: skip
    tracer = _graph.current()
    graph = tracer.graph
    flat = [v if isinstance(v, GraphTensor | TensorLike) else _graph_const(v)
            for v in nest.flatten(loop_vars)]  # fmt: skip
    invariants = None if shape_invariants is None else nest.flatten(shape_invariants)
    loop = []
    for i, v in enumerate(flat):
        shape = v._data.shape
        if invariants is not None:
            shape = tuple(TensorShape(invariants[i]).as_list())
        loop.append(graph.new_tensor(ArraySpec(shape, v._data.dtype), tracer.device, "while"))
    packed = nest.pack_sequence_as(loop_vars, loop)
    args = packed if isinstance(packed, list | tuple) else [packed]
    with graph.sub_block() as cblock, _tape.stop_recording_all():
        pred = cond(*args)
        pred_ref = tracer.ref(pred if not isinstance(pred, bool) else _graph_const(pred))
    with graph.sub_block() as bblock, _tape.stop_recording_all():
        new = body(*args)
        if not isinstance(new, list | tuple) and isinstance(loop_vars, list | tuple):
            new = [new] if len(loop) == 1 else new
        try:
            nest.assert_same_structure(list(loop_vars), list(new), check_types=False)
        except (ValueError, TypeError) as err:
            raise ValueError(
                f"while_loop body must return the structure of its loop variables: expected "
                f"{loop_vars!r}, got {new!r} ({err})"
            ) from None
        new_flat = nest.flatten(new)
        body_refs = []
        for lv, init, v in zip(loop, flat, new_flat):
            ref, spec = _leaf_ref(tracer, v, "while_loop body")
            if spec.dtype != lv._data.dtype:
                raise TypeError(
                    f"Loop variable {lv.name} enters the loop as {lv.dtype.name} but the body "
                    f"returns {spec.dtype.name}; cast it to keep one dtype."
                )
            want = lv._data.shape
            if len(spec.shape) != len(want) or any(
                w is not None and w != g for w, g in zip(want, spec.shape)
            ):
                raise ValueError(
                    f"Input tensor '{getattr(init, 'name', lv.name)}' enters the loop with shape "
                    f"{TensorShape(init._data.shape)}, but has shape {TensorShape(spec.shape)} "
                    "after one iteration. To allow the shape to vary across iterations, use the "
                    "`shape_invariants` argument of tf.while_loop to specify a less-specific shape."
                )
            body_refs.append(ref)
    limit = None
    if maximum_iterations is not None:
        if not isinstance(maximum_iterations, GraphTensor):
            maximum_iterations = int(maximum_iterations)
        limit = tracer.ref(maximum_iterations)
    outs = [graph.new_tensor(lv._data, tracer.device, "while") for lv in loop]
    # With a tape recording, the loop keeps each iteration's loop variables for its gradient.
    ext = _external(graph, [cblock, bblock])
    float_in = ext or any(_is_float(v) for v in flat)
    stack = _loop_gradient.new_slot(graph) if _tape._state.tapes and float_in else None
    out_slots = [t._slot for t in outs] + ([] if stack is None else [stack])
    step = Step("while", None, [tracer.ref(v) for v in flat], (), {}, out_slots)
    step.blocks = [cblock, bblock]
    step.extra = ([t._slot for t in loop], pred_ref, body_refs, limit, stack)
    graph.block.append(step)
    if stack is not None:
        _loop_gradient.record(loop_vars, body, loop, flat, outs, ext, stack)
    return nest.pack_sequence_as(loop_vars, outs)


def _graph_const(value: Any) -> Any:
    with _graph.suspended():
        return convert.convert_to_tensor(value)


def install() -> None:
    """Hand the control-flow ops' symbolic calls to this module."""
    _cf.graph_impl.update(
        cond=graph_cond, switch_case=graph_switch_case, while_loop=graph_while_loop
    )
