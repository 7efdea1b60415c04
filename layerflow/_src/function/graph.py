"""The trace of a `tf.function`: symbolic tensors, and the steps that the calls on them record.

While a trace runs, `backend.flags.tracer` is the `Tracer`: every op wrapper hands its call to
`Tracer.op_call` (`autodiff/op.py`), which computes the output spec with the op's spec rule
(`autodiff/specs.py`), appends one `Step` to the current block and returns `GraphTensor`s of
that spec. Variables are never copied into the trace: a step names the Variable and reads its
array when the step runs, and `assign*` becomes a step, so the program sees every change. Calls
that are not ops (random draws, `tf.print`, registered host methods such as an optimizer's
`apply_gradients`) become host steps that call the eager function at run time.

A `GraphTensor` has a shape and dtype and no value: using it as a Python bool or iterating
over it raises TF's `OperatorNotAllowedInGraphError`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff import dispatch, specs
from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import convert, dtypes, errors
from layerflow._src.framework.tensor import ShapedValue, Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import Variable
from layerflow._src.utils import nest

_flags = backend.flags

_HELP = (
    "You can attempt the following resolutions to the problem: If you are running in Graph "
    "mode, use Eager execution mode or decorate this function with @tf.function. If you are "
    "using AutoGraph, you can try decorating this function with @tf.function. If that does not "
    "work, then you may be using an unsupported feature or your source code may not be visible "
    "to AutoGraph. See https://github.com/tensorflow/tensorflow/blob/master/tensorflow/python/"
    "autograph/g3doc/reference/limitations.md#access-to-source-code for more information."
)


class GraphTensor(ShapedValue):
    """A symbolic tensor of a `tf.function` trace: a slot of the traced program.

    `_data` is its ArraySpec (shape, None where unknown, and dtype), so op functions that read
    `x._data.ndim` work on it; it has no values.
    """

    # `_src` is set on a slice of a Variable (`v[0, 0]`), so that `.assign` writes back.
    # `_keras_mask`: the Keras mask a layer attached (as on eager tensors, `keras/engine/masking`).
    __slots__ = ("_data", "_device", "_slot", "_name", "_src", "_keras_mask", "__weakref__")

    def __init__(self, spec: ArraySpec, slot: int, device: backend.Device, name: str) -> None:
        self._data = spec
        self._slot = slot
        self._device = device
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def device(self) -> str:
        return self._device.name

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self._name}' shape={self.shape} dtype={self.dtype.name}>"

    def __str__(self) -> str:
        return f'Tensor("{self._name}", shape={self.shape}, dtype={self.dtype.name})'

    def __bool__(self) -> bool:
        raise errors.OperatorNotAllowedInGraphError(
            f"Using a symbolic `tf.Tensor` as a Python `bool` is not allowed. {_HELP}"
        )

    def __iter__(self) -> Iterator[Any]:
        raise errors.OperatorNotAllowedInGraphError(
            f"Iterating over a symbolic `tf.Tensor` is not allowed. {_HELP}"
        )

    def __len__(self) -> int:
        shape = self._data.shape
        if not shape or shape[0] is None:
            raise TypeError(
                f"len is not well defined for a symbolic Tensor ({self._name}) of shape "
                f"{self.shape}: its first dimension is unknown. Use tf.shape(x)[0] instead."
            )
        return shape[0]

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def _no_value(self, what: str) -> TypeError:
        return TypeError(
            f"{what} of a symbolic tf.Tensor ({self._name}) is not defined: inside a tf.function "
            "the tensor has no value while the function is traced. Use TF ops on it (tf.cast, "
            "tf.cond), or run the function eagerly (tf.config.run_functions_eagerly(True))."
        )

    def __float__(self) -> float:
        raise self._no_value("float()")

    def __int__(self) -> int:
        raise self._no_value("int()")

    def __index__(self) -> int:
        raise self._no_value("Using it as an index")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"Cannot convert a symbolic tf.Tensor ({self._name}) to a numpy array: inside a "
            "tf.function the tensor has no value while the function is traced. Use TF ops on "
            "it, or run the function eagerly (tf.config.run_functions_eagerly(True))."
        )

    def __hash__(self) -> int:
        return id(self)

    def assign(self, value: Any, read_value: bool = True) -> Any:
        src = getattr(self, "_src", None)
        if src is None:
            raise AttributeError(
                "A tf.Tensor is immutable and has no assign(). Create a tf.Variable to hold "
                "mutable state, or slice a Variable (`v[0, 0].assign(42)`)."
            )
        variable, key = src
        return variable._assign_slice(key, value)

    def ref(self) -> Any:
        from layerflow._src.framework.tensor import Reference

        return Reference(self)

    def _fill_like(self, value: int) -> GraphTensor:
        """ones_like / zeros_like of this tensor, for the tape's seed gradients."""
        fill = _ones_like if value else _zeros_like
        return current().array_call(fill, [self], self._data, "fill")


