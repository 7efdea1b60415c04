"""LayerNormalization: normalize each sample over `axis`, then scale by gamma and shift by beta."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import constraints, initializers, regularizers
from layerflow._src.keras.engine.arg_checks import check_axis
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import math_ops


class LayerNormalization(Layer):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta, statistics over `axis` of each sample.

    >>> import layerflow as tf
    >>> y = tf.keras.layers.LayerNormalization()(tf.constant([[1.0, 3.0]]))
    >>> y.numpy().round(4)
    array([[-0.9995,  0.9995]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        axis = check_axis(axis, "axis", f"LayerNormalization '{self.name}'")
        self.axis = list(axis) if isinstance(axis, tuple) else axis
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        set_weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        set_weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        rank = shape.rank
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        norm = []
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(
                    f"LayerNormalization '{self.name}': axis {a} is out of range for inputs of "
                    f"shape {shape}."
                )
            norm.append(a % rank)
        if len(set(norm)) != len(norm):
            raise ValueError(f"LayerNormalization '{self.name}': duplicate axes in {self.axis}.")
        self._axes = tuple(sorted(norm))
        if any(shape[a] is None for a in self._axes):
            raise ValueError(
                f"LayerNormalization '{self.name}' needs the normalized axes {self._axes} known, "
                f"got input shape {shape}."
            )
        param_shape = [shape[a] for a in self._axes]
        self._broadcast = [shape[a] if a in self._axes else 1 for a in range(rank)]
        self.gamma = None
        self.beta = None
        if self.scale:
            self.gamma = self.add_weight(name="gamma", shape=param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)  # fmt: skip
        if self.center:
            self.beta = self.add_weight(name="beta", shape=param_shape,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)  # fmt: skip
        self.input_spec = InputSpec(ndim=rank, axes={a - rank: shape[a] for a in self._axes})
        self.built = True

    def call(self, inputs: Any) -> Any:
        mean = math_ops.reduce_mean(inputs, axis=self._axes, keepdims=True)
        centered = inputs - mean
        var = math_ops.reduce_mean(math_ops.square(centered), axis=self._axes, keepdims=True)
        out = centered / math_ops.sqrt(var + self.epsilon)
        if self.gamma is not None:
            out = out * math_ops.reshape(self.gamma, self._broadcast)
        if self.beta is not None:
            out = out + math_ops.reshape(self.beta, self._broadcast)
        return out

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "axis": self.axis,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "beta_regularizer": regularizers.serialize(self.beta_regularizer),
            "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
        }
