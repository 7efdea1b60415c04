"""GroupNormalization (statistics per sample and channel group) and UnitNormalization."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import constraints, initializers, regularizers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.merging_dot import l2_normalize
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, math_ops

__all__ = ["GroupNormalization", "UnitNormalization"]


def _ser(fn: Any, value: Any) -> Any:
    return None if value is None else fn(value)


class GroupNormalization(Layer):
    """Split the channels (`axis`) into `groups`; normalize each sample's group to mean 0 and
    variance 1, then scale by gamma and shift by beta per channel (Wu & He, 2018).

    >>> import layerflow as tf
    >>> y = tf.keras.layers.GroupNormalization(groups=2)(tf.constant([[1.0, 3.0, 0.0, 4.0]]))
    >>> y.numpy().round(3)
    array([[-1.,  1., -1.,  1.]], dtype=float32)
    """

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if not isinstance(groups, int) or isinstance(groups, bool) or (groups < 1 and groups != -1):
            raise ValueError(
                f"GroupNormalization: groups must be a positive int (or -1 for one group per "
                f"channel), got {groups!r}."
            )
        if not isinstance(axis, int):
            raise TypeError(f"GroupNormalization: axis must be an int, got {axis!r}.")
        self.supports_masking = True
        self.groups = groups
        self.axis = axis
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        set_weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        set_weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        rank = shape.rank
        if not -rank <= self.axis < rank or self.axis % rank == 0:
            raise ValueError(
                f"GroupNormalization '{self.name}': axis {self.axis} must name a non-batch axis "
                f"of inputs of shape {shape}."
            )
        self._axis = self.axis % rank
        dim = shape[self._axis]
        if dim is None:
            raise ValueError(
                f"GroupNormalization '{self.name}': axis {self.axis} of the input must have a "
                f"defined dimension, got input shape {shape}."
            )
        groups = dim if self.groups == -1 else self.groups
        if dim < groups:
            raise ValueError(
                f"GroupNormalization '{self.name}': the number of groups ({groups}) cannot be more "
                f"than the number of channels ({dim})."
            )
        if dim % groups:
            raise ValueError(
                f"GroupNormalization '{self.name}': the number of channels ({dim}) must be a "
                f"multiple of the number of groups ({groups})."
            )
        self.groups = self._groups = groups  # Keras 2 reports the resolved count after build
        self.input_spec = InputSpec(ndim=rank, axes={self._axis: dim})
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(name="gamma", shape=(dim,),
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)  # fmt: skip
        if self.center:
            self.beta = self.add_weight(name="beta", shape=(dim,),
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)  # fmt: skip

    def call(self, inputs: Any) -> Any:
        shape = list(inputs.shape)
        a, g = self._axis, self._groups
        grouped_shape = shape[:a] + [g, shape[a] // g] + shape[a + 1 :]
        x = math_ops.reshape(inputs, grouped_shape)
        axes = [i for i in range(1, len(grouped_shape)) if i != a]
        mean = math_ops.reduce_mean(x, axis=axes, keepdims=True)
        centered = x - mean
        var = math_ops.reduce_mean(math_ops.square(centered), axis=axes, keepdims=True)
        eps = array_ops.constant(self.epsilon, dtype=x.dtype)
        x = centered / math_ops.sqrt(var + eps)
        bshape = [1] * len(grouped_shape)
        bshape[a], bshape[a + 1] = g, shape[a] // g
        if self.gamma is not None:
            x = x * math_ops.reshape(self.gamma, bshape)
        if self.beta is not None:
            x = x + math_ops.reshape(self.beta, bshape)
        return math_ops.reshape(x, shape)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "groups": self.groups,
            "axis": self.axis,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "beta_regularizer": _ser(regularizers.serialize, self.beta_regularizer),
            "gamma_regularizer": _ser(regularizers.serialize, self.gamma_regularizer),
            "beta_constraint": _ser(constraints.serialize, self.beta_constraint),
            "gamma_constraint": _ser(constraints.serialize, self.gamma_constraint),
        }


class UnitNormalization(Layer):
    """Scale each sample to unit L2 norm along `axis` (an int or a list of ints).

    >>> import layerflow as tf
    >>> tf.keras.layers.UnitNormalization()(tf.constant([[3.0, 4.0]])).numpy()
    array([[0.6, 0.8]], dtype=float32)
    """

    def __init__(self, axis: Any = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)) and all(isinstance(a, int) for a in axis):
            self.axis = list(axis)
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = axis
        else:
            raise TypeError(
                f"UnitNormalization: axis must be an int or a list/tuple of ints, got {axis!r}."
            )
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        rank = TensorShape(input_shape).rank
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(
                    f"UnitNormalization '{self.name}': axis {a} is out of range for inputs of "
                    f"rank {rank}."
                )
        self._axes = sorted({a % rank for a in axes})

    def call(self, inputs: Any) -> Any:
        if inputs.dtype.name != self.compute_dtype:
            inputs = math_ops.cast(inputs, self.compute_dtype)
        return l2_normalize(inputs, self._axes)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "axis": self.axis}