def _ones_like(xp: Any, a: Any) -> Any:
    return xp.ones_like(a)


def _zeros_like(xp: Any, a: Any) -> Any:
    return xp.zeros_like(a)


def install_operators() -> None:
    """Give GraphTensor the operators of Tensor (installed by the ops layer)."""
    skip = {"__init__", "__repr__", "__str__", "__iter__", "__hash__", "__reduce__", "__copy__",
            "__deepcopy__", "__array__", "__bool__", "__len__", "__slots__", "assign",
            "__module__", "__doc__", "__dict__", "__weakref__", "__format__", "__float__",
            "__int__", "__index__", "__complex__"}  # fmt: skip
    for cls in (Tensor, TensorLike):
        for key, value in vars(cls).items():
            if key.startswith("__") and key.endswith("__") and key not in skip and callable(value):
                if key not in vars(GraphTensor):
                    setattr(GraphTensor, key, value)
    GraphTensor.__hash__ = lambda self: id(self)  # type: ignore[method-assign]


class Const:
    """A value fixed at trace time (a captured tensor, or a converted Python value)."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array


class Step:
    """One recorded call: `kind` is "op", "array", "host", "assign", "cond", "while" or
    "while_grad" (`loop_gradient.py`).

    `refs` are the inputs (ints: slots; Variables: read when the step runs; Const: fixed);
    `outs` the slots it defines; `blocks` the sub-programs of a control-flow step.
    """

    __slots__ = ("kind", "fn", "refs", "rest", "kwargs", "outs", "blocks", "extra", "stateful",
                 "wrapper")  # fmt: skip

    def __init__(self, kind: str, fn: Any, refs: list[Any], rest: tuple, kwargs: dict,
                 outs: list[int], stateful: bool = False) -> None:  # fmt: skip
        self.kind = kind
        self.fn = fn
        self.refs = refs
        self.rest = rest
        self.kwargs = kwargs
        self.outs = outs
        self.blocks: list[list[Step]] = []
        self.extra: Any = None
        self.stateful = stateful
        self.wrapper: Any = None


class Graph:
    """The steps of one trace and its slots (a slot holds one array while the program runs)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.steps: list[Step] = []
        self.block = self.steps  # the block new steps go to (a branch while one is traced)
        self.n_slots = 0
        self.inputs: list[GraphTensor] = []
        self.specs: dict[int, ArraySpec] = {}
        self.variables: dict[int, Variable] = {}
        self.names: dict[str, int] = {}
        self.tensors: dict[int, GraphTensor] = {}

    def new_tensor(self, spec: ArraySpec, device: backend.Device, name: str) -> GraphTensor:
        slot = self.n_slots
        self.n_slots += 1
        self.specs[slot] = spec
        count = self.names.get(name, 0)
        self.names[name] = count + 1
        label = f"{name}:0" if not count else f"{name}_{count}:0"
        t = GraphTensor(spec, slot, device, label)
        self.tensors[slot] = t
        return t

    @contextlib.contextmanager
    def sub_block(self) -> Iterator[list[Step]]:
        """Record the steps of the block into a fresh list (a branch or loop body)."""
        saved = self.block
        self.block = []
        try:
            yield self.block
        finally:
            self.block = saved


