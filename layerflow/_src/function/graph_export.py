"""Traced `tf.function` programs as TensorBoard `GraphDef`s, and the graph collection behind
`tf.summary.trace_on` / `trace_export`.

A trace (`graph.Graph`) is a list of steps on slots; `graph_def` writes it as a GraphDef
(TensorBoard's protobuf, `tensorboard.compat.proto`): a `Placeholder` node per input, a
`VarHandleOp` per captured Variable, a `Const` per captured value, and one node per step named
after its output tensor (`multiply`, `multiply_1`, ...) with the op's CamelCase name as its type
(`reduce_sum` -> `ReduceSum`), its inputs, its device, and `T`/`dtype` and `_output_shapes`
attributes. A `cond`/`while` step becomes an `If`/`While` node, its branch or body steps nested
under its name (TensorBoard folds them into one box). `run_metadata` wraps the graphs of the
collected traces into a `RunMetadata` proto with, per trace, `pre_optimization_graph` (the
steps as traced) and `post_optimization_graph` (the program after layerflow's rewrites, without
output nodes), what TensorBoard's graph plugin reads from a `graph_run_metadata_graph` summary.

Collection is process-wide, as TF's: while `collecting` is on, each new trace is recorded
(`note`); like TF, a trace made before `trace_on` is not (TF instantiates a function once).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from layerflow._src.framework.variables import Variable
from layerflow._src.function.graph import Const, Graph, Step

_DT = {
    "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int32": "DT_INT32", "uint8": "DT_UINT8",
    "int16": "DT_INT16", "int8": "DT_INT8", "object": "DT_STRING", "complex64": "DT_COMPLEX64",
    "int64": "DT_INT64", "bool": "DT_BOOL", "uint16": "DT_UINT16", "complex128": "DT_COMPLEX128",
    "float16": "DT_HALF", "uint32": "DT_UINT32", "uint64": "DT_UINT64", "bfloat16": "DT_BFLOAT16",
}  # fmt: skip
_CONTROL = {"cond": "If", "while": "While"}


class _Collector:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = False
        self.traces: list[Any] = []


collector = _Collector()


def start() -> bool:
    """Start collecting traces; False when collection was already on."""
    with collector.lock:
        if collector.active:
            return False
        collector.active = True
        collector.traces = []
        return True


def stop() -> list[Any]:
    """Stop collecting; the traces collected since `start`."""
    with collector.lock:
        traces, collector.traces = collector.traces, []
        collector.active = False
        return traces


def is_collecting() -> bool:
    return collector.active


def note(concrete: Any) -> None:
    """Record a new trace (a ConcreteFunction) while collection is on."""
    if collector.active:
        with collector.lock:
            if collector.active:
                collector.traces.append(concrete)


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in str(name).split("_") if part) or "Op"


def _dtype_enum(np_dtype: Any) -> int:
    from tensorboard.compat.proto import types_pb2

    name = np.dtype(np_dtype).name if np_dtype is not None else ""
    return types_pb2.DataType.Value(_DT.get(name, "DT_INVALID"))


def _shape_proto(shape: Any) -> Any:
    from tensorboard.compat.proto import tensor_shape_pb2

    if shape is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in shape]
    return tensor_shape_pb2.TensorShapeProto(dim=dims)


class _Writer:
    """Builds one GraphDef: node names by slot, unique names for captured values."""

    def __init__(self, graph: Graph, device: str) -> None:
        from tensorboard.compat.proto import graph_pb2

        self.graph = graph
        self.device = device
        self.gd = graph_pb2.GraphDef()
        self.by_slot: dict[int, str] = {}
        self.by_var: dict[int, str] = {}
        self.used: set[str] = set()

    def unique(self, base: str) -> str:
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name

    def add(self, name: str, op: str, inputs: list[str], slots: list[int]) -> Any:
        node = self.gd.node.add(name=name, op=op, device=self.device)
        node.input.extend(inputs)
        specs = [self.graph.specs.get(s) for s in slots]
        if specs and specs[0] is not None:
            node.attr["T"].type = _dtype_enum(specs[0].dtype)
        shapes = node.attr["_output_shapes"].list.shape
        for spec in specs:
            shapes.add().CopyFrom(_shape_proto(None if spec is None else spec.shape))
        return node

    def slot_name(self, slot: int) -> str:
        t = self.graph.tensors.get(slot)
        return self.unique(t._name.split(":")[0] if t is not None else f"t{slot}")

    def ref(self, ref: Any, scope: str) -> str:
        if type(ref) is int:
            return self.by_slot.get(ref, f"t{ref}")
        if isinstance(ref, Variable):
            name = self.by_var.get(id(ref))
            if name is None:
                name = self.unique(ref.name.split(":")[0] or "Variable")
                self.by_var[id(ref)] = name
                node = self.gd.node.add(name=name, op="VarHandleOp", device=self.device)
                node.attr["dtype"].type = _dtype_enum(ref._data.dtype)
                node.attr["shape"].shape.CopyFrom(_shape_proto(ref._data.shape))
            return name
        if isinstance(ref, Const):
            name = self.unique(f"{scope}Const")
            node = self.gd.node.add(name=name, op="Const", device=self.device)
            array = getattr(ref, "array", None)
            dtype = getattr(array, "dtype", None)
            node.attr["dtype"].type = _dtype_enum(dtype)
            node.attr["_output_shapes"].list.shape.add().CopyFrom(
                _shape_proto(getattr(array, "shape", ()))
            )
            return name
        return self.unique(f"{scope}Const")

    def steps(self, steps: list[Step], scope: str) -> None:
        for step in steps:
            inputs = [self.ref(r, scope) for r in step.refs]
            if step.kind == "op":
                op = _camel(getattr(step.fn, "name", "op"))
            elif step.kind in _CONTROL:
                op = _CONTROL[step.kind]
            elif step.kind == "assign":
                op = _camel(f"{getattr(step.fn, '__name__', 'assign')}_variable_op")
            else:
                op = _camel(getattr(step.fn, "__name__", step.kind))
            base = self.slot_name(step.outs[0]) if step.outs else self.unique(f"{scope}{op}")
            name = base if base.startswith(scope) else self.unique(scope + base)
            self.used.add(name)
            self.add(name, op, inputs, list(step.outs))
            for i, slot in enumerate(step.outs):
                self.by_slot[slot] = name if i == 0 else f"{name}:{i}"
            for j, block in enumerate(step.blocks):
                self.steps(block, f"{name}/block_{j}/")


def graph_def(graph: Graph, steps: list[Step], outputs: list[Any], device: str) -> Any:
    """A TensorBoard GraphDef of `steps` of `graph`, with `Identity` nodes for the outputs."""
    w = _Writer(graph, device)
    for t in graph.inputs:
        name = w.unique(t._name.split(":")[0])
        node = w.add(name, "Placeholder", [], [t._slot])
        node.attr["dtype"].type = node.attr["T"].type
        del node.attr["T"]
        w.by_slot[t._slot] = name
    w.steps(steps, "")
    for i, ref in enumerate(outputs):
        src = w.ref(ref, "")
        node = w.gd.node.add(name=w.unique("Identity" if i == 0 else f"Identity_{i}"),
                             op="Identity", device=device)  # fmt: skip
        node.input.append(src)
    return w.gd


def run_metadata(traces: list[Any]) -> Any:
    """A `RunMetadata` proto holding the graphs of the collected traces (see the docstring)."""
    from tensorboard.compat.proto import config_pb2

    meta = config_pb2.RunMetadata()
    for concrete in traces:
        plan = concrete._plan
        device = plan.device.name
        fg = meta.function_graphs.add()
        fg.pre_optimization_graph.CopyFrom(
            graph_def(plan.graph, plan.steps, plan.output_refs, device)
        )
        # The rewritten program's outputs may be other slots (folded or aliased): its graph
        # shows the steps only.
        fg.post_optimization_graph.CopyFrom(graph_def(plan.graph, plan.program_steps, [], device))
    return meta
