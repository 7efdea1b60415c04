"""Layer wrappers: `Wrapper`, `Bidirectional` (an RNN both ways) and `TimeDistributed`."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.layers.rnn_cells import deserialize_layer
from layerflow._src.keras.serialization import serialize_keras_object
from layerflow._src.ops import array_ops
from layerflow._src.ops.ragged import ragged_convert
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.utils import nest

__all__ = ["Bidirectional", "TimeDistributed", "Wrapper"]

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Wrapper(Layer):
    """Base of layers that wrap another layer (`self.layer`)."""

    def __init__(self, layer: Any, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(
                f"{type(self).__name__} wraps a tf.keras.layers.Layer instance; received "
                f"layer={layer!r}."
            )
        super().__init__(**kwargs)
        self.layer = layer

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "layer": serialize_keras_object(self.layer)}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        config = dict(config)
        layer = deserialize_layer(config.pop("layer"), custom_objects)
        return cls(layer, **config)


class TimeDistributed(Wrapper):
    """Apply `layer` to every time step (axis 1) of the input, with shared weights.

    >>> import layerflow as tf
    >>> tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2))(tf.ones((4, 3, 5))).shape
    TensorShape([4, 3, 2])
    """

    def __init__(self, layer: Any, **kwargs: Any) -> None:
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def _check(self, shape: TensorShape) -> None:
        if shape.rank is None or shape.rank < 3:
            raise ValueError(
                f"TimeDistributed '{self.name}' needs inputs of rank >= 3 (batch, time, ...); "
                f"got shape {shape}."
            )

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        self._check(shape)
        if not self.layer.built:
            self.layer.build(TensorShape([shape[0]]).concatenate(shape[2:]))

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        shape = list(inputs.shape)
        self._check(TensorShape(shape))
        flat = array_ops.reshape(inputs, [-1] + shape[2:])
        kwargs = {"training": training} if training is not None else {}
        out = self.layer(flat, **kwargs)
        return nest.map_structure(
            lambda o: array_ops.reshape(o, shape[:2] + list(o.shape[1:])), out
        )

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = TensorShape(input_shape)
        self._check(shape)
        inner = self.layer.compute_output_shape(TensorShape([shape[0]]).concatenate(shape[2:]))
        return TensorShape([shape[0], shape[1]]).concatenate(TensorShape(inner)[1:])


class Bidirectional(Wrapper):
    """Run a recurrent layer forwards and a copy of it backwards; merge the two outputs.

    `merge_mode` is "concat" (the default), "sum", "mul", "ave", or None (a list of both).
    The backward outputs are put back in input order before merging.

    >>> import layerflow as tf
    >>> bi = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(4, return_sequences=True))
    >>> bi(tf.ones((2, 5, 3))).shape
    TensorShape([2, 5, 8])
    """

    def __init__(self, layer: Any, merge_mode: Any = "concat", weights: Any = None,
                 backward_layer: Any = None, **kwargs: Any) -> None:  # fmt: skip
        if not isinstance(layer, Layer):
            raise ValueError(
                "Please initialize `Bidirectional` layer with a `tf.keras.layers.Layer` "
                f"instance. Received: {layer!r}"
            )
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError(
                "`backward_layer` needs to be a `tf.keras.layers.Layer` instance. Received: "
                f"{backward_layer!r}"
            )
        if merge_mode not in _MERGE_MODES:
            raise ValueError(
                f"Invalid merge mode. Received: {merge_mode!r}. Merge mode should be one of "
                '{"sum", "mul", "ave", "concat", None}'
            )
        Layer.__init__(self, **kwargs)
        self.__dict__["_layer_config"] = serialize_keras_object(layer)
        self.__dict__["_backward_config"] = (
            None if backward_layer is None else serialize_keras_object(backward_layer)
        )
        self.forward_layer = self._recreate(layer, "forward_", False)
        if backward_layer is None:
            self.backward_layer = self._recreate(layer, "backward_", True)
        else:
            self.backward_layer = backward_layer
        fw, bw = self.forward_layer, self.backward_layer
        if fw.go_backwards == bw.go_backwards:
            raise ValueError(
                "Forward layer and backward layer should have different `go_backwards` value. "
                f"forward_layer.go_backwards = {fw.go_backwards}, backward_layer.go_backwards "
                f"= {bw.go_backwards}"
            )
        for attr in ("stateful", "return_sequences", "return_state"):
            if getattr(fw, attr) != getattr(bw, attr):
                raise ValueError(
                    f"Forward layer and backward layer are expected to have the same value for "
                    f"attribute {attr!r}, got {getattr(fw, attr)} for forward layer and "
                    f"{getattr(bw, attr)} for backward layer"
                )
        for sub in (fw, bw):
            if hasattr(sub, "zero_output_for_mask"):
                sub.zero_output_for_mask = sub.return_sequences  # as Keras 2 forces it
        self.merge_mode = merge_mode
        self.return_sequences = fw.return_sequences
        self.return_state = fw.return_state
        self.supports_masking = True
        if weights:
            half = len(weights) // 2
            fw.__dict__["_initial_weights"] = weights[:half]
            bw.__dict__["_initial_weights"] = weights[half:]

    @staticmethod
    def _recreate(layer: Any, prefix: str, flip: bool) -> Any:
        config = layer.get_config()
        if flip:
            config["go_backwards"] = not config["go_backwards"]
        name = config.get("name", layer.name)
        config["name"] = prefix + (name[len(prefix) :] if name.startswith(prefix) else name)
        objects = {}
        cell = getattr(layer, "cell", None)
        for c in [cell, *getattr(cell, "cells", [])]:
            if c is not None:
                objects[type(c).__name__] = type(c)
        params = type(layer).from_config.__code__.co_varnames
        if "custom_objects" in params:
            return type(layer).from_config(config, custom_objects=objects)
        return type(layer).from_config(config)

    @property
    def stateful(self) -> bool:
        return self.forward_layer.stateful

    def reset_states(self, states: Any = None) -> None:
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        states = nest.flatten(states)
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def __call__(self, inputs: Any, initial_state: Any = None, constants: Any = None,
                 **kwargs: Any) -> Any:  # fmt: skip
        if initial_state is not None:
            kwargs["initial_state"] = initial_state
        if constants is not None:
            kwargs["constants"] = constants
        if isinstance(inputs, RaggedTensor):  # padded, with the mask of its row lengths
            return ragged_convert.call_padded(super().__call__, inputs, self.return_sequences,
                                              kwargs)  # fmt: skip
        return super().__call__(inputs, **kwargs)

    def build(self, input_shape: Any) -> None:
        for sub in (self.forward_layer, self.backward_layer):
            if not sub.built:
                sub.build(input_shape)

    def call(self, inputs: Any, training: Any = None, mask: Any = None, initial_state: Any = None,
             constants: Any = None) -> Any:  # fmt: skip
        fw_kwargs: dict[str, Any] = {"mask": mask}
        bw_kwargs: dict[str, Any] = {"mask": mask}
        if training is not None:
            fw_kwargs["training"] = bw_kwargs["training"] = training
        if initial_state is not None:
            flat = nest.flatten(initial_state)
            half = len(flat) // 2
            fw_kwargs["initial_state"], bw_kwargs["initial_state"] = flat[:half], flat[half:]
        if constants is not None:
            fw_kwargs["constants"] = bw_kwargs["constants"] = constants
        y = self.forward_layer(inputs, **fw_kwargs)
        y_rev = self.backward_layer(inputs, **bw_kwargs)
        states: list = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            time_axis = 0 if getattr(self.forward_layer, "time_major", False) else 1
            y_rev = y_rev[::-1] if time_axis == 0 else y_rev[:, ::-1]
        if self.merge_mode == "concat":
            output: Any = array_ops.concat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            output = y * y_rev
        else:
            output = [y, y_rev]
        if not self.return_state:
            return output
        if self.merge_mode is None:
            return output + states
        return [output, *states]

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if isinstance(mask, list):
            mask = mask[0]
        out_mask = mask if self.return_sequences else None
        if self.return_state:
            n = len(nest.flatten(self.forward_layer.cell.state_size))
            outs = [out_mask] if self.merge_mode is not None else [out_mask, out_mask]
            return outs + [None] * (2 * n)
        return out_mask if self.merge_mode is not None else [out_mask, out_mask]

    def compute_output_shape(self, input_shape: Any) -> Any:
        out = self.forward_layer.compute_output_shape(input_shape)
        states: list = []
        if self.return_state:
            states = list(out[1:]) * 2
            out = out[0]
        if self.merge_mode == "concat":
            out = TensorShape(out)[:-1].concatenate([2 * TensorShape(out)[-1]])
            outs: Any = out
        elif self.merge_mode is None:
            outs = [out, out]
        else:
            outs = out
        if not self.return_state:
            return outs
        return (outs if isinstance(outs, list) else [outs]) + states

    def get_config(self) -> dict[str, Any]:
        config = {**Layer.get_config(self), "merge_mode": self.merge_mode,
                  "layer": self._layer_config}  # fmt: skip
        if self._backward_config is not None:
            config["backward_layer"] = self._backward_config
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        config = dict(config)
        layer = deserialize_layer(config.pop("layer"), custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            config["backward_layer"] = deserialize_layer(backward, custom_objects)
        return cls(layer, **config)