class Tracer:
    """The handler of every op call while a trace runs (see the module docstring)."""

    def __init__(self, graph: Graph, allow_variables: bool) -> None:
        self.graph = graph
        self.allow_variables = allow_variables
        self.created_variables = False
        self.device = backend.current_device()

    # --- references ------------------------------------------------------------------------
    def ref(self, value: Any, hint: Any = None) -> Any:
        """The step input for `value`: a slot, a Variable, or a Const."""
        if isinstance(value, GraphTensor):
            return value._slot
        if isinstance(value, Variable):
            self.graph.variables[id(value)] = value
            return value
        if isinstance(value, TensorLike):
            return Const(value._data)
        return Const(convert.to_array(value, hint, self.device))

    # --- ops -------------------------------------------------------------------------------
    def op_call(self, wrapper: Any, args: tuple, kwargs: dict) -> Any:
        prim = getattr(wrapper, "prim", None)
        if prim is None:  # a public_api function: its body records its primitives
            return getattr(wrapper, "traced", wrapper)(*args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "name"}
        if prim.name == "reshape" and len(args) > 1:
            args = (args[0], _unknown_as_minus_one(args[1]), *args[2:])
        with suspended():
            out_spec = specs.abstract_eval(wrapper, args, kwargs)
        if prim.list_input:
            values, rest = list(args[0]), tuple(args[1:])
        else:
            values, rest = list(args[: prim.n_inputs]), tuple(args[prim.n_inputs :])
        anchor = next((v for v in values if _is_tensor(v)), None)
        hint = None
        if anchor is not None and prim.same_dtype:
            hint = dtypes.from_numpy(anchor._data.dtype)
        inputs = [v if _is_tensor(v) else Tensor(self.ref(v, hint).array, self.device)
                  for v in values]  # fmt: skip
        refs = [self.ref(v) for v in inputs]
        name = prim.name
        if prim.multi_out:
            result: Any = tuple(self.graph.new_tensor(s, self.device, name) for s in out_spec)
            outs = [t._slot for t in result]
        else:
            result = self.graph.new_tensor(out_spec, self.device, name)
            outs = [result._slot]
        step = Step("op", prim, refs, rest, kwargs, outs)
        step.wrapper = wrapper
        step.extra = user_frame()
        self.graph.block.append(step)
        tapes = _tape._state.tapes
        if tapes and prim.grad_fn is not None:
            _tape.record(tapes, _TracedGradient(prim), tuple(inputs), result, rest, kwargs)
        return result

    def array_call(self, fn: Callable[..., Any], inputs: list[Any], spec: ArraySpec,
                   name: str) -> GraphTensor:  # fmt: skip
        """A step `fn(xp, *arrays) -> array` (no gradient) with a known output spec."""
        out = self.graph.new_tensor(spec, self.device, name)
        self.graph.block.append(Step("array", fn, [self.ref(v) for v in inputs], (), {},
                                     [out._slot]))  # fmt: skip
        return out

    # --- host calls: eager functions run at every call of the program -----------------------
    def host_call(self, fn: Callable[..., Any], args: tuple, kwargs: dict, out_spec: Any = None,
                  result: Any = None, name: str = "host",
                  stateful: bool = True) -> Any:  # fmt: skip
        """Record `fn(*args, **kwargs)` to run eagerly (tensors in, tensors out) at each call.

        `out_spec` is the structure of ArraySpecs of its tensor outputs (None: it returns
        nothing the program uses, and the trace gets `result`).
        """
        # Iterators (`zip(grads, vars)`) are read once, here, into lists the step keeps.
        args = tuple(_materialize(a) for a in args)
        kwargs = {k: _materialize(v) for k, v in kwargs.items()}
        flat = nest.flatten((args, kwargs))
        refs = []
        positions = []
        for i, v in enumerate(flat):
            if isinstance(v, GraphTensor | Variable):
                refs.append(self.ref(v))
                positions.append(i)
        specs_flat = [] if out_spec is None else nest.flatten(out_spec)
        outs_t = [self.graph.new_tensor(s, self.device, name) for s in specs_flat]
        step = Step("host", fn, refs, (), {}, [t._slot for t in outs_t], stateful=stateful)
        step.extra = ((args, kwargs), positions, out_spec)
        self.graph.block.append(step)
        if out_spec is None:
            return result
        return nest.pack_sequence_as(out_spec, outs_t)

    def random_call(self, fn: Callable[..., Any], args: tuple, kwargs: dict,
                    spec: Callable[..., Any] | None = None) -> Any:  # fmt: skip
        """A random op as a host step that draws anew at every call."""
        if spec is not None:
            out_spec = spec(*args, **kwargs)
            return self.host_call(fn, args, kwargs, out_spec, name=fn.__name__, stateful=False)
        for v in nest.flatten((args, kwargs)):
            if isinstance(v, GraphTensor):
                raise TypeError(
                    f"{getattr(fn, '__name__', 'random op')}: inside a tf.function its shape and "
                    f"parameters must be known when the function is traced; got the symbolic "
                    f"tensor {v!r}. Pass Python values, or x.shape for a static shape."
                )
        with suspended():
            sample = fn(*args, **kwargs)
        out_spec = nest.map_structure(lambda t: ArraySpec(t._data.shape, t._data.dtype), sample)
        return self.host_call(fn, args, kwargs, out_spec, name=fn.__name__, stateful=False)

    # --- variables -------------------------------------------------------------------------
    def read_variable(self, var: Variable) -> GraphTensor:
        spec = ArraySpec(var._data.shape, var._data.dtype)
        return self.array_call(_copy, [var], spec, "ReadVariableOp")

    def variable_call(self, var: Variable, method: str, args: tuple) -> Variable:
        """`var.<method>(*args)` (assign, assign_add, ...) as a step; returns the variable."""
        if method in ("assign", "assign_add", "assign_sub"):
            (value,) = args
            if isinstance(value, GraphTensor):
                _check_assign(var, value, method)  # the eager checks, on specs
                ref: Any = value._slot
            else:  # a constant: checked and converted now, as the eager call would
                with suspended():
                    ref = Const(var._value_array(value, tuple(var._data.shape), method))
            self.graph.variables[id(var)] = var
            self.graph.block.append(Step("assign", method, [var, ref], (), {}, [], True))
            return var
        self.host_call(_variable_method, (var, method, *args), {}, name=method)
        return var


