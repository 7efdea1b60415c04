"""Activation layers: Activation, ReLU, LeakyReLU, PReLU, ELU, Softmax (Keras 2 defaults)."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine.arg_checks import check_axis
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.ops import array_ops, math_ops, nn_ops


def _who(layer: Layer) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


class Activation(Layer):
    """Apply an activation function, given by name or callable.

    >>> import layerflow as tf
    >>> tf.keras.layers.Activation("relu")(tf.constant([[-1.0, 2.0]])).numpy()
    array([[0., 2.]], dtype=float32)
    """

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class ReLU(Layer):
    """Rectified linear unit with optional cap, leak below the threshold, and threshold.

    >>> import layerflow as tf
    >>> tf.keras.layers.ReLU(max_value=1.0)(tf.constant([[-1.0, 0.5, 3.0]])).numpy()
    array([[0. , 0.5, 1. ]], dtype=float32)
    """

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(f"ReLU: max_value must be >= 0 or None, got {max_value!r}.")
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError(f"ReLU: negative_slope must be >= 0, got {negative_slope!r}.")
        if threshold is None or threshold < 0.0:
            raise ValueError(f"ReLU: threshold must be >= 0, got {threshold!r}.")
        self.supports_masking = True
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs: Any) -> Any:
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)  # fmt: skip

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "max_value": self.max_value,
            "negative_slope": self.negative_slope,
            "threshold": self.threshold,
        }


class LeakyReLU(Layer):
    """x for x >= 0, alpha * x otherwise (Keras 2's default alpha 0.3).

    >>> import layerflow as tf
    >>> tf.keras.layers.LeakyReLU()(tf.constant([[-1.0, 2.0]])).numpy()
    array([[-0.3,  2. ]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if alpha is None or alpha < 0:
            raise ValueError(f"LeakyReLU: alpha must be a number >= 0, got {alpha!r}.")
        self.supports_masking = True
        self.alpha = float(alpha)

    def call(self, inputs: Any) -> Any:
        return activations.leaky_relu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(Layer):
    """Leaky ReLU with a learned slope per input unit (shared along `shared_axes`).

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.5))
    >>> layer(tf.constant([[-2.0, 2.0]])).numpy()
    array([[-1.,  2.]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(
        self,
        alpha_initializer: Any = "zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = list(shared_axes)
        else:
            self.shared_axes = [shared_axes]

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.rank is None or shape.rank < 2:
            raise ValueError(
                f"{_who(self)} needs inputs of rank >= 2 (a batch of values), got shape {shape}."
            )
        param_shape = list(shape[1:])
        for axis in self.shared_axes or []:
            if not 1 <= axis < shape.rank:
                raise ValueError(
                    f"{_who(self)}: shared_axes entry {axis} is out of range for inputs of shape "
                    f"{shape}; use axes 1..{shape.rank - 1}."
                )
            param_shape[axis - 1] = 1
        if any(d is None for d in param_shape):
            raise ValueError(
                f"{_who(self)} needs every non-batch dimension known (or shared), got {shape}."
            )
        self.alpha = self.add_weight(name="alpha", shape=param_shape,
                                     initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)  # fmt: skip
        axes = {i: shape[i] for i in range(1, shape.rank) if param_shape[i - 1] != 1}
        self.input_spec = InputSpec(ndim=shape.rank, axes=axes)
        self.built = True

    def call(self, inputs: Any) -> Any:
        return math_ops.relu(inputs) - self.alpha * math_ops.relu(-inputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "alpha_initializer": initializers.serialize(self.alpha_initializer),
            "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
            "alpha_constraint": constraints.serialize(self.alpha_constraint),
            "shared_axes": self.shared_axes,
        }


class ELU(Layer):
    """Exponential linear unit: x for x > 0, alpha * (exp(x) - 1) otherwise.

    >>> import layerflow as tf
    >>> tf.keras.layers.ELU()(tf.constant([[0.0, 2.0]])).numpy()
    array([[0., 2.]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("ELU: alpha must be a number, got None.")
        self.supports_masking = True
        self.alpha = float(alpha)

    def call(self, inputs: Any) -> Any:
        return activations.elu(inputs, self.alpha)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(Layer):
    """Softmax along `axis` (an int or a list of axes); masked positions get probability ~0.

    >>> import layerflow as tf
    >>> tf.keras.layers.Softmax()(tf.constant([[1.0, 1.0]])).numpy()
    array([[0.5, 0.5]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(self, axis: Any = -1, robust_masking: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.axis = check_axis(axis, "axis", f"Softmax '{self.name}'")
        self.robust_masking = bool(robust_masking)

    def call(self, inputs: Any, mask: Any = None) -> Any:
        if mask is not None:
            # Keras's trick: push masked logits far below the rest rather than removing them.
            big = 1e9 if inputs.dtype.name in ("float32", "float64") else 3e4
            low = array_ops.constant(-big, dtype=inputs.dtype)
            if self.robust_masking:  # Keras 2: replace masked logits (no cancellation)
                keep = mask if mask.dtype.is_bool else math_ops.greater(mask, 0.5)
                inputs = math_ops.where(keep, inputs, low)
            else:
                inputs = inputs + (1.0 - math_ops.cast(mask, inputs.dtype)) * low
        if isinstance(self.axis, int):
            return nn_ops.softmax(inputs, axis=self.axis)
        axis = tuple(self.axis)
        shifted = inputs - array_ops.stop_gradient(
            math_ops.reduce_max(inputs, axis=axis, keepdims=True)
        )
        e = math_ops.exp(shifted)
        return e / math_ops.reduce_sum(e, axis=axis, keepdims=True)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        config = {**super().get_config(), "axis": self.axis}
        if self.robust_masking:  # tf_keras leaves it out; kept so the config round-trips
            config["robust_masking"] = True
        return config
