"""`tf.function`: trace the Python body once per input signature, then run the traced plan.

The rules are TF's (https://www.tensorflow.org/guide/function):

- The body runs (is *traced*) on symbolic tensors once per new signature: tensor arguments by
  shape and dtype, Python arguments by value, other objects by identity. Later calls with a
  covered signature run the compiled plan (`function/plan.py`) and never the Python body, so
  Python side effects happen while tracing only; `tf.print` and variable updates are steps of
  the plan and happen at every call. `reduce_retracing=True` traces a generalised signature
  (None where sizes differed) on the second shape. Frequent retracing logs TF's warning.
- Variables may be created on the first trace only. As TF does, a trace that created variables
  is traced again; a second trace that creates variables raises TF's ValueError.
- A call under an active `GradientTape` replays the plan through the op wrappers, so the outer
  tape records it; a tape *inside* the function is traced, its gradient program derived once.
- `tf.config.run_functions_eagerly(True)` makes every function run its body eagerly.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff import tape as _tape
from layerflow._src.data.structure import TensorSpec
from layerflow._src.framework import composite_dispatch, convert, dtypes
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import Variable, variable_creator_scope
from layerflow._src.function import graph as _graph
from layerflow._src.function import graph_export as _graph_export
from layerflow._src.function import signature as _sig
from layerflow._src.function.graph import Const, Graph, GraphTensor, Tracer
from layerflow._src.function.plan import Plan
from layerflow._src.utils import nest

_log = logging.getLogger("layerflow")
_run_eagerly = [False]


# The AutoGraph converter: a callable `fn -> converted fn`, applied to the Python body when a
# function is created with autograph=True: AutoGraph's `convert` (`autograph/conversion.py`),
# replaceable with `set_autograph_converter`.
def autograph_convert(fn: Callable[..., Any]) -> Callable[..., Any]:
    """AutoGraph's `convert`, imported on the first trace (it is not needed to import layerflow)."""
    from layerflow._src.autograph.conversion import convert

    return convert(fn)


_autograph: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [autograph_convert]

_VARIABLE_ERROR = (
    "tf.function only supports singleton tf.Variables created on the first call. Make sure the "
    "tf.Variable is only created once or created outside tf.function. See "
    "https://www.tensorflow.org/guide/function#creating_tfvariables for more information."
)
_RETRACE_THRESHOLD, _RETRACE_WINDOW = 5, 10


def set_autograph_converter(converter: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Install AutoGraph's converter (used by functions created with autograph=True)."""
    _autograph[0] = converter


class ConcreteFunction:
    """One trace of a `tf.function`: its plan, input signature and outputs.

    Calling it runs the plan on tensors of its input signature.
    """

    def __init__(self, function: Function, key: tuple, graph: Graph, plan: Plan,
                 structured_input_signature: tuple, structured_outputs: Any,
                 out_structure: Any, keepalive: list[Any]) -> None:  # fmt: skip
        self._function = function
        self._key = key
        self.graph = graph
        self._plan = plan
        self.structured_input_signature = structured_input_signature
        self.structured_outputs = structured_outputs
        self._out_structure = out_structure
        self._pack = _packer(out_structure)
        self._keepalive = keepalive  # the objects whose ids are part of the key

    @property
    def inputs(self) -> list[GraphTensor]:
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list[Any]:
        return [
            t for t in nest.flatten(self.structured_outputs, True) if isinstance(t, GraphTensor)
        ]

    @property
    def variables(self) -> tuple[Variable, ...]:
        return tuple(self.graph.variables.values())

    @property
    def trainable_variables(self) -> tuple[Variable, ...]:
        return tuple(v for v in self.variables if v.trainable)

    @property
    def name(self) -> str:
        return self.graph.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves = nest.flatten((args, kwargs), expand_composites=True)
        key = _sig.call_key(args, kwargs)
        if not _sig.covers(self._key, key):
            raise TypeError(
                f"ConcreteFunction {self.pretty_signature_line()} was called with arguments "
                f"{args!r} and {kwargs!r}, which do not match its input signature. Call the "
                "tf.function itself to trace a new signature."
            )
        return self._run(leaves)

    def _run(self, leaves: list[Any]) -> Any:
        tensors = [v for v in leaves if _sig.is_tensor_value(v)]
        device = self._plan.device
        if _tape._state.tapes:
            flat = self._plan.replay([_as_tensor(t, device) for t in tensors])
            flat = [v.read_value() if isinstance(v, Variable) else v for v in flat]
        else:
            arrays = self._plan.run([_as_array(t, device) for t in tensors])
            flat = [Tensor(a, device) for a in arrays]
        return self._pack(iter(flat))

    def pretty_signature_line(self) -> str:
        args, kwargs = self.structured_input_signature
        names = _sig.param_names(self._function._python_function)
        parts = [f"{n}: {_type_text(a)}" for n, a in zip(names, args)]
        parts += [f"{k}: {_type_text(v)}" for k, v in kwargs.items()]
        return f"({', '.join(parts)}) -> {_type_text(_output_specs(self.structured_outputs))}"

    def pretty_printed_signature(self, verbose: bool = True) -> str:
        args, kwargs = self.structured_input_signature
        names = _sig.param_names(self._function._python_function)
        lines = ["Input Parameters:"]
        for n, a in zip(names, args):
            lines.append(f"  {n} (POSITIONAL_OR_KEYWORD): {_type_text(a)}")
        for k, v in kwargs.items():
            lines.append(f"  {k} (KEYWORD_ONLY): {_type_text(v)}")
        lines.append("Output Type:")
        lines.append(f"  {_type_text(_output_specs(self.structured_outputs))}")
        lines.append("Captures:")
        captured = [v for v in self.graph.variables.values()]
        if not captured:
            lines.append("  None")
        for v in captured:
            lines.append(f"  {id(v)}: TensorSpec(shape={tuple(v.shape.as_list())!r}, "
                         f"dtype=tf.resource, name=None)")  # fmt: skip
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.pretty_signature_line()} at 0x{id(self):X}>"