class _TracedGradient:
    """An op as a traced tape records it: its gradient is traced when the gradient function is
    written with ops; one written on arrays (convolution, fused RNNs: fast kernels that read
    `x._data`) fails on symbolic tensors, and then becomes a host step that runs it on the real
    tensors at every call of the program (its residuals recomputed there)."""

    __slots__ = ("_prim",)

    def __init__(self, prim: Any) -> None:
        self._prim = prim

    def __getattr__(self, name: str) -> Any:
        return getattr(self._prim, name)

    def grad_fn(self, dy: Any, out: Any, *args: Any, **kwargs: Any) -> Any:
        prim = self._prim
        tracer = current()
        block = tracer.graph.block
        mark = len(block)
        try:
            return prim.grad_fn(dy, out, *args, **kwargs)
        except (AttributeError, TypeError, NotImplementedError):
            del block[mark:]  # the partly traced gradient: dropped
        inputs = list(args[0]) if prim.list_input else list(args[: prim.n_inputs])
        rest = args[1:] if prim.list_input else args[len(inputs) :]
        needed = _tape._state.needed
        wanted = [i for i, x in enumerate(inputs) if needed is None or needed[i]]
        list_input = prim.list_input

        def run(dy: Any, out: Any, xs: list[Any]) -> list[Any]:
            saved = _tape._state.needed
            _tape._state.needed = needed
            try:
                if list_input:
                    g = prim.grad_fn(dy, out, list(xs), *rest, **kwargs)
                else:
                    g = prim.grad_fn(dy, out, *xs, *rest, **kwargs)
            finally:
                _tape._state.needed = saved
            if not isinstance(g, list | tuple):
                g = (g,)
            return [g[i] if g[i] is not None else _zeros(xs[i]) for i in wanted]

        out_spec = [ArraySpec(tuple(inputs[i]._data.shape), inputs[i]._data.dtype)
                    for i in wanted]  # fmt: skip
        grads = tracer.host_call(run, (dy, out, inputs), {}, out_spec,
                                 name=f"{prim.name}_grad", stateful=False)  # fmt: skip
        full: list[Any] = [None] * len(inputs)
        for i, g in zip(wanted, grads):
            full[i] = g
        return tuple(full)


