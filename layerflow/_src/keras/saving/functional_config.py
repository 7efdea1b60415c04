"""Keras 2's functional model config: `Model.get_config()` / `Model.from_config()` and `.h5`.

The layout is tf_keras's (`functional.get_network_config`): every layer once, in the model's
order, with its `inbound_nodes`; a node is a list with one entry per tensor of the call's first
argument, `[layer_name, node_index, tensor_index, kwargs]`, the call's other arguments in
`kwargs` (tensors there as `[layer_name, node_index, tensor_index]`), constants in the first
argument as `["_CONSTANT_VALUE", -1, value, kwargs]`. Node indices count only the nodes that
belong to the model; a nested functional model's first call is node 1 (its node 0 is its own
construction, in tf_keras). `TFOpLambda` layers name their op as tf_keras does (`"nn.relu"`,
`"__operators__.add"`).

Reading resolves layer classes only through `serialization.resolve` (built-ins, registered and
custom objects) and `TFOpLambda` functions only among layerflow's public math/nn/array ops
(`engine/functional.tf_op_by_name`); nothing in a config imports or evaluates code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from layerflow._src.keras import serialization
from layerflow._src.keras.engine.functional import TFOpLambda, graph_layers
from layerflow._src.keras.engine.input_layer import InputLayer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.engine.sequential import Sequential
from layerflow._src.utils import nest

CONSTANT = "_CONSTANT_VALUE"


def _first_node(layer: Any) -> int:
    """tf_keras counts a construction node first for functional models and for Sequentials
    that start from an input shape (`_should_skip_first_node`); their first call is node 1."""
    if isinstance(layer, Sequential):
        return 1 if layer._default_input_shape() is not None else 0
    return 1 if isinstance(layer, Model) and layer._is_graph_network else 0


def _node_map(model: Any) -> dict[int, int]:
    """id(node) -> the node's index among the model's nodes of its layer (tf_keras)."""
    index: dict[int, int] = {}
    counts: dict[int, int] = {}
    ours = {id(n) for n in model._graph_nodes}
    for layer in graph_layers(model):
        counts[id(layer)] = _first_node(layer)
        for node in layer._inbound_nodes:
            if id(node) in ours or node.inputs is None:
                index[id(node)] = counts[id(layer)]
                counts[id(layer)] += 1
    return index


def _ref(kt: KerasTensor, nodes: dict[int, int]) -> list[Any]:
    layer, node_index, tensor_index = kt._keras_history
    node = layer._inbound_nodes[node_index]
    return [layer.name, nodes.get(id(node), 0), tensor_index]


def _plain(value: Any, nodes: dict[int, int], where: str) -> Any:
    if isinstance(value, KerasTensor):
        return _ref(value, nodes)
    if isinstance(value, list | tuple):
        return [_plain(v, nodes, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, nodes, where) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "numpy"):
        return value.numpy().tolist()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise serialization.NotSerializableError(
        f"Layer '{where}' was passed a non-JSON-serializable argument of type "
        f"{type(value).__name__}; it cannot be saved in the model's config."
    )


def _split_call(node: Any) -> tuple[Any, dict[str, Any]]:
    """(first argument, other arguments by name) of a node's call."""
    layer = node.layer
    if isinstance(layer, TFOpLambda):
        # Its node holds all the op's positional arguments; tf_keras names all but the first.
        values = list(node.inputs) + list(node.args)
        names = op_arg_names(layer.fn, len(values) - 1, layer.name)
        kwargs = dict(zip(names, values[1:]))
        kwargs.update(node.kwargs)
        return values[0], kwargs
    kwargs = dict(node.kwargs)
    if node.args:
        params = [
            n for n, p in inspect.signature(layer.call).parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ][1:]  # fmt: skip
        kwargs.update(dict(zip(params, node.args)))
    return node.inputs, kwargs