def _type_text(value: Any) -> str:
    if isinstance(value, TensorSpec):
        return repr(TensorSpec(value.shape, value.dtype))
    if isinstance(value, dict):
        inner = ", ".join(f"[{k!r}, {_type_text(v)}]" for k, v in value.items())
        return f"Dict[{inner}]"
    if isinstance(value, list | tuple):
        kind = "List" if isinstance(value, list) else "Tuple"
        return f"{kind}[{', '.join(_type_text(v) for v in value)}]"
    if value is None:
        return "None"
    return f"Literal[{value!r}]"


def _output_specs(outputs: Any) -> Any:
    return nest.map_structure(
        lambda t: TensorSpec(t.shape, t.dtype) if isinstance(t, GraphTensor) else t,
        outputs,
        expand_composites=True,
    )


def _as_tensor(value: Any, device: backend.Device) -> Any:
    if isinstance(value, TensorLike):
        return value
    return Tensor(backend.to_device(convert.host_array(value), device), device)


def _as_array(value: Any, device: backend.Device) -> Any:
    if type(value) is np.ndarray and value.dtype.kind in "biufc" and device.kind == "CPU":
        return value  # what `host_array` and `to_device` would return, without their checks
    if isinstance(value, TensorLike):
        return value._data if value._device is device else backend.to_device(value._data, device)
    return backend.to_device(convert.host_array(value), device)


def _pack_outputs(structure: Any, flat: list[Any]) -> Any:
    it = iter(flat)
    return nest.map_structure(
        lambda leaf: next(it) if leaf is _SLOT else leaf, structure, expand_composites=True
    )


_SLOT = object()  # marks the output leaves that the plan computes


def _packer(structure: Any) -> Callable[[Any], Any]:
    """`_pack_outputs(structure, ...)` compiled once (called with an iterator of the computed
    leaves): plain tuples, lists and dicts are rebuilt without walking the structure again."""
    t = type(structure)
    if t is tuple or t is list:
        subs = [_packer(c) for c in structure]
        if t is list:
            return lambda it: [b(it) for b in subs]
        return lambda it: tuple([b(it) for b in subs])
    if t is dict and all(type(k) is str for k in structure):
        # nest walks a dict in sorted key order and rebuilds it in its own order
        order = sorted(structure)
        subs_d = {k: _packer(structure[k]) for k in order}
        keys = list(structure)

        def pack_dict(it: Any) -> dict:
            values = {k: subs_d[k](it) for k in order}
            return {k: values[k] for k in keys}

        return pack_dict
    if nest.is_nested(structure) or nest.is_composite(structure):
        # other nested types and composites (extension types): nest's walk, taking only the
        # leaves of this part (its siblings follow in the same iterator)
        n = sum(1 for leaf in nest.flatten(structure, expand_composites=True) if leaf is _SLOT)
        return lambda it: _pack_outputs(structure, [next(it) for _ in range(n)])
    if structure is _SLOT:
        return lambda it: next(it)
    return lambda it: structure


