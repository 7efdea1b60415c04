"""The compiled plan of a trace: its steps run on arrays, with no Tensor wrapping and no tape.

`Plan(graph, outputs)` keeps the steps that the outputs or a stateful step (an assignment, a
print, a host call) need (dead code removal), turns each into a closure over a list of slots,
and frees each slot after its last use (liveness), so the program holds no more arrays than
the eager run would. Dtype and shape checks ran once, at trace time. Before that the steps
are rewritten (`optimize.py`: constants folded, common subexpressions shared, matmuls read
transposed operands in place) and the results of `out=`-capable ops get buffers reused across
calls (`buffers.py`: in-place elementwise chains, sized by liveness, never handed out).

Measured on the seed MLP's train step (784-256-10, batch 256, one BLAS thread, CPU time per
step, medians of one run): the five GEMMs alone 1.84 ms; the plan as traced 2.42 ms; with the
rewrites 2.33 ms (folding turns the gradient's seed into a constant, which leaves the unused
loss forward dead); buffers add nothing measurable there (glibc hands the freed 256 KiB
arrays straight back). The rest is outside the plan: the optimizer's host step (~0.2 ms) and
the small ops. numexpr was tried for elementwise chains: 4x slower than NumPy's in-place ufunc
chain here (1 thread), so it is not used; the in-place chain itself is ~1.35x faster than
allocating one (256x256 to 1024x1024). Two costs outside the arithmetic showed up in `fit`
(CPU s/epoch, one process, loaded machine): the ~1 MiB arrays a step allocates afresh (the
batch, a weight's gradient) paid their page faults again at every call under glibc's default
malloc thresholds (`allocator.py`: 0.52 -> 0.41), and GEMMs written into buffers ran with the
BLAS thread count the previous large product had set (`buffers.py` now sets it per call).

`Plan.replay` runs the same steps through the op wrappers on Tensors instead: a call of the
function under an active `GradientTape` takes that path, so the tape records every op and the
gradient flows through the function as through eager code.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff import op as _op
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.variables import Variable
from layerflow._src.function import allocator as _allocator
from layerflow._src.function import buffers as _buffers
from layerflow._src.function import fusion as _fusion
from layerflow._src.function import loop_gradient as _loop_gradient
from layerflow._src.function import optimize as _optimize
from layerflow._src.function.graph import Const, Graph, Step, suspended
from layerflow._src.utils import nest

_flags = backend.flags
Runner = Callable[[list[Any]], None]


def _reads(step: Step) -> set[int]:
    """Slots a step reads, its sub-blocks' reads included."""
    out = {r for r in step.refs if type(r) is int}
    for block in step.blocks:
        for s in block:
            out |= _reads(s)
    if step.kind == "cond":
        for refs in step.extra:
            out |= {r for r in refs if type(r) is int}
    elif step.kind == "while":
        _, pred, body_out, limit, _ = step.extra
        out |= {r for r in [pred, *body_out, limit] if type(r) is int}
    elif step.kind == "while_grad":
        out |= {r for r in step.extra[2] if type(r) is int}
    return out


def _prune(steps: list[Step], needed: set[int]) -> list[Step]:
    """The steps that define a needed slot or change state, in order."""
    kept: list[Step] = []
    for step in reversed(steps):
        if (
            step.stateful
            or step.kind in ("cond", "while", "while_grad")
            and _has_state(step)
            or any(o in needed for o in step.outs)
        ):
            kept.append(step)
            needed |= _reads(step)
    kept.reverse()
    return kept


def _has_state(step: Step) -> bool:
    return any(s.stateful or _has_state(s) for block in step.blocks for s in block)


def _getter(ref: Any, alias_safe: bool = True) -> Callable[[list[Any]], Any]:
    if type(ref) is int:
        return lambda env: env[ref]
    if isinstance(ref, Variable):
        if alias_safe:
            return lambda env: ref._data
        return lambda env: ref._data.copy()
    array = ref.array
    if not alias_safe and type(ref) is _optimize.Folded:
        return lambda env: array.copy()
    return lambda env: array


