"""`tf.keras.Sequential`: a stack of layers, each called on the previous one's output.

Built on the first call from the real input (deferred), or at once when the first layer has
`input_shape=` or the stack starts with `tf.keras.Input`, or by `build(input_shape)`. A layer
added twice is called twice (its weights are shared) but appears once in `layers`.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.function.graph import GraphTensor
from layerflow._src.keras.engine import functional
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_layer import InputLayer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.layer_utils import to_shapes, who
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.serialization import deserialize_keras_object, serialize_keras_object
from layerflow._src.ops import math_ops


class Sequential(Model):
    """A linear stack of layers.

    >>> import layerflow as tf
    >>> net = tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])
    >>> net(tf.ones((2, 3))).shape, len(net.layers)
    (TensorShape([2, 1]), 2)
    """

    def __init__(self, layers: Any = None, name: str | None = None) -> None:
        super().__init__(name=name)
        # Each layer passes its mask on as the stack runs (tf_keras's Sequential).
        self.__dict__["_supports_masking"] = True
        self.__dict__["_compute_output_and_mask_jointly"] = True
        self.__dict__["_stack"] = []
        self.__dict__["_input_layer"] = None
        self.__dict__["_graph_output"] = None
        if layers is not None:
            if isinstance(layers, Layer | KerasTensor):
                layers = [layers]
            for layer in layers:
                self.add(layer)

    # --- structure --------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        """The layers in order, each once, without the InputLayer."""
        out: list[Layer] = []
        seen: set[int] = set()
        for layer in self._stack:
            if id(layer) not in seen:
                seen.add(id(layer))
                out.append(layer)
        return out

    def _tracked_attributes(self) -> Any:
        yield "layers", self.layers
        yield from Layer._tracked_attributes(self)

    def add(self, layer: Any) -> None:
        """Append a layer (or start the stack with `tf.keras.Input(...)`)."""
        if isinstance(layer, KerasTensor):
            origin = layer._keras_history[0] if layer._keras_history else None
            if not isinstance(origin, InputLayer):
                raise TypeError(
                    f"Sequential '{self.name}'.add() accepts a tf.keras.Input tensor only as the "
                    f"first element; got {layer!r}."
                )
            layer = origin
        if not isinstance(layer, Layer):
            raise TypeError(
                f"Sequential '{self.name}'.add() expects a Layer instance, got "
                f"{type(layer).__name__}: {layer!r}."
            )
        if isinstance(layer, InputLayer):
            if self._stack or self._input_layer is not None:
                raise ValueError(
                    f"Sequential '{self.name}': an InputLayer (tf.keras.Input) can only come first."
                )
            self.__dict__["_input_layer"] = layer
            self.build(layer._batch_input_shape)
            return
        self._stack.append(layer)
        if self._graph_output is not None:
            self.__dict__["_graph_output"] = layer(self._graph_output)
            self.__dict__["_output_shape_record"] = self._graph_output.shape
        elif len(self._stack) == 1 and layer._batch_input_shape is not None:
            self.build(layer._batch_input_shape)

    def pop(self) -> None:
        """Remove the last layer."""
        if not self._stack:
            raise TypeError(f"Sequential '{self.name}'.pop(): there are no layers in the model.")
        self._stack.pop()
        if self._graph_output is not None and self._build_input_shape is not None:
            self._symbolic_build(self._build_input_shape)

    # --- the layer contract -----------------------------------------------------------------
    def build(self, input_shape: Any = None) -> None:
        """Build every layer for inputs of `input_shape` (batch dimension included)."""
        if self.__dict__.get("_building_from_call"):
            self.built = True
            return
        if input_shape is None:
            input_shape = self._default_input_shape()
        if input_shape is None:
            raise ValueError(
                f"{who(self)}.build() needs input_shape, e.g. build((None, 20)), because none of "
                "its layers declares one (input_shape= on the first layer or tf.keras.Input)."
            )
        self._symbolic_build(to_shapes(input_shape))
        self.built = True

    def _default_input_shape(self) -> Any:
        if self._input_layer is not None:
            return self._input_layer._batch_input_shape
        if self._stack and self._stack[0]._batch_input_shape is not None:
            return self._stack[0]._batch_input_shape
        return None

    def _symbolic_build(self, input_shape: Any) -> None:
        # The declared input's dtype: tf.keras.Input's, or that of a first layer given
        # `input_shape=` (tf_keras's Sequential.add: `Input(..., dtype=layer.dtype)`, so
        # `TextVectorization(input_shape=(1,), dtype=tf.string)` takes strings). A model built
        # with `build(shape)` only declares no dtype: its input is floatx and calls are not cast.
        declared = None
        if self._input_layer is not None:
            declared = self._input_layer.dtype
        elif self._stack and self._stack[0]._batch_input_shape is not None:
            declared = self._stack[0].dtype
        self.__dict__["_input_dtype"] = declared
        x = KerasTensor(input_shape, declared or self.dtype)
        self.__dict__["_graph_input"] = x
        self.__dict__["_build_input_shape"] = input_shape
        for layer in self._stack:
            x = layer(x)
        self.__dict__["_graph_output"] = x
        self.__dict__["_output_shape_record"] = x.shape

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        x = inputs
        dtype = self.__dict__.get("_input_dtype")
        if dtype is not None and isinstance(x, TensorLike | GraphTensor) and x.dtype.name != dtype:
            # A model with a declared input takes it in the input's dtype (uint8 images become
            # float32), as tf.keras's functional Sequential does.
            x = math_ops.cast(x, dtype)
        if mask is not None and isinstance(x, Tensor):
            x._keras_mask = mask
        for layer in self._stack:
            x = layer(x)
        return x

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The last layer's output mask for `inputs` (the stack run again)."""
        return getattr(self.call(inputs, mask=mask), "_keras_mask", None)

    def compute_output_shape(self, input_shape: Any) -> Any:
        x = KerasTensor(to_shapes(input_shape), self.dtype)
        for layer in self._stack:
            x = layer(x)
        return x.shape

    @property
    def inputs(self) -> Any:
        """`[model.input]` once the model is built symbolically (tf.keras.Input, a first
        layer's `input_shape=`, or `build(shape)`), else None, as in tf_keras."""
        x = self.__dict__.get("_graph_input")
        return None if x is None else [x]

    @property
    def outputs(self) -> Any:
        x = self.__dict__.get("_graph_output")
        return None if x is None or self.__dict__.get("_graph_input") is None else [x]

    @property
    def input_shape(self) -> Any:
        shape = self._build_input_shape or self._default_input_shape()
        if shape is None:
            return Model.input_shape.fget(self)
        return tuple(shape)

    # --- config -------------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        layers = []
        if self._input_layer is not None:
            layers.append(serialize_keras_object(self._input_layer))
        layers.extend(serialize_keras_object(layer) for layer in self._stack)
        config: dict[str, Any] = {"name": self.name, "layers": layers}
        if self._input_layer is None and self._build_input_shape is not None:
            config["build_input_shape"] = tuple(self._build_input_shape)  # tf_keras's key
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Sequential:
        # The built-in layer classes (never every capitalized name of the package: `Any` is one).
        from layerflow._src.keras.layers import layer_serialization

        objects = dict(layer_serialization._module_objects())
        objects.update({"InputLayer": InputLayer, "Sequential": Sequential, "Model": Model})
        if not isinstance(config, dict) or not isinstance(config.get("layers", []), list):
            raise TypeError(
                f"Sequential.from_config takes a dict with a list of 'layers', got "
                f"{str(config)[:200]}."
            )
        model = cls(name=config.get("name"))
        for spec in config.get("layers", []):
            model.add(
                deserialize_keras_object(
                    spec, objects, custom_objects, printable_module_name="layer"
                )
            )
        shape = config.get("build_input_shape")
        if not model.built and isinstance(shape, list | tuple) and shape:
            model.build(tuple(shape))
        return model


__all__ = ["Sequential", "functional"]
