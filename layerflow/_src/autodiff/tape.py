"""`tf.GradientTape`: records ops on watched values and walks them backwards.

Nodes are recorded in execution order, which is already a topological order, so the backward
pass is an iterative walk over the list in reverse: no recursion, no sort. A value used several
times accumulates `grad += ...` (tied weights get the sum of both uses).

Before the walk, one forward pass over the nodes marks the values that lie on a path from a
watched source; a node none of whose inputs is marked is skipped, and while a gradient function
runs, `input_needed(i)` tells it which of its inputs need a gradient (TF's `skip_input_indices`),
so that e.g. matmul does not compute the gradient of the data batch nobody asked for.

Memory. A persistent tape keeps every node (TF's semantics: it can be asked again). A
non-persistent one hands its nodes to the walk, which drops each node (its inputs, output and
residuals) as soon as its gradient has run, and each accumulated gradient as soon as the
node that consumes it has run; the output of an op whose gradient does not read it
(`grad_uses_out=False`) is held only by the nodes that consume it. So while a layer's
gradient runs, the activations of the layers above it are already gone: a training step peaks
near the activations plus one layer's gradients, not the activations plus all of them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.framework import convert, errors
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import Variable
from layerflow._src.utils import nest


class _State(threading.local):
    def __init__(self) -> None:
        self.tapes: list[GradientTape] = []
        # Which inputs of the node whose gradient function is running need a gradient; None
        # outside a tape's backward walk (a direct call then computes every gradient).
        self.needed: tuple[bool, ...] | None = None


_state = _State()


def input_needed(i: int) -> bool:
    """Whether the gradient function now running must return a gradient for input `i`.

    The tape sets this around each gradient call: inputs that lead to no requested source (the
    data batch of a training step, for one) get False, and their gradient may be returned as
    None without being computed. Outside a backward walk every input is needed.

    >>> from layerflow._src.autodiff.tape import input_needed
    >>> input_needed(0)
    True
    """
    needed = _state.needed
    return needed is None or needed[i]


def record(tapes: list[GradientTape], prim: Any, inputs: Any, result: Any, rest: tuple,
           kwargs: dict) -> None:  # fmt: skip
    """Append a node to every active tape that watches one of `inputs` (a tuple, or a list)."""
    node = None
    for tape in tapes:
        watched = tape._watched
        hit = False
        for x in inputs:
            if id(x) in watched:
                hit = True
            elif type(x) is not Tensor and tape._watch_accessed and _autowatch(x):
                watched[id(x)] = x
                hit = True
        if not hit:
            continue
        if node is None:
            # tuple() of a tuple is the tuple itself: the wrappers' fast paths pass tuples.
            node = (prim, tuple(inputs), result, rest, kwargs)
        tape._nodes.append(node)
        if prim.multi_out:
            for o in result:
                if o._data.dtype.kind in "fc":
                    watched[id(o)] = o
        elif result._data.dtype.kind in "fc":
            watched[id(result)] = result


def _autowatch(x: Any) -> bool:
    """Whether a tape watching accessed variables starts watching `x` (trainable float ones)."""
    return isinstance(x, Variable) and x._trainable and x._data.dtype.kind in "fc"


class GradientTape:
    """Record operations for automatic differentiation.

    >>> import layerflow as tf
    >>> x = tf.constant(3.0)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> float(tape.gradient(y, x))
    6.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._nodes: list[tuple] = []
        self._watched: dict[int, Any] = {}
        self._used = False
        self._recording = False

    def __enter__(self) -> GradientTape:
        if self._recording:
            raise ValueError(
                "This GradientTape is already recording; a tape cannot be nested in itself."
            )
        self._push()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pop()

    def _push(self) -> None:
        _state.tapes.append(self)
        self._recording = True

    def _pop(self) -> None:
        tapes = _state.tapes
        for i in range(len(tapes) - 1, -1, -1):
            if tapes[i] is self:
                del tapes[i]
                break
        self._recording = False

    def watch(self, tensor: Any) -> None:
        """Watch a tensor (or a nested structure of them) so gradients flow to it."""
        for t in nest.flatten(tensor):
            if not isinstance(t, TensorLike) and not convert.is_symbolic_value(t):
                raise ValueError(
                    f"GradientTape.watch expects tensors or variables, got {type(t).__name__}: "
                    "pass tf.constant(...) values."
                )
            if t._data.dtype.kind in "fc":
                self._watched[id(t)] = t

    def watched_variables(self) -> tuple[Variable, ...]:
        return tuple(v for v in self._watched.values() if isinstance(v, Variable))

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Run the block without recording on this tape."""
        if not self._recording:
            raise ValueError(
                "stop_recording() needs a tape that is recording (inside `with tape`)."
            )
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self) -> None:
        """Forget everything recorded so far."""
        self._nodes.clear()
        self._watched.clear()
        self._used = False

    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: str = "none",
    ) -> Any:
        """d(sum of target) / d(source) for every source, in the structure of `sources`.

        Sources that the target does not depend on get None (or zeros with
        `unconnected_gradients="zero"`). Integer sources always get None.
        """
        if self._used and not self._persistent:
            raise RuntimeError(
                "A non-persistent GradientTape can only be used to compute one set of gradients "
                "(or jacobians). Create it with tf.GradientTape(persistent=True) to call "
                "gradient() several times."
            )
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(
                f"unconnected_gradients must be 'none' or 'zero', got {unconnected_gradients!r}."
            )
        # The common shapes (one target tensor; a list of variables) skip the nest walk.
        flat_targets = [target] if isinstance(target, TensorLike) else nest.flatten(target)
        plain = type(sources) is list
        if plain:
            for s in sources:
                if not isinstance(s, TensorLike):
                    plain = False
                    break
        flat_sources = list(sources) if plain else nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, TensorLike) and not convert.is_symbolic_value(s):
                raise ValueError(
                    f"GradientTape.gradient: sources must be tensors or variables, got "
                    f"{type(s).__name__}."
                )
        if output_gradients is None:
            flat_og: list[Any] = [None] * len(flat_targets)
        else:
            flat_og = nest.flatten(output_gradients)
            if len(flat_og) != len(flat_targets):
                raise ValueError(
                    f"output_gradients has {len(flat_og)} entries for {len(flat_targets)} targets."
                )
        was_recording = self._recording
        if was_recording:
            self._pop()
        try:
            grads = self._backward(flat_targets, flat_og, flat_sources)
        finally:
            if was_recording:
                self._push()
            self._used = True
            if not self._persistent:
                self._nodes = []
                self._watched = {}
        result = []
        for s in flat_sources:
            g = grads.get(id(s))
            if g is None and unconnected_gradients == "zero":
                g = _fill_like(s, 0)
            result.append(g)
        return result if plain else nest.pack_sequence_as(sources, result)

    def _backward(self, targets: list[Any], ogs: list[Any], sources: list[Any]) -> dict[int, Any]:
        grads = self._seed(targets, ogs)
        keep = {id(s) for s in sources}
        relevant = self._relevant(sources)
        nodes = self._nodes
        if self._persistent:
            for i in range(len(nodes) - 1, -1, -1):
                _visit(nodes[i], grads, keep, relevant)
            return grads
        # A non-persistent tape lets go of each node as soon as its gradient has run (see the
        # module docstring). The ids in `grads` and `relevant` stay unambiguous: every value
        # they name was alive when the walk began, and a value dies only once no node that is
        # still to run names it.
        self._nodes, self._watched = [], {}
        _forget_unused_outputs(nodes)
        while nodes:
            _visit(nodes.pop(), grads, keep, relevant)
        return grads

    def _seed(self, targets: list[Any], ogs: list[Any]) -> dict[int, Any]:
        """The gradients of the targets (ones, or the given output gradients), by id."""
        grads: dict[int, Any] = {}
        watched = self._watched
        for t, og in zip(targets, ogs):
            if not isinstance(t, TensorLike) and not convert.is_symbolic_value(t):
                raise ValueError(
                    f"GradientTape.gradient: the target must be a tensor, got {type(t).__name__}."
                )
            if id(t) not in watched or t._data.dtype.kind not in "fc":
                continue
            if og is None:
                g = _fill_like(t, 1)
            elif isinstance(og, TensorLike) or convert.is_symbolic_value(og):
                g = og
            else:
                g = Tensor(t._device.xp.asarray(og, dtype=t._data.dtype), t._device)
            _accumulate(grads, t, g)
        return grads

    def _relevant(self, sources: list[Any]) -> set[int]:
        """ids of the float values that depend on a watched source (the sources included).

        Nodes are in execution order, so one forward pass suffices. The nodes hold their inputs
        and outputs, so the ids stay unique while the tape lives.
        """
        watched = self._watched
        relevant = {id(s) for s in sources if id(s) in watched}
        for prim, inputs, out, _, _ in self._nodes:
            for x in inputs:
                if id(x) in relevant:
                    break
            else:
                continue
            for o in out if prim.multi_out else (out,):
                if o._data.dtype.kind in "fc":
                    relevant.add(id(o))
        return relevant

    def jacobian(
        self,
        target: Any,
        sources: Any,
        unconnected_gradients: str = "none",
        parallel_iterations: Any = None,
        experimental_use_pfor: bool = True,
    ) -> Any:
        """d target[i...] / d source[j...], shaped target.shape + source.shape."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used once.")
        persistent, self._persistent = self._persistent, True
        try:
            flat_sources = nest.flatten(sources)
            xp = target._device.xp
            n = int(target._data.size)
            rows: list[list[Any]] = [[] for _ in flat_sources]
            for k in range(n):
                og = xp.zeros(n, dtype=target._data.dtype)
                og[k] = 1
                og = Tensor(og.reshape(target._data.shape), target._device)
                gs = self.gradient(target, flat_sources, og, unconnected_gradients)
                for j, g in enumerate(gs):
                    rows[j].append(g)
        finally:
            self._persistent = persistent
            if not persistent:
                self._nodes, self._watched = [], {}
        out = []
        for s, gs in zip(flat_sources, rows):
            if all(g is None for g in gs):
                out.append(None)
                continue
            sx = s._device.xp
            stacked = sx.stack([
                g._data if g is not None else sx.zeros_like(s._data) for g in gs
            ])  # fmt: skip
            out.append(Tensor(stacked.reshape(tuple(target._data.shape) + tuple(s._data.shape)),
                              s._device))  # fmt: skip
        return nest.pack_sequence_as(sources, out)

    def batch_jacobian(
        self,
        target: Any,
        source: Any,
        unconnected_gradients: str = "none",
        parallel_iterations: Any = None,
        experimental_use_pfor: bool = True,
    ) -> Any:
        """d target[b, i...] / d source[b, j...] for each example b (examples independent):
        shaped [batch] + target.shape[1:] + source.shape[1:].

        >>> import layerflow as tf
        >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.batch_jacobian(y, x).numpy()[1].tolist()
        [[6.0, 0.0], [0.0, 8.0]]
        """
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used once.")
        t_shape, s_shape = tuple(target._data.shape), tuple(source._data.shape)
        if not t_shape or not s_shape or t_shape[0] != s_shape[0]:
            raise ValueError(
                f"Need first dimension of target shape {t_shape} and source shape {s_shape} "
                "to match: batch_jacobian differentiates example b of the target by example b "
                "of the source."
            )
        batch, inner = t_shape[0], int(np.prod(t_shape[1:], dtype=np.int64))
        persistent, self._persistent = self._persistent, True
        xp = target._device.xp
        rows: list[Any] = []
        try:
            for k in range(inner):
                og = xp.zeros((batch, inner), dtype=target._data.dtype)
                og[:, k] = 1
                og = Tensor(og.reshape(t_shape), target._device)
                rows.append(self.gradient(target, source, og, unconnected_gradients))
        finally:
            self._persistent = persistent
            if not persistent:
                self._nodes, self._watched = [], {}
        if not rows or all(g is None for g in rows):
            return None
        sx = source._device.xp
        parts = [g._data if g is not None else sx.zeros_like(source._data) for g in rows]
        stacked = sx.stack(parts, axis=1)  # [batch, inner, *source.shape[1:]]
        return Tensor(stacked.reshape(t_shape + s_shape[1:]), source._device)