def _fetcher(refs: Any, alias_safe: bool = True) -> Callable[[list[Any]], Any]:
    """`env -> [value of each ref]`, as a sequence; when every ref is a slot, one C call
    (`itemgetter`) instead of a Python call per ref (most steps of a training step)."""
    if refs and all(type(r) is int for r in refs):
        if len(refs) == 1:
            (slot,) = refs
            return lambda env: (env[slot],)
        return operator.itemgetter(*refs)
    gets = [_getter(r, alias_safe) for r in refs]
    return lambda env: [g(env) for g in gets]


def _compile_block(steps: list[Step], device: backend.Device) -> list[Runner]:
    return [_compile(s, device) for s in steps]


def _compile(step: Step, device: backend.Device) -> Runner:
    xp = device.xp
    ndarray = device.ndarray
    kind = step.kind
    if kind == "op":
        prim = step.fn
        forward = prim.forward
        fetch = _fetcher(step.refs, not prim.may_alias)
        rest, kwargs, outs = step.rest, step.kwargs, step.outs
        saves, multi, list_input = prim.saves, prim.multi_out, prim.list_input
        slot = outs[0]
        where = step.extra

        def run_op(env: list[Any]) -> None:
            arrays = fetch(env)
            try:
                if list_input:
                    out = forward(xp, list(arrays), *rest, **kwargs)
                else:
                    out = forward(xp, *arrays, *rest, **kwargs)
            except (ValueError, IndexError, MemoryError) as err:
                raise _in_user_code(_op._shape_error(prim, err, arrays), where) from None
            except Exception as err:
                _in_user_code(err, where)
                raise
            if saves:
                out = out[0]
            if multi:
                for s, o in zip(outs, out):
                    env[s] = o if type(o) is ndarray else xp.asarray(o)
            else:
                env[slot] = out if type(out) is ndarray else xp.asarray(out)

        return run_op
    if kind == "array":
        fn = step.fn
        gets = [_getter(r) for r in step.refs]
        slot = step.outs[0]

        def run_array(env: list[Any]) -> None:
            env[slot] = fn(xp, *[g(env) for g in gets])

        return run_array
    if kind == "host":
        return _compile_host(step, device)
    if kind == "assign":
        return _compile_assign(step)
    if kind == "cond":
        return _compile_cond(step, device)
    if kind == "while":
        return _compile_while(step, device)
    if kind == "while_grad":
        return _loop_gradient.compile_while_grad(step, device, _compile_block, _getter)
    raise ValueError(f"unknown step kind {kind!r}")


def _compile_into(step: Step, device: backend.Device, buffer: int, plain: Runner) -> Runner:
    """The step writing its result into the plan's buffer `env[buffer]` (`buffers.py`)."""
    xp = device.xp
    into = _buffers.INTO[step.fn.name][0]
    fetch = _fetcher(step.refs)
    rest = step.rest
    slot, *others = step.outs

    def run_into(env: list[Any]) -> None:
        out = env[buffer]
        try:
            more = into(xp, out, *fetch(env), *rest)
        except Exception as err:  # noqa: BLE001 - the op's own path raises the op's own error
            if isinstance(err, Warning):  # numpy's errors as warnings: the buffer is written
                raise
            plain(env)
            return
        env[slot] = out
        if others:  # an op with several results: the others come back (`buffers.MULTI`)
            for s, v in zip(others, more):
                env[s] = v

    return run_into


def _in_user_code(err: BaseException, where: tuple[str, int, str] | None) -> BaseException:
    """Name the user's line that traced the failing op (as TF's "in user code:")."""
    if where is not None:
        file, line, fn = where
        err.add_note(f'in user code:\n    File "{file}", line {line}, in {fn}')
    return err


_IN_PLACE = {"assign_add": operator.iadd, "assign_sub": operator.isub}