class Function:
    """A `tf.function`: see the module docstring.

    >>> import layerflow as tf
    >>> @tf.function
    ... def f(x):
    ...     return x * 2
    >>> int(f(tf.constant(3))), f.experimental_get_tracing_count()
    (6, 1)
    """

    def __init__(self, python_function: Callable[..., Any], input_signature: Any = None,
                 autograph: bool = True, jit_compile: bool | None = None,
                 reduce_retracing: bool = False, name: str | None = None) -> None:  # fmt: skip
        if input_signature is not None:
            if not isinstance(input_signature, list | tuple):
                raise TypeError(
                    f"input_signature must be either a tuple or a list, got "
                    f"{type(input_signature).__name__}."
                )
            from layerflow._src.ops.ragged.ragged_spec import RaggedTensorSpec  # on first use

            for s in nest.flatten(list(input_signature), expand_composites=True):
                if not isinstance(s, TensorSpec | RaggedTensorSpec):
                    raise TypeError(
                        f"input_signature must be a possibly nested sequence of TensorSpec "
                        f"objects, got invalid args {s!r}."
                    )
        self._python_function = python_function
        self._input_signature = None if input_signature is None else list(input_signature)
        self._autograph = autograph
        self._jit_compile = jit_compile
        self._reduce_retracing = reduce_retracing
        self._name = name or getattr(python_function, "__name__", "function")
        self._traces: dict[tuple, ConcreteFunction] = {}
        self._tracing_count = 0
        self._variables_created = False
        self._calls = 0
        self._traced_calls: list[int] = []
        self._warned = False
        self._instances: Any = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, python_function)

    # --- TF's public surface ---------------------------------------------------------------
    @property
    def python_function(self) -> Callable[..., Any]:
        return self._python_function

    @property
    def input_signature(self) -> Any:
        return None if self._input_signature is None else tuple(self._input_signature)

    @property
    def function_spec(self) -> Any:
        return self._input_signature

    def experimental_get_tracing_count(self) -> int:
        return self._tracing_count

    def __repr__(self) -> str:
        return f"<layerflow Function {self._name!r} at 0x{id(self):x}>"

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """A method: one Function per instance, its body bound to the instance (TF's rule)."""
        if instance is None:
            return self
        try:
            bound = self._instances.get(instance)
        except TypeError:
            bound = None
        if bound is None:
            bound = Function(self._python_function.__get__(instance, owner),
                             self._input_signature, self._autograph, self._jit_compile,
                             self._reduce_retracing, self._name)  # fmt: skip
            try:
                self._instances[instance] = bound
            except TypeError:
                pass  # an instance without weak references gets a fresh Function each time
        return bound

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The trace for these arguments (TensorSpecs allowed), tracing it if needed."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        if self._input_signature is not None and (args or kwargs):
            args = _sig.bind_signature(self._python_function, self._input_signature, args,
                                       kwargs)  # fmt: skip
            kwargs = {}
        key = _sig.call_key(args, kwargs)
        return self._lookup_or_trace(key, args, kwargs)

    # --- calling ---------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _run_eagerly[0]:
            return self._python_function(*args, **kwargs)
        if backend.flags.tracer is not None:
            # Called inside another trace: its body becomes part of that trace (TF inlines it).
            return self._body()(*args, **kwargs)
        if self._input_signature is not None:
            args = _sig.bind_signature(self._python_function, self._input_signature, args,
                                       kwargs)  # fmt: skip
            kwargs = {}
        if (composite_dispatch.types[0] and composite_dispatch.has_composite(args, kwargs)) or (
            _holds_sparse(args) or (kwargs and _holds_sparse(tuple(kwargs.values())))
        ):
            # RaggedTensor and SparseTensor arguments: their row partitions and indices are read
            # on the host, so the body runs eagerly, with the same results, and is not traced
            # (a trace per call would be kept, each with one call's values as constants).
            return self._python_function(*args, **kwargs)
        self._calls += 1
        key, leaves = _sig.call_key_and_leaves(args, kwargs)
        concrete = self._traces.get(key)
        if concrete is None:
            concrete = self._lookup_or_trace(key, args, kwargs)
        return concrete._run(leaves)

    def _lookup_or_trace(self, key: tuple, args: tuple, kwargs: dict) -> ConcreteFunction:
        concrete = self._traces.get(key)
        if concrete is not None:
            return concrete
        for trace_key, cf in self._traces.items():
            if _sig.covers(trace_key, key):
                self._traces[key] = cf
                return cf
        trace_key = key
        if self._input_signature is not None:
            trace_key = _signature_key(self._input_signature, key)
        elif self._reduce_retracing and self._traces:
            trace_key = _sig.relaxed(list(self._traces), key)
        concrete = self._trace(trace_key, args, kwargs)
        self._traces[trace_key] = concrete
        self._traces[key] = concrete
        return concrete

    def _body(self) -> Callable[..., Any]:
        return _autograph[0](self._python_function) if self._autograph else self._python_function

    def _trace(self, key: tuple, args: tuple, kwargs: dict) -> ConcreteFunction:
        self._note_tracing()
        allow = not self._variables_created
        try:
            concrete, created = self._trace_once(key, args, kwargs, allow)
            if created:
                self._variables_created = True
                # As TF: the trace that created variables is traced again, and must create none.
                concrete, _ = self._trace_once(key, args, kwargs, False)
        except Exception as err:
            # Marked, unchanged: callers that can run the body eagerly instead (Keras' compiled
            # steps) tell a failed trace, where no step of the program ran, from a failed run.
            err._lf_during_trace = True  # type: ignore[attr-defined]
            raise
        return concrete

    def _trace_once(self, key: tuple, args: tuple, kwargs: dict,
                    allow_variables: bool) -> tuple[ConcreteFunction, bool]:  # fmt: skip
        graph = Graph(self._name)
        tracer = Tracer(graph, allow_variables)
        device = tracer.device
        leaves = nest.flatten((args, kwargs), expand_composites=True)
        names = _input_names(self._python_function, args, kwargs)
        placeholders = []
        sym_leaves = []
        spec_leaves = []
        for i, (value, lk) in enumerate(zip(leaves, key[1])):
            if lk[0] == "T":
                spec = _graph.ArraySpec(lk[1], np.dtype(lk[2]))
                t = graph.new_tensor(spec, device, names[i])
                graph.inputs.append(t)
                placeholders.append(t)
                sym_leaves.append(t)
                spec_leaves.append(TensorSpec(lk[1], dtypes.from_numpy(np.dtype(lk[2])),
                                              names[i]))  # fmt: skip
            else:
                sym_leaves.append(value)
                spec_leaves.append(value)
        sym_args, sym_kwargs = nest.pack_sequence_as((args, kwargs), sym_leaves, True)
        creator = _VariableCreator(tracer)
        with _tape.stop_recording_all(), variable_creator_scope(creator), _graph.tracing(tracer):
            self._tracing_count += 1
            outputs = self._body()(*sym_args, **sym_kwargs)
            out_structure, refs, structured = _output_refs(tracer, outputs)
        plan = Plan(graph, refs, device)
        signature = nest.pack_sequence_as((args, kwargs), spec_leaves, True)
        keep = [v for v in leaves if not _sig.is_tensor_value(v)]
        concrete = ConcreteFunction(self, key, graph, plan, signature, structured, out_structure,
                                    keep)  # fmt: skip
        _graph_export.note(concrete)  # tf.summary.trace_on's graph collection
        return concrete, creator.created

    def _note_tracing(self) -> None:
        """TF's warning when most recent calls traced (see the module docstring)."""
        calls = self._traced_calls
        calls.append(self._calls)
        while calls and self._calls - calls[0] >= _RETRACE_WINDOW:
            calls.pop(0)
        if len(calls) >= _RETRACE_THRESHOLD and not self._warned:
            self._warned = True
            window = self._calls - calls[0] + 1
            _log.warning(
                "%d out of the last %d calls to %r triggered tf.function retracing. Tracing is "
                "expensive and the excessive number of tracings could be due to (1) creating "
                "@tf.function repeatedly in a loop, (2) passing tensors with different shapes, "
                "(3) passing Python objects instead of tensors. For (1), please define your "
                "@tf.function outside of the loop. For (2), @tf.function has "
                "reduce_retracing=True option that can avoid unnecessary retracing. For (3), "
                "please refer to https://www.tensorflow.org/guide/function#controlling_retracing"
                " and https://www.tensorflow.org/api_docs/python/tf/function for  more details.",
                len(calls), window, self._python_function,
            )  # fmt: skip