def _forget_unused_outputs(nodes: list[tuple]) -> None:
    """Replace the output of each node whose gradient does not read it by its id, so that the
    output can die as soon as the nodes that consume it have run."""
    for i, node in enumerate(nodes):
        if not node[0].grad_uses_out and not node[0].multi_out:
            nodes[i] = (node[0], node[1], id(node[2]), node[3], node[4])


def _visit(node: tuple, grads: dict[int, Any], keep: set[int], relevant: set[int]) -> None:
    """Run one node's gradient: take the gradient of its output(s) from `grads` and add its
    inputs' gradients there. A function, so that nothing it touched outlives the call."""
    prim, inputs, out, rest, kwargs = node
    if prim.multi_out:
        dys = [grads.get(id(o)) for o in out]
        if all(d is None for d in dys):
            return
        for o in out:
            if id(o) not in keep:
                grads.pop(id(o), None)
        dy: Any = tuple(d if d is not None else _fill_like(o, 0) for d, o in zip(dys, out))
    else:
        key = out if type(out) is int else id(out)
        dy = grads.get(key)
        if dy is None:
            return
        if key not in keep:
            del grads[key]
        if not prim.grad_uses_out:
            out = None
    needed = tuple([id(x) in relevant for x in inputs])
    if True not in needed:
        return
    # Saved and restored: a gradient function may run a nested tape's backward walk.
    saved = _state.needed
    _state.needed = needed
    try:
        if prim.list_input:
            in_grads = prim.grad_fn(dy, out, list(inputs), *rest, **kwargs)
        else:
            in_grads = prim.grad_fn(dy, out, *inputs, *rest, **kwargs)
    finally:
        _state.needed = saved
    del dy
    if not isinstance(in_grads, list | tuple):
        in_grads = (in_grads,)
    for i, (x, g) in enumerate(zip(inputs, in_grads)):
        if g is None or not needed[i]:
            continue
        # A symbolic gradient (a `tf.function` trace's) has an ArraySpec as `_data`.
        ga, xa = getattr(g, "_data", None) if g is not None else None, x._data
        if ga is None or (ga.shape != xa.shape and tuple(ga.shape) != tuple(xa.shape)):
            got = tuple(g._data.shape) if isinstance(g, TensorLike) else type(g).__name__
            raise errors.InternalError(
                None,
                prim.name,
                f"The gradient of op '{prim.name}' for input #{i} has shape {got}, but "
                f"the input has shape {tuple(x._data.shape)}. This is a bug in the "
                "op's gradient; please report it.",
            )
        if ga.dtype is not xa.dtype and ga.dtype != xa.dtype:
            raise errors.InternalError(
                None,
                prim.name,
                f"The gradient of op '{prim.name}' for input #{i} has dtype "
                f"{g.dtype.name}, but the input has dtype {x.dtype.name}.",
            )
        _accumulate(grads, x, g)


def _fill_like(t: Any, value: int) -> Any:
    """A tensor of `t`'s shape and dtype filled with `value` (a symbolic `t` makes its own)."""
    if isinstance(t, TensorLike):
        xp = t._device.xp
        fill = xp.ones_like if value else xp.zeros_like
        return Tensor(fill(t._data), t._device)
    return t._fill_like(value)


def _accumulate(grads: dict[int, Any], x: Any, g: Any) -> None:
    prev = grads.get(id(x))
    grads[id(x)] = g if prev is None else _sum_grads(prev, g)


# Summing gradients is the tape's job; the op that does it is defined in op.py (which imports
# this module) and recorded on outer tapes, so second derivatives through a value used twice
# stay right.
_sum_grads: Any = None


def stop_recording_all() -> contextlib.AbstractContextManager[None]:
    """Pause every active tape (used by custom_gradient around the user's forward)."""

    @contextlib.contextmanager
    def cm() -> Iterator[None]:
        saved = list(_state.tapes)
        _state.tapes.clear()
        try:
            yield
        finally:
            _state.tapes[:] = saved

    return cm()