def _compile_assign(step: Step) -> Runner:
    """`var.assign*(value)`: checked at trace time, so only the in-place update is left (through
    `Variable._update`, which variables holding several copies override)."""
    if step.fn == "sgd_update":  # `fusion.py`: sgd_delta and assign_sub in one pass
        var, g_ref, s_ref = step.refs
        get_g, get_s = _getter(g_ref), _getter(s_ref)
        (index,) = step.rest
        update = _fusion.sgd_update
        return lambda env: update(var, get_g(env), get_s(env), index)
    var, ref = step.refs
    get = _getter(ref)
    fn = _IN_PLACE.get(step.fn)
    if fn is None:
        return lambda env: var._write(get(env))
    return lambda env: var._update(fn, get(env))


def _compile_host(step: Step, device: backend.Device) -> Runner:
    fn = step.fn
    (structure, positions, out_spec) = step.extra
    flat = nest.flatten(structure)
    build = _builder(structure, iter(range(len(flat))))
    # Variables stay in `flat` as they are; tensors are wrapped anew at each call (a constant,
    # folded or captured, once).
    slots = []
    for pos, ref in zip(positions, step.refs):
        if type(ref) is int:
            slots.append((pos, ref))
        elif not isinstance(ref, Variable):
            flat[pos] = Tensor(ref.array, device)
    outs = step.outs

    def run_host(env: list[Any]) -> None:
        values = list(flat)
        for pos, ref in slots:
            values[pos] = Tensor(env[ref], device)
        args, kwargs = build(values)
        if _flags.tracer is None:
            result = fn(*args, **kwargs)
        else:
            with suspended():
                result = fn(*args, **kwargs)
        if outs:
            if type(result) is not list or not all(type(t) is Tensor for t in result):
                result = nest.flatten(result)
            for s, t in zip(outs, result):
                env[s] = t._data

    return run_host


def _builder(structure: Any, index: Any) -> Callable[[list[Any]], Any]:
    """`nest.pack_sequence_as(structure, values)` compiled once for a fixed structure: fresh
    containers at each call, without walking the structure again."""
    if not nest.is_nested(structure):
        i = next(index)
        return lambda values: values[i]
    if type(structure) is list or type(structure) is tuple:
        subs = [_builder(c, index) for c in structure]
        if type(structure) is list:
            return lambda values: [b(values) for b in subs]
        return lambda values: tuple([b(values) for b in subs])
    if type(structure) is dict and not structure:  # a host method's empty kwargs
        return lambda values: {}
    # dicts, namedtuples, ...: nest's own rules, on this subtree's leaves
    leaves = [next(index) for _ in nest.flatten(structure)]
    return lambda values: nest.pack_sequence_as(structure, [values[i] for i in leaves])


def _run_block(runners: list[Runner], env: list[Any]) -> None:
    for r in runners:
        r(env)


def _compile_cond(step: Step, device: backend.Device) -> Runner:
    pred_get = _getter(step.refs[0])
    blocks = [_compile_block(b, device) for b in step.blocks]
    out_gets = [[_getter(r) for r in refs] for refs in step.extra]
    outs = step.outs
    index = step.rest == ("index",)  # switch_case: pred is a branch index

    def run_cond(env: list[Any]) -> None:
        p = pred_get(env)
        if index:
            i = int(p)
            i = i if 0 <= i < len(blocks) else len(blocks) - 1
        else:
            i = 0 if bool(p) else 1
        _run_block(blocks[i], env)
        values = [g(env) for g in out_gets[i]]
        for s, v in zip(outs, values):
            env[s] = v

    return run_cond


def _compile_while(step: Step, device: backend.Device) -> Runner:
    init_gets = [_getter(r) for r in step.refs]
    cond_block, body_block = (_compile_block(b, device) for b in step.blocks)
    loop_slots, pred, body_out, limit, stack_slot = step.extra
    pred_get = _getter(pred)
    limit_get = None if limit is None else _getter(limit)
    body_gets = [_getter(r) for r in body_out]
    outs = step.outs

    def run_while(env: list[Any]) -> None:
        for s, g in zip(loop_slots, [g(env) for g in init_gets]):
            env[s] = g
        n = None if limit_get is None else int(limit_get(env))
        stack: list[list[Any]] | None = None if stack_slot is None else []
        count = 0
        while n is None or count < n:
            _run_block(cond_block, env)
            if not bool(pred_get(env)):
                break
            if stack is not None:  # the iteration's loop variables, for the gradient
                stack.append([env[s] for s in loop_slots])
            _run_block(body_block, env)
            new = [g(env) for g in body_gets]
            for s, v in zip(loop_slots, new):
                env[s] = v
            count += 1
        for s, ls in zip(outs, loop_slots):
            env[s] = env[ls]
        if stack is not None:
            env[stack_slot] = stack

    return run_while