def _node_data(node: Any, nodes: dict[int, int]) -> list[Any]:
    first, kwargs = _split_call(node)
    kwargs = _plain(kwargs, nodes, node.layer.name)

    def entry(t: Any) -> list[Any]:
        if isinstance(t, KerasTensor):
            return [*_ref(t, nodes), kwargs]
        return [CONSTANT, -1, _plain(t, nodes, node.layer.name), kwargs]

    if isinstance(first, list | tuple):
        return [entry(t) for t in first]
    if isinstance(node.layer, TFOpLambda):
        return entry(first)  # tf_keras keeps a TFOpLambda's first argument's structure
    return [entry(first)]


def layer_config(layer: Any) -> dict[str, Any]:
    """`{"class_name", "config"}` of a layer inside a model config (models nest)."""
    if isinstance(layer, Model) and layer._is_graph_network:
        return {"class_name": "Functional", "config": get_config(layer)}
    if isinstance(layer, Sequential):
        return {"class_name": "Sequential", "config": layer.get_config()}
    return serialization.serialize_keras_object(layer)


def get_config(model: Any) -> dict[str, Any]:
    """tf_keras's config of the functional `model` (see the module docstring)."""
    nodes = _node_map(model)
    ours = {id(n) for n in model._graph_nodes}
    layers = []
    for layer in graph_layers(model):
        entry = layer_config(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            _node_data(n, nodes) for n in layer._inbound_nodes if id(n) in ours
        ]
        layers.append(entry)

    def refs(structure: Any) -> Any:
        out = nest.map_structure(lambda t: _ref(t, nodes), structure)
        return [out] if isinstance(structure, KerasTensor) else out

    return {
        "name": model.name,
        "trainable": model.trainable,
        "layers": layers,
        "input_layers": refs(model._graph_inputs),
        "output_layers": refs(model._graph_outputs),
    }


def op_arg_names(fn: Callable[..., Any], count: int, where: str, every: bool = False) -> list[str]:
    """The names of `fn`'s positional parameters after the first (`count` of them, or all
    with `every`)."""
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "xp":  # an op's forward: the array module comes first
        params = params[1:]
    names = [p.name for p in params[1:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if every:
        return names
    if len(names) < count:
        raise serialization.NotSerializableError(
            f"TFOpLambda '{where}': its op takes {count} positional arguments after the first, "
            "which cannot be named in a config. Wrap the computation in a custom layer."
        )
    return names[:count]


# --- reading ----------------------------------------------------------------------------------
def _is_ref(value: Any, tensors: dict) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and isinstance(value[1], int)
        and isinstance(value[2], int)
        and tuple(value) in tensors
    )


def _resolve(value: Any, tensors: dict) -> Any:
    if _is_ref(value, tensors):
        return tensors[tuple(value)]
    if isinstance(value, list):
        return [_resolve(v, tensors) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, tensors) for k, v in value.items()}
    return value


def _call_of(
    node: Any, tensors: dict, where: str, preserve: bool = False
) -> tuple[Any, dict[str, Any]]:
    """(first argument, kwargs) of one Keras 2 node; KeyError while an input is missing.

    `preserve` (a TFOpLambda's node): a list of entries stays a list even of one."""
    if not isinstance(node, list) or not node:
        raise TypeError(f"A node of layer '{where}' must be a non-empty list, got {node!r}.")
    single = isinstance(node[0], str)
    if single:
        node = [node]
    values = []
    kwargs: dict[str, Any] = {}
    for entry in node:
        if not isinstance(entry, list) or len(entry) < 3:
            raise TypeError(f"A node entry of layer '{where}' is malformed: {str(entry)[:200]}")
        if entry[0] == CONSTANT:
            values.append(entry[2])
        else:
            key = (entry[0], entry[1], entry[2])
            values.append(tensors[key])
        if len(entry) > 3 and entry[3]:
            if not isinstance(entry[3], dict):
                raise TypeError(f"The kwargs of a node of layer '{where}' must be a dict.")
            kwargs = entry[3]
    missing = _missing_refs(kwargs, tensors)
    if missing:
        raise KeyError(missing[0])
    first = values[0] if single or (len(values) == 1 and not preserve) else values
    return first, _resolve(kwargs, tensors)


