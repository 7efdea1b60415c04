"""`tf.keras.constraints`: projections `c(weight) -> weight` applied after each optimizer step."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import array_ops, core_ops, gather_ops, math_ops

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


class RadialConstraint(Constraint):
    """Makes each `(height, width)` slice of a 4-D `Conv2D` kernel constant on square rings
    around its center, with tf_keras's choice of values: the inner ring (the center, or the
    central 2 x 2 block) takes `k[s-1, s-1]` and ring `r` takes `k[s+r-1, s+r-1]` (odd sizes)
    or `k[s+r, s+r]` (even sizes), `s = size // 2`.

    >>> import layerflow as tf
    >>> w = tf.reshape(tf.range(9.0), (3, 3, 1, 1))
    >>> tf.keras.constraints.RadialConstraint()(w)[:, :, 0, 0].numpy().tolist()
    [[4.0, 4.0, 4.0], [4.0, 0.0, 4.0], [4.0, 4.0, 4.0]]
    """

    def __call__(self, w: Any) -> Any:
        w = _t(w)
        shape = tuple(int(d) for d in w.shape)
        if len(shape) != 4:
            raise ValueError(
                "RadialConstraint: the weight tensor must have rank 4 (a Conv2D kernel of shape "
                f"(height, width, channels, filters)). Received weight tensor with shape: {shape}"
            )
        size = shape[0]
        if shape[1] != size or size < 2:
            raise ValueError(
                "RadialConstraint: the kernel must be square with a size of at least 2 (its "
                f"rings are taken from the diagonal). Received weight tensor with shape: {shape}"
            )
        start = size // 2
        center = (size - 1) / 2.0
        extra = 0 if size % 2 else 1
        flat = []
        for i in range(size):
            for j in range(size):
                ring = int(max(abs(i - center), abs(j - center)))
                src = start - 1 if ring == 0 else start + ring - 1 + extra
                flat.append(src * size + src)
        rows = core_ops.reshape(w, (size * size, shape[2], shape[3]))
        return core_ops.reshape(gather_ops.gather(rows, flat), shape)


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm
radial_constraint = RadialConstraint

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
    "RadialConstraint": RadialConstraint,
    "radial_constraint": RadialConstraint,
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