class Plan:
    """The runnable program of one trace (see the module docstring).

    `optimize=False` runs the traced steps as they are (what the tests compare against);
    by default they are first rewritten (`optimize.py`) and results get pooled buffers
    (`buffers.py`).
    """

    def __init__(self, graph: Graph, output_refs: list[Any], device: backend.Device,
                 optimize: bool = True) -> None:  # fmt: skip
        self.graph = graph
        self.device = device
        self.output_refs = output_refs
        _allocator.tune()
        needed = {r for r in output_refs if type(r) is int}
        self.steps = _prune(graph.steps, set(needed))  # as traced: `replay` runs these
        self.n_slots = graph.n_slots
        self.input_slots = [t._slot for t in graph.inputs]
        steps, outputs = self.steps, output_refs
        if optimize:
            steps, outputs = _optimize.optimize(steps, graph, output_refs, device)
            steps = _prune(steps, {r for r in outputs if type(r) is int})
        self._optimized = optimize
        self._rewritten = (steps, outputs)
        # The program (fused steps, buffers, runners) is built at the first call or look
        # (`_build`): deciding on fused kernels imports numba (~0.2 s), which a trace need
        # not pay.
        self._lock = threading.Lock()
        self._built = False
        # Sets of buffers not in use: a call takes one (a new one when another thread or a
        # nested call holds them all) and puts it back at its end.
        self._free_buffers: list[list[Any]] = []

    def _build(self) -> None:
        with self._lock:
            if self._built:
                return
            device, graph = self.device, self.graph
            steps, outputs = self._rewritten
            assignment = _buffers.Assignment()
            if self._optimized:
                if _fusion.applies(device):
                    steps = _fusion.fuse(steps, graph, outputs, _reads)
                assignment = _buffers.assign(steps, graph, outputs, _reads)
            runners = []
            for s in steps:
                b = assignment.slot_buffer.get(s.outs[0]) if s.outs else None
                runner = _compile(s, device)
                if b is not None:
                    runner = _compile_into(s, device, self.n_slots + b, runner)
                runners.append(runner)
            # Liveness: after step i, drop the slots whose last reader it was.
            last: dict[int, int] = {}
            for i, s in enumerate(steps):
                for r in _reads(s):
                    last[r] = i
            keep = {r for r in outputs if type(r) is int}
            frees: list[list[int]] = [[] for _ in steps]
            for slot, i in last.items():
                if slot not in keep:
                    frees[i].append(slot)
            for i, s in enumerate(steps):  # written, never read: dropped at once
                for o in s.outs:
                    if o not in last and o not in keep:
                        frees[i].append(o)
            self._program_steps = steps
            self._buffer_specs = assignment.specs
            self._program = [(r, tuple(f)) for r, f in zip(runners, frees)]
            self._out_gets = [_getter(r, alias_safe=False) for r in outputs]
            self._built = True

    @property
    def program_steps(self) -> list[Step]:
        """The steps the program runs (rewritten, fused)."""
        if not self._built:
            self._build()
        return self._program_steps

    @property
    def buffer_specs(self) -> list[tuple[tuple[int, ...], Any]]:
        if not self._built:
            self._build()
        return self._buffer_specs

    @property
    def program(self) -> list[tuple[Runner, tuple[int, ...]]]:
        """(runner, slots to free after it) per step."""
        if not self._built:
            self._build()
        return self._program

    @property
    def out_gets(self) -> list[Callable[[list[Any]], Any]]:
        if not self._built:
            self._build()
        return self._out_gets

    def _new_buffers(self) -> list[Any]:
        return [backend.to_device(np.empty(shape, dtype), self.device)
                for shape, dtype in self.buffer_specs]  # fmt: skip

    def run(self, arrays: list[Any]) -> list[Any]:
        if not self._built:
            self._build()
        pool = self._free_buffers
        buffers = pool.pop() if pool else self._new_buffers()
        env: list[Any] = [None] * self.n_slots + buffers
        try:
            for s, a in zip(self.input_slots, arrays):
                env[s] = a
            for runner, frees in self._program:
                runner(env)
                if frees:
                    for s in frees:
                        env[s] = None
            return [g(env) for g in self._out_gets]
        finally:
            pool.append(buffers)

    def replay(self, tensors: list[Any]) -> list[Any]:
        """The program run through the op wrappers (recorded by the active tapes)."""
        env: dict[int, Any] = dict(zip(self.input_slots, tensors))
        _replay_block(self.steps, env, self.device)
        return [_value(r, env) for r in self.output_refs]


