"""`tf.keras.constraints`: projections `c(weight) -> weight` applied after each optimizer step."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import array_ops, math_ops

from . import serialization

_EPSILON = 1e-7  # Keras's backend epsilon, keeps a zero column from dividing by zero


def _t(x: Any) -> Any:
    return x if isinstance(x, TensorLike) else convert_to_tensor(x)


def _norms(w: Any, axis: Any) -> Any:
    return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(w), axis=axis, keepdims=True))


def _const(value: float, like: Any) -> Any:
    return array_ops.constant(value, dtype=like.dtype)


class Constraint(serialization.Configurable):
    """Base class: subclasses define `__call__(self, w)` returning the projected weight.

    >>> import layerflow as tf
    >>> float(tf.keras.constraints.Constraint()(tf.constant(3.0)))
    3.0
    """

    def __call__(self, w: Any) -> Any:
        return w


class MaxNorm(Constraint):
    """Rescale slices along `axis` whose L2 norm exceeds `max_value`.

    >>> import layerflow as tf
    >>> tf.keras.constraints.MaxNorm(1.0)(tf.constant([[3.0], [4.0]])).numpy().round(3)
    array([[0.6],
           [0.8]], dtype=float32)
    """

    def __init__(self, max_value: float = 2, axis: Any = 0) -> None:
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w: Any) -> Any:
        w = _t(w)
        norms = _norms(w, self.axis)
        desired = math_ops.minimum(norms, _const(self.max_value, w))
        return w * (desired / (norms + _EPSILON))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Set negative entries to zero.

    >>> import layerflow as tf
    >>> tf.keras.constraints.NonNeg()(tf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
    """

    def __call__(self, w: Any) -> Any:
        w = _t(w)
        return math_ops.where(math_ops.greater_equal(w, _const(0.0, w)), w, math_ops.zeros_like(w))


class UnitNorm(Constraint):
    """Scale slices along `axis` to unit L2 norm.

    >>> import layerflow as tf
    >>> tf.keras.constraints.UnitNorm()(tf.constant([[3.0], [4.0]])).numpy().round(3)
    array([[0.6],
           [0.8]], dtype=float32)
    """

    def __init__(self, axis: Any = 0) -> None:
        self.axis = axis

    def __call__(self, w: Any) -> Any:
        w = _t(w)
        return w / (_norms(w, self.axis) + _EPSILON)

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move slice norms into [min_value, max_value], a fraction `rate` of the way per step.

    >>> import layerflow as tf
    >>> w = tf.keras.constraints.MinMaxNorm(2.0, 3.0)(tf.constant([[0.6], [0.8]]))
    >>> round(float(tf.sqrt(tf.reduce_sum(w * w))), 4)
    2.0
    """

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis: Any = 0) -> None:  # fmt: skip
        if min_value > max_value:
            raise ValueError(
                f"MinMaxNorm: min_value ({min_value}) must not exceed max_value ({max_value})."
            )
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w: Any) -> Any:
        w = _t(w)
        norms = _norms(w, self.axis)
        clipped = math_ops.maximum(
            math_ops.minimum(norms, _const(self.max_value, w)), _const(self.min_value, w)
        )
        desired = self.rate * clipped + (1.0 - self.rate) * norms
        return w * (desired / (norms + _EPSILON))

    def get_config(self) -> dict:
        return {
            "min_value": self.min_value,
            "max_value": self.max_value,
            "rate": self.rate,
            "axis": self.axis,
        }


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_MODULE_OBJECTS = {
    "Constraint": Constraint,
    "MaxNorm": MaxNorm,
    "NonNeg": NonNeg,
    "UnitNorm": UnitNorm,
    "MinMaxNorm": MinMaxNorm,
    "max_norm": MaxNorm,
    "non_neg": NonNeg,
    "unit_norm": UnitNorm,
    "min_max_norm": MinMaxNorm,
}


def serialize(constraint: Any) -> Any:
    """`{"class_name": ..., "config": ...}` for a constraint."""
    return serialization.serialize_keras_object(constraint)


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """A constraint from `serialize`'s output or a name such as 'non_neg'."""
    return serialization.deserialize_keras_object(
        config, _MODULE_OBJECTS, custom_objects, printable_module_name="constraint"
    )


def get(identifier: Any) -> Any:
    """A constraint from None, a name, a config dict, or a callable.

    >>> import layerflow as tf
    >>> type(tf.keras.constraints.get("non_neg")).__name__
    'NonNeg'
    """
    return serialization.get_object(
        identifier,
        deserialize,
        "constraint",
        "Pass a name such as 'max_norm', a Constraint, a config dict, or a callable(weight) -> "
        "weight.",
    )
