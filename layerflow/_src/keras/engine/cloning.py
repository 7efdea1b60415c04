"""`tf.keras.models.clone_model`: the same architecture with fresh weights."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_layer import InputLayer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.engine.sequential import Sequential
from layerflow._src.utils import nest


def _clone_layer(layer: Layer) -> Layer:
    return type(layer).from_config(layer.get_config())


def clone_model(
    model: Model, input_tensors: Any = None, clone_function: Callable[[Layer], Layer] | None = None
) -> Model:
    """A new model with the same layers' configurations and newly initialized weights.

    >>> import layerflow as tf
    >>> net = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    >>> copy = tf.keras.models.clone_model(net)
    >>> copy.layers[0] is net.layers[0]
    False
    """
    clone = clone_function or _clone_layer
    if isinstance(model, Sequential):
        made: dict[int, Layer] = {}
        layers = []
        for layer in model._stack:
            if id(layer) not in made:  # a shared layer stays shared in the copy
                made[id(layer)] = clone(layer)
            layers.append(made[id(layer)])
        new = Sequential(name=None)
        if model._input_layer is not None:
            new.add(
                InputLayer(
                    batch_input_shape=model._input_layer._batch_input_shape,
                    dtype=model._input_layer.dtype,
                )
            )
        for layer in layers:
            new.add(layer)
        if model.built and model._input_layer is None and model._build_input_shape is not None:
            new.build(model._build_input_shape)
        return new
    if not model._is_graph_network:
        # tf_keras: a custom model class is rebuilt from its config (it must define
        # get_config, and from_config if its constructor needs more than the config).
        if clone_function is not None or input_tensors is not None:
            raise ValueError(
                "Arguments clone_function and input_tensors are only supported for Sequential "
                f"models or Functional models. Received model of type "
                f"'{type(model).__name__}', with clone_function={clone_function} and "
                f"input_tensors={input_tensors}"
            )
        return type(model).from_config(model.get_config())
    values: dict[int, Any] = {}
    made = {}
    old_inputs = nest.flatten(model.inputs)
    new_inputs = nest.flatten(input_tensors) if input_tensors is not None else None
    for i, kt in enumerate(old_inputs):
        if new_inputs is not None:
            values[id(kt)] = new_inputs[i]
        else:
            src = kt._keras_history[0]
            values[id(kt)] = InputLayer(
                batch_input_shape=src._batch_input_shape, dtype=src.dtype
            ).output

    def real(x: Any) -> Any:
        return values[id(x)] if isinstance(x, KerasTensor) else x

    for node in model._graph_nodes:
        layer = node.layer
        if id(layer) not in made:
            made[id(layer)] = clone(layer)
        args = tuple(nest.map_structure(real, a) for a in node.args)
        kwargs = {k: nest.map_structure(real, v) for k, v in node.kwargs.items()}
        out = made[id(layer)](nest.map_structure(real, node.inputs), *args, **kwargs)
        for kt, v in zip(nest.flatten(node.outputs), nest.flatten(out)):
            values[id(kt)] = v
    inputs = nest.pack_sequence_as(model.inputs, [values[id(t)] for t in old_inputs])
    return Model(inputs, nest.map_structure(real, model.outputs))
