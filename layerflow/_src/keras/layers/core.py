"""Core layers: Dense, Flatten, and InputLayer (defined with the engine, re-exported here)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.arg_checks import check_count
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_layer import InputLayer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, dense_ops, math_ops, sparse_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor

__all__ = ["Dense", "Flatten", "InputLayer"]


class Dense(Layer):
    """`activation(inputs @ kernel + bias)` over the last axis of the inputs.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.Dense(3, kernel_initializer="ones")
    >>> layer(tf.ones((2, 4))).numpy()[0]
    array([4., 4., 4.], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = check_count(units, "units", f"Dense '{self.name}'")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_options(
            self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint
        )
        set_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        last = TensorShape(input_shape)[-1] if TensorShape(input_shape).rank else None
        if last is None:
            raise ValueError(
                f"Dense '{self.name}' needs inputs whose last dimension is known, got shape "
                f"{input_shape}."
            )
        self.kernel = self.add_weight(
            "kernel",
            shape=[last, self.units],
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                shape=[self.units],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        else:
            self.bias = None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, RaggedTensor) and inputs.shape[-1] is not None:
            return inputs.with_flat_values(self.call(inputs.flat_values))  # as tf_keras
        if isinstance(inputs, SparseTensor):  # keras.Input(sparse=True): never densified
            outputs = sparse_ops.sparse_dense_matmul(inputs, self.kernel)
            if self.bias is not None:
                outputs = outputs + self.bias
            return self.activation(outputs)
        # One op: matmul, bias and the activation where the op fuses it (dense_ops.dense).
        return dense_ops.dense(inputs, self.kernel, self.bias, self.activation)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape)
        if shape.rank is None or shape.rank < 1 or shape[-1] is None:
            raise ValueError(
                f"Dense '{self.name}': the last dimension of the input must be known, got {shape}."
            )
        return shape[:-1].concatenate([self.units])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(regularizers.serialize, self.kernel_regularizer),
                "bias_regularizer": _maybe(regularizers.serialize, self.bias_regularizer),
                "activity_regularizer": _maybe(regularizers.serialize, self._activity_regularizer),
                "kernel_constraint": _maybe(constraints.serialize, self.kernel_constraint),
                "bias_constraint": _maybe(constraints.serialize, self.bias_constraint),
            }
        )
        return config


class Flatten(Layer):
    """Reshape each example to one dimension: `(batch, d1, d2, ...)` -> `(batch, d1*d2*...)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.Flatten()(tf.ones((2, 3, 4))).shape
    TensorShape([2, 12])
    """

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(
                f"Flatten: data_format must be 'channels_last' or 'channels_first', got "
                f"{data_format!r}."
            )
        self.data_format = data_format or backend_config.image_data_format()
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs: Any) -> Any:
        if inputs.ndim == 1:
            return math_ops.reshape(inputs, (inputs.shape[0], 1))
        if self.data_format == "channels_first" and inputs.ndim > 2:
            perm = [0] + list(range(2, inputs.ndim)) + [1]
            inputs = array_ops.transpose(inputs, perm)
        # An explicit size, not -1: a batch of 0 examples must flatten too.
        return math_ops.reshape(inputs, (inputs.shape[0], int(np.prod(inputs.shape[1:]))))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape)
        if shape.rank == 1:
            return TensorShape([shape[0], 1])
        rest = shape[1:]
        n = int(np.prod(rest)) if rest.is_fully_defined() else None
        return TensorShape([shape[0], n])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


def _maybe(fn: Any, value: Any) -> Any:
    return None if value is None else fn(value)