def _value(ref: Any, env: dict[int, Any]) -> Any:
    if type(ref) is int:
        return env[ref]
    if isinstance(ref, Variable):
        return ref
    return ref.array if not hasattr(ref.array, "shape") else _const_tensor(ref)


def _const_tensor(ref: Const) -> Tensor:
    device = backend.current_device()
    return Tensor(backend.to_device(ref.array, device), device)


def _replay_block(steps: list[Step], env: dict[int, Any], device: backend.Device) -> None:
    for step in steps:
        if step.kind == "op":
            args = [_value(r, env) for r in step.refs]
            if step.fn.list_input:
                out = step.wrapper(args, *step.rest, **step.kwargs)
            else:
                out = step.wrapper(*args, *step.rest, **step.kwargs)
            for s, o in zip(step.outs, out if step.fn.multi_out else (out,)):
                env[s] = o
        elif step.kind in ("array", "host", "assign"):
            holder = [None] * (max([0, *step.outs, *[r for r in step.refs if type(r) is int]]) + 1)
            for r in step.refs:
                if type(r) is int:
                    holder[r] = env[r]._data
            _compile(step, device)(holder)
            for s in step.outs:
                env[s] = Tensor(holder[s], device)
        elif step.kind == "cond":
            pred = _value(step.refs[0], env)
            n = len(step.blocks)
            if step.rest == ("index",):
                i = int(pred) if 0 <= int(pred) < n else n - 1
            else:
                i = 0 if bool(pred) else 1
            _replay_block(step.blocks[i], env, device)
            for s, r in zip(step.outs, step.extra[i]):
                env[s] = _value(r, env)
        elif step.kind == "while":
            loop_slots, pred, body_out, limit, stack_slot = step.extra
            for s, r in zip(loop_slots, step.refs):
                env[s] = _value(r, env)
            n = None if limit is None else int(_value(limit, env))
            stack: list[list[Any]] = []
            count = 0
            while n is None or count < n:
                _replay_block(step.blocks[0], env, device)
                if not bool(_value(pred, env)):
                    break
                stack.append([getattr(env[s], "_data", env[s]) for s in loop_slots])
                _replay_block(step.blocks[1], env, device)
                new = [_value(r, env) for r in body_out]
                for s, v in zip(loop_slots, new):
                    env[s] = v
                count += 1
            for s, ls in zip(step.outs, loop_slots):
                env[s] = env[ls]
            if stack_slot is not None:
                env[stack_slot] = stack
        elif step.kind == "while_grad":
            # Run on arrays: the loop's gradient program is not itself differentiated.
            arrays: dict[int, Any] = {}
            for r in _reads(step):
                if r in env:
                    v = env[r]
                    arrays[r] = v if isinstance(v, list) else getattr(v, "_data", v)
            _compile(step, device)(arrays)  # type: ignore[arg-type]
            for s in step.outs:
                env[s] = Tensor(arrays[s], device)