def _missing_refs(value: Any, tensors: dict) -> list[Any]:
    """References in kwargs to layers of the model whose tensors do not exist yet."""
    out = []
    if isinstance(value, list):
        if (len(value) == 3 and isinstance(value[0], str) and isinstance(value[1], int)
                and isinstance(value[2], int) and value[0] in _names(tensors)
                and tuple(value) not in tensors):  # fmt: skip
            out.append(tuple(value))
        else:
            for v in value:
                out.extend(_missing_refs(v, tensors))
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(_missing_refs(v, tensors))
    return out


def _names(tensors: dict) -> set[str]:
    return tensors.setdefault("__names__", set())


def from_config(
    config: dict[str, Any], make_layer: Callable[[dict[str, Any]], Any], cls: type = Model
) -> Any:
    """A functional model from tf_keras's config; `make_layer(entry)` builds each layer."""
    if not isinstance(config, dict):
        raise TypeError(f"A functional model config must be a dict, got {type(config).__name__}.")
    specs = config.get("layers")
    if not isinstance(specs, list):
        raise TypeError("A functional model config needs a list of 'layers'.")
    made: dict[str, Any] = {}
    tensors: dict[Any, Any] = {"__names__": set()}
    calls: dict[str, int] = {}
    pending: list[tuple[str, Any]] = []
    for spec in specs:
        if not isinstance(spec, dict):
            raise TypeError(f"A layer entry must be a dict, got {str(spec)[:200]}.")
        layer = make_layer(spec)
        name = spec.get("name") or layer.name
        if not isinstance(name, str):
            raise TypeError(f"A layer name must be a string, got {name!r}.")
        made[name] = layer
        tensors["__names__"].add(name)
        calls[name] = _first_node(layer)
        if isinstance(layer, InputLayer):
            tensors[(name, 0, 0)] = layer.output
        nodes = spec.get("inbound_nodes", [])
        if not isinstance(nodes, list):
            raise TypeError(f"The inbound_nodes of layer '{name}' must be a list.")
        pending.extend((name, node) for node in nodes)
    while pending:
        left = []
        for name, node in pending:
            if any(n == name for n, _ in left):
                left.append((name, node))  # a layer's nodes are made in order
                continue
            try:
                first, kwargs = _call_of(node, tensors, name, isinstance(made[name], TFOpLambda))
            except KeyError:
                left.append((name, node))
                continue
            layer = made[name]
            if isinstance(layer, TFOpLambda):
                # Back to the op's positional arguments (see _split_call).
                values = [first]
                for arg in op_arg_names(layer.fn, 0, name, every=True):
                    if arg not in kwargs:
                        break
                    values.append(kwargs.pop(arg))
                out = layer(values, **kwargs)
            else:
                out = layer(first, **kwargs)
            index = calls[name]
            calls[name] = index + 1
            for i, t in enumerate(nest.flatten(out)):
                tensors[(name, index, i)] = t
        if len(left) == len(pending):
            raise ValueError(
                f"The functional model config of '{config.get('name')}' cannot be rebuilt: the "
                f"inputs of layers {sorted({n for n, _ in left})} are never produced."
            )
        pending = left

    def refs(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: refs(v) for k, v in value.items()}
        if isinstance(value, list) and value and isinstance(value[0], str):
            key = tuple(value[:3])
            if key not in tensors:
                raise ValueError(f"The model config names the tensor {list(key)}, never made.")
            return tensors[key]
        if isinstance(value, list):
            return [refs(v) for v in value]
        raise TypeError(f"A model input/output reference is malformed: {str(value)[:200]}")

    inputs = refs(config.get("input_layers", []))
    outputs = refs(config.get("output_layers", []))
    if isinstance(inputs, list) and len(inputs) == 1:
        inputs = inputs[0]
    if isinstance(outputs, list) and len(outputs) == 1:
        outputs = outputs[0]
    return cls(inputs, outputs, name=config.get("name"))
