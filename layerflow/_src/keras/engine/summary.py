"""`model.summary()`: Keras 2's table of layers, output shapes and parameter counts.

Before the model is built the table says which shapes and counts are not known yet instead of
refusing. A layer that appears under several names or positions (a shared layer) is marked and
its parameters counted once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.framework.module import flatten_state
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.utils import nest


def _count(weights: Any) -> int:
    return int(sum(int(np.prod(w.shape)) for w in weights))


def _shape_text(layer: Any) -> str:
    record = layer._output_shape_record
    if record is None:
        return "(not built yet)" if not layer.built else "multiple"
    flat = [record] if isinstance(record, TensorShape) else nest.flatten(record)
    texts = [str(tuple(s)) if s is not None else "?" for s in flat]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _uses(model: Any) -> dict[int, int]:
    """How many times each direct sublayer is used (Sequential stack, or graph nodes)."""
    uses: dict[int, int] = {}
    stack = model.__dict__.get("_stack")
    if stack is not None:
        for layer in stack:
            uses[id(layer)] = uses.get(id(layer), 0) + 1
    elif model.__dict__.get("_is_graph_network"):
        for node in model._graph_nodes:
            uses[id(node.layer)] = uses.get(id(node.layer), 0) + 1
    else:
        for _, value in model._tracked_attributes():
            for layer in flatten_state(value, Layer):
                uses[id(layer)] = uses.get(id(layer), 0) + 1
    return uses


def _row(fields: list[str], positions: list[int]) -> str:
    line = ""
    for i, field in enumerate(fields):
        if i > 0:
            line = line[:-1] + " "
        line += str(field)
        line = line[: positions[i]]
        line += " " * (positions[i] - len(line))
    return line


def print_summary(
    model: Any,
    line_length: int | None = None,
    positions: Any = None,
    print_fn: Callable[[str], Any] | None = None,
    expand_nested: bool = False,
    show_trainable: bool = False,
) -> None:
    """Print `model`'s table through `print_fn` (default `print`), Keras 2 style."""
    print_fn = print_fn or print
    graph = bool(model.__dict__.get("_is_graph_network"))
    if graph:
        line_length = line_length or 98
        positions = positions or [0.33, 0.55, 0.67, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    else:
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    if show_trainable:
        positions = positions + [positions[-1] + 11]
        header = header + ["Trainable"]
        line_length = positions[-1]

    uses = _uses(model)
    layers = model.layers
    all_built = model._all_built()
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_fn(_row(header, positions))
    print_fn("=" * line_length)

    def rows(layer: Any, indent: str) -> list[list[str]]:
        name = f"{indent}{layer.name} ({type(layer).__name__})"
        if uses.get(id(layer), 1) > 1:
            name += f" [shared x{uses[id(layer)]}]"
        if layer._all_built():
            params = str(_count(layer.weights))
        else:
            params = "unknown"
        fields = [name, _shape_text(layer), params]
        if graph:
            fields.append(_connections(layer, model))
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        out = [fields]
        if expand_nested and hasattr(layer, "layers"):
            for sub in layer.layers:
                out.extend(rows(sub, indent + "  "))
        return out

    table = [r for layer in layers for r in rows(layer, "")]
    for i, fields in enumerate(table):
        print_fn(_row(fields, positions))
        print_fn(("=" if i == len(table) - 1 else "_") * line_length)
    if not table:
        print_fn("=" * line_length)
    if all_built:
        trainable = _count(model.trainable_weights)
        non_trainable = _count(model.non_trainable_weights)
        print_fn(f"Total params: {trainable + non_trainable:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {non_trainable:,}")
    else:
        print_fn("Total params: unknown (the model is not built yet)")
        print_fn("Trainable params: unknown")
        print_fn("Non-trainable params: unknown")
        print_fn(
            "Weights are created on the first call: call the model on data, or "
            "model.build(input_shape), to know the output shapes and parameter counts."
        )
    print_fn("_" * line_length)


def _connections(layer: Any, model: Any) -> str:
    names = []
    for node in model._graph_nodes:
        if node.layer is not layer:
            continue
        for t in node.input_tensors:
            if t._keras_history is not None:
                src, node_index, index = t._keras_history
                names.append(f"{src.name}[{node_index}][{index}]")
    return ", ".join(names)