def _zeros(x: Any) -> Tensor:
    return Tensor(x._device.xp.zeros_like(x._data), x._device)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def user_frame() -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost caller outside layerflow: the user's line that
    made the op now being traced (named again if the op fails when the program runs)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name


def _unknown_as_minus_one(shape: Any) -> Any:
    """A reshape target computed from a static shape with one unknown dimension (a batch of
    None): that dimension becomes -1, which NumPy's reshape infers at run time."""
    if isinstance(shape, list | tuple) and shape.count(None) == 1 and -1 not in shape:
        return type(shape)(-1 if d is None else d for d in shape)
    return shape


def _materialize(value: Any) -> Any:
    if not isinstance(value, zip | map | filter | types.GeneratorType):
        return value
    return [tuple(v) if isinstance(v, list | tuple) else v for v in value]


def host_method(fn: Callable[..., Any] | None = None, *,
                result: Callable[..., Any] | None = None,
                outputs: bool = False, trace: bool = False) -> Any:  # fmt: skip
    """Make a stateful eager method a host step inside `tf.function` traces.

    Code that works on arrays (an optimizer's `apply_gradients`, a metric's `update_state`)
    cannot be traced symbolically; decorated, it runs eagerly at every call of the traced
    program, on the real tensors, in program order. `result(*args, **kwargs)` gives what the
    call returns while tracing (no tensors computed by the call itself).

    With `outputs=True` the call's tensor results are the step's outputs, computed at every
    call (a metric's `result()`): the method is run once eagerly while tracing to learn their
    structure, shapes and dtypes, so it must have no side effects.

    With `trace=True` the call is first traced like any code (its ops and variable writes
    become steps of the program, as a metric written with ops needs). It becomes a host step
    instead, the steps it recorded dropped, when that trace fails on a symbolic tensor (the
    method computes on values: NumPy, `float()`), when a method without outputs changed no
    variable (its effect is Python state, which a trace would change only once), or when
    one with outputs returned values that are not traced tensors (read while tracing, they
    would be frozen).

    >>> class Counter:
    ...     n = 0
    ...     @host_method
    ...     def bump(self, x):
    ...         Counter.n += 1
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tracer = _flags.tracer
            if tracer is None:
                return f(*args, **kwargs)
            if trace:
                block = tracer.graph.block
                mark = len(block)
                try:
                    value = f(*args, **kwargs)
                except Exception:  # noqa: BLE001 - a real error is raised again by the host run
                    value = block  # (a marker: not traced)
                if value is not block:
                    if outputs and all(isinstance(v, GraphTensor) for v in nest.flatten(value)):
                        return value
                    if not outputs and any(_changes_state(s) for s in block[mark:]):
                        return value
                del block[mark:]
            if outputs:
                return _sampled_host_call(tracer, f, args, kwargs)
            shown = None if result is None else result(*args, **kwargs)
            return tracer.host_call(f, args, kwargs, result=shown, name=f.__name__)

        wrapper._lf_host_method = True  # type: ignore[attr-defined]
        return wrapper

    return decorate if fn is None else decorate(fn)


def _changes_state(step: Step) -> bool:
    return step.stateful or any(_changes_state(s) for b in step.blocks for s in b)


def _sampled_host_call(tracer: Tracer, f: Callable[..., Any], args: tuple,
                       kwargs: dict) -> Any:  # fmt: skip
    """A host step whose tensor results are outputs, their specs taken from one eager run."""
    if any(isinstance(v, GraphTensor) for v in nest.flatten((args, kwargs))):
        raise TypeError(
            f"{getattr(f, '__qualname__', f)}: a host method with outputs=True cannot take "
            "symbolic tensors of a tf.function trace; it may only read state."
        )
    with suspended():
        sample = f(*args, **kwargs)
    flat = nest.flatten(sample)
    if not all(isinstance(v, TensorLike) for v in flat):
        return sample  # no tensors: a Python value, fixed at trace time

    def run(*a: Any, **k: Any) -> Any:
        return nest.flatten(f(*a, **k))

    out_spec = [ArraySpec(tuple(v._data.shape), v._data.dtype) for v in flat]
    outs = tracer.host_call(run, args, kwargs, out_spec, name=f.__name__, stateful=True)
    return nest.pack_sequence_as(sample, outs)


def _copy(xp: Any, a: Any) -> Any:
    return a.copy()


def _variable_method(var: Variable, method: str, *args: Any) -> None:
    getattr(var, method)(*args)


def _check_assign(var: Variable, value: GraphTensor, what: str) -> None:
    if value._data.dtype != var._data.dtype:
        raise TypeError(
            f"Cannot {what} a {value.dtype.name} value to variable '{var.name}' of dtype "
            f"{var.dtype.name}. Cast it first: tf.cast(value, {var.dtype!r})."
        )
    got, want = value._data.shape, tuple(var._data.shape)
    if what in ("assign", "assign_add", "assign_sub") and len(got) == len(want):
        if all(g is None or g == w for g, w in zip(got, want)):
            return
    if what in ("assign",) or len(got) > len(want):
        raise ValueError(
            f"Cannot {what} a value of shape {TensorShape(got)} to variable '{var.name}' of shape "
            f"{TensorShape(want)}; the shapes must match. The variable is unchanged."
        )


def _is_tensor(v: Any) -> bool:
    return isinstance(v, GraphTensor | TensorLike)


# --- the tracer's switch -----------------------------------------------------------------------


def current() -> Tracer:
    tracer = _flags.tracer
    if tracer is None:
        raise RuntimeError("No tf.function trace is running.")
    return tracer


def set_tracer(tracer: Tracer | None) -> Tracer | None:
    saved = _flags.tracer
    _flags.tracer = tracer
    return saved


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Run the block eagerly (`tf.init_scope`): no trace records it."""
    saved = set_tracer(None)
    try:
        yield
    finally:
        set_tracer(saved)


@contextlib.contextmanager
def tracing(tracer: Tracer) -> Iterator[None]:
    saved = set_tracer(tracer)
    try:
        yield
    finally:
        set_tracer(saved)


def _symbolic_handler(wrapper: Any, args: tuple, kwargs: dict) -> Any:
    """The SymbolicRegistry handler for GraphTensor (public_api calls on graph tensors)."""
    tracer = _flags.tracer
    if tracer is None:
        raise errors.InvalidArgumentError(
            None,
            dispatch.name_of(wrapper),
            f"{dispatch.name_of(wrapper)} got a symbolic tensor of a tf.function trace outside "
            "that trace. Graph tensors cannot escape their tf.function; return them instead.",
        )
    return tracer.op_call(wrapper, args, kwargs)


def spec_of_value(value: Any) -> ArraySpec:
    if isinstance(value, GraphTensor | TensorLike):
        return ArraySpec(value._data.shape, value._data.dtype)
    arr = np.asarray(convert.host_array(value))
    return ArraySpec(arr.shape, arr.dtype)


convert.register_symbolic((GraphTensor,), _symbolic_handler)