class _VariableCreator:
    """The variable creator of a trace: variables are created eagerly (lifted out of the
    trace, as TF's init_scope does), and only when the trace allows it."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.created = False

    def __call__(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        if not self.tracer.allow_variables:
            raise ValueError(_VARIABLE_ERROR)
        initial = kwargs.get("initial_value")
        if callable(initial) and not isinstance(initial, TensorLike):
            with _graph.suspended():
                initial = initial()
        if isinstance(initial, GraphTensor):
            initial = _evaluate(self.tracer, initial)
        kwargs["initial_value"] = initial
        with _graph.suspended():
            var = next_creator(**kwargs)
        self.created = True
        return var


def _evaluate(tracer: Tracer, tensor: GraphTensor) -> Tensor:
    """The value of a traced tensor that depends on no function input (an initial value)."""
    graph = tracer.graph
    inputs = {t._slot for t in graph.inputs}
    plan = Plan(_steps_only(graph), [tensor._slot], tracer.device)
    for step in plan.steps:
        if any(type(r) is int and r in inputs for r in step.refs):
            raise ValueError(
                "A tf.Variable created inside a tf.function cannot have an initial value that "
                "depends on the function's inputs. Create the variable outside, or initialise "
                "it with a constant or an initializer."
            )
    with _graph.suspended():
        (array,) = plan.run([])
    return Tensor(array, tracer.device)


def _steps_only(graph: Graph) -> Graph:
    """A view of `graph` whose steps are all pure (only what the value needs is kept)."""
    view = Graph(graph.name)
    view.n_slots = graph.n_slots
    view.steps = [s for s in graph.steps if not s.stateful]
    return view


def _output_refs(tracer: Tracer, outputs: Any) -> tuple[Any, list[Any], Any]:
    """The output structure (leaves the plan computes marked), their refs, and the structured
    outputs (graph tensors) of a trace. Outputs are converted to tensors, as TF does."""
    refs: list[Any] = []

    def leaf(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, GraphTensor):
            refs.append(value._slot)
            return _SLOT
        if isinstance(value, Variable):
            refs.append(tracer.read_variable(value)._slot)
            return _SLOT
        if isinstance(value, TensorLike):
            refs.append(Const(value._data))
            return _SLOT
        try:
            array = convert.to_array(value, None, tracer.device)
        except (TypeError, ValueError):
            return value  # an object that is no tensor comes back as it is
        refs.append(Const(array))
        return _SLOT

    structure = nest.map_structure(leaf, outputs, expand_composites=True)
    it = iter(refs)
    structured = nest.map_structure(
        lambda s: _structured(tracer, next(it)) if s is _SLOT else s,
        structure,
        expand_composites=True,
    )
    return structure, refs, structured


def _structured(tracer: Tracer, ref: Any) -> Any:
    if type(ref) is int:
        return GraphTensor(tracer.graph.specs[ref], ref, tracer.device, f"Identity_{ref}:0")
    return Tensor(ref.array, tracer.device)


def _input_names(fn: Callable[..., Any], args: tuple, kwargs: dict) -> list[str]:
    """A name per argument leaf (the parameter's name, TF's placeholder names)."""
    params = _sig.param_names(fn)
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"args_{i}"
        names += [base] * len(nest.flatten(a, expand_composites=True))
    for k, v in kwargs.items():
        names += [k] * len(nest.flatten(v, expand_composites=True))
    return names


def _signature_key(input_signature: list[Any], key: tuple) -> tuple:
    specs = nest.flatten(input_signature, expand_composites=True)
    leaves = list(key[1])
    out = []
    for lk, s in zip(leaves, specs):
        dims = None if s.shape.rank is None else tuple(s.shape.as_list())
        out.append(("T", dims if dims is not None else lk[1], s.dtype.np.str))
    return (key[0], tuple(out) + tuple(leaves[len(specs) :]))


def function(func: Callable[..., Any] | None = None, input_signature: Any = None,
             autograph: bool = True, jit_compile: bool | None = None,
             reduce_retracing: bool = False, experimental_relax_shapes: Any = None,
             experimental_implements: Any = None, experimental_autograph_options: Any = None,
             experimental_attributes: Any = None, experimental_follow_type_hints: Any = None,
             name: str | None = None) -> Any:  # fmt: skip
    """`tf.function`: compile a Python function into a traced program (module docstring).

    `jit_compile=True` is accepted and uses the same compiled plan.
    """
    relax = bool(reduce_retracing or experimental_relax_shapes)

    def decorate(fn: Callable[..., Any]) -> Function:
        return Function(fn, input_signature, autograph, jit_compile, relax, name)

    return decorate if func is None else decorate(func)


def run_functions_eagerly(run_eagerly: bool) -> None:
    """`tf.config.run_functions_eagerly`: run every `tf.function`'s body eagerly (debugging)."""
    _run_eagerly[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether `tf.function`s run eagerly (`tf.config.run_functions_eagerly`)."""
    return _run_eagerly[0]


def _holds_sparse(values: tuple) -> bool:
    """Whether an argument, or an item of a tuple/list argument, is a SparseTensor."""
    for v in values:
        if type(v) is SparseTensor or (
            type(v) in (tuple, list) and any(type(x) is SparseTensor for x in v)
        ):
            return True
    return False
