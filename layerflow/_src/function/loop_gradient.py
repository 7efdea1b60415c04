"""The gradient of a `tf.while_loop` traced inside a `tf.function`.

The forward loop step keeps, when a tape recorded it, the loop variables each iteration began
with (a stack: one list of arrays per iteration, so a trip count known only at run time needs
nothing at trace time). Its gradient is one `while_grad` step, derived at trace time:

- the gradient block: the loop body traced once more, on fresh placeholder loop variables,
  under a tape that watches them and the values the loop reads from outside (`ext`); then the
  vector-Jacobian product of the body's float outputs with placeholder output gradients;
- at run time the block runs once per saved iteration, last first, each time with that
  iteration's loop variables and the gradient of the loop variables the later iterations
  gave: `dy <- d(body)/d(loop vars) . dy`, `d ext += d(body)/d(ext) . dy`.

The body is recomputed from its saved inputs (one body's intermediates alive at a time, the
stack holds only loop variables). State changes (assignments, prints) in the body are left
out of the gradient block: the forward loop made them. As TF's gradient of a loop, random
draws inside the body are not replayed (the recomputation draws anew): keep them outside.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.op import Primitive
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.function import graph as _graph
from layerflow._src.function.graph import GraphTensor, Step, _changes_state
from layerflow._src.utils import nest


def _is_float(v: Any) -> bool:
    return isinstance(v, GraphTensor | TensorLike) and v._data.dtype.kind in "fc"


def new_slot(graph: _graph.Graph) -> int:
    """A slot with no tensor (the forward loop's stack of loop variables)."""
    slot = graph.n_slots
    graph.n_slots += 1
    return slot


def record(loop_vars: Any, body: Callable[..., Any], loop: list[GraphTensor], init: list[Any],
           outs: list[GraphTensor], ext: list[Any], stack_slot: int) -> None:  # fmt: skip
    """Put the loop on the active tapes: its gradient is a `while_grad` step (module docstring).

    `loop` are the loop variables as the body saw them, `init` their values entering the loop,
    `outs` the loop's results, `ext` the float values the loop reads from outside.
    """
    tapes = _tape._state.tapes
    floats = [i for i, v in enumerate(init) if _is_float(v)]
    inputs = [init[i] for i in floats] + list(ext)
    if not tapes or not inputs:
        return
    prim = Primitive("while_loop", None, len(inputs), True, False, False, True)

    def grad_fn(dys: Any, out: Any, xs: Any) -> Any:
        return _gradient(loop_vars, body, loop, init, floats, ext, stack_slot, list(dys))

    prim.grad_fn = grad_fn
    _tape.record(tapes, prim, inputs, tuple(outs), (), {})


def _gradient(loop_vars: Any, body: Callable[..., Any], loop: list[GraphTensor], init: list[Any],
              floats: list[int], ext: list[Any], stack_slot: int,
              dys: list[Any]) -> tuple:  # fmt: skip
    tracer = _graph.current()
    graph = tracer.graph
    device = tracer.device
    holders = [graph.new_tensor(lv._data, device, "while_grad") for lv in loop]
    dy_holders = [graph.new_tensor(loop[i]._data, device, "while_dy") for i in floats]
    watched = [holders[i] for i in floats]
    with graph.sub_block() as block, _tape.stop_recording_all():
        with _tape.GradientTape(persistent=True) as tape:
            tape.watch(watched)
            for v in ext:
                tape.watch(v)
            packed = nest.pack_sequence_as(loop_vars, holders)
            args = packed if isinstance(packed, list | tuple) else [packed]
            new = body(*args)
            if not isinstance(new, list | tuple) and isinstance(loop_vars, list | tuple):
                new = [new]
        new_flat = nest.flatten(new)
        targets, seeds = [], []
        for i, d in zip(floats, dy_holders):
            if _is_float(new_flat[i]):
                targets.append(new_flat[i])
                seeds.append(d)
        sources = watched + list(ext)
        if targets:
            grads = tape.gradient(targets, sources, output_gradients=seeds,
                                  unconnected_gradients="zero")  # fmt: skip
        else:
            grads = [_tape._fill_like(s, 0) for s in sources]
        grad_refs = [tracer.ref(g) for g in grads]
    block[:] = [s for s in block if not _changes_state(s)]
    dy_refs = [tracer.ref(dys[i]) for i in floats]
    ext_refs = [tracer.ref(v) for v in ext]
    d_init = [graph.new_tensor(ArraySpec(init[i]._data.shape, init[i]._data.dtype), device,
                               "while_grad") for i in floats]  # fmt: skip
    d_ext = [graph.new_tensor(ArraySpec(v._data.shape, v._data.dtype), device, "while_grad")
             for v in ext]  # fmt: skip
    step = Step("while_grad", None, [stack_slot, *dy_refs, *ext_refs], (), {},
                [t._slot for t in d_init + d_ext])  # fmt: skip
    step.blocks = [block]
    step.extra = ([h._slot for h in holders], [h._slot for h in dy_holders], grad_refs)
    graph.block.append(step)
    results = d_init + d_ext
    tapes = _tape._state.tapes
    if tapes:  # a tape around this gradient: its own gradient is not derived
        xs = [init[i] for i in floats] + list(ext) + [dys[i] for i in floats]
        prim = Primitive("while_loop_grad", None, len(xs), True, False, False, True)
        prim.grad_fn = _no_second_order
        _tape.record(tapes, prim, xs, tuple(results), (), {})
    return tuple(results)


def _no_second_order(dys: Any, out: Any, xs: Any) -> Any:
    raise errors.UnimplementedError(
        None,
        "while_loop",
        "Second-order gradients through a tf.while_loop traced inside tf.function are not "
        "supported. Take the inner gradient outside the loop, or run the function eagerly "
        "(tf.config.run_functions_eagerly(True)).",
    )


def compile_while_grad(step: Step, device: Any, compile_block: Callable[..., Any],
                       getter: Callable[..., Any]) -> Callable[[Any], None]:  # fmt: skip
    """The runner of a `while_grad` step (module docstring)."""
    xp = device.xp
    (block,) = step.blocks
    runners = compile_block(block, device)
    holders, dy_holders, grad_refs = step.extra
    n_dy = len(dy_holders)
    stack_get = getter(step.refs[0])
    dy_gets = [getter(r) for r in step.refs[1 : 1 + n_dy]]
    ext_gets = [getter(r) for r in step.refs[1 + n_dy :]]
    d_loop_gets = [getter(r) for r in grad_refs[:n_dy]]
    d_ext_gets = [getter(r) for r in grad_refs[n_dy:]]
    outs = step.outs

    def run_while_grad(env: Any) -> None:
        dy = [g(env) for g in dy_gets]
        acc: list[Any] = [None] * len(d_ext_gets)
        for values in reversed(stack_get(env)):
            for s, v in zip(holders, values):
                env[s] = v
            for s, d in zip(dy_holders, dy):
                env[s] = d
            for r in runners:
                r(env)
            dy = [g(env) for g in d_loop_gets]
            for k, g in enumerate(d_ext_gets):
                v = g(env)
                acc[k] = v if acc[k] is None else xp.add(acc[k], v)
        results = dy + [a if a is not None else xp.zeros_like(g(env))
                        for a, g in zip(acc, ext_gets)]  # fmt: skip
        for s, v in zip(outs, results):
            env[s] = v

    return run_while_grad
