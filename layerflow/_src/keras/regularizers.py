"""`tf.keras.regularizers`: penalties `reg(weight) -> scalar tensor` added to `layer.losses`."""

from __future__ import annotations

import math
from typing import Any

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import array_ops, math_ops, normalization_ops

from . import serialization


def _factor(value: Any, name: str, who: str) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{who}: {name} must be a non-negative number, got {value!r} ({type(value).__name__})."
        ) from None
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"{who}: {name} must be a finite non-negative number, got {value!r}.")
    return f


def _t(x: Any) -> Any:
    return x if isinstance(x, TensorLike) else convert_to_tensor(x)


class Regularizer(serialization.Configurable):
    """Base class: subclasses define `__call__(self, x)` returning a scalar penalty.

    >>> import layerflow as tf
    >>> class Sum(tf.keras.regularizers.Regularizer):
    ...     def __call__(self, x):
    ...         return tf.reduce_sum(x)
    >>> float(Sum()(tf.ones((2, 2))))
    4.0
    """

    def __call__(self, x: Any) -> Any:
        return 0.0


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x ** 2).

    >>> import layerflow as tf
    >>> float(tf.keras.regularizers.L1L2(l1=0.5, l2=0.25)(tf.constant([1.0, -2.0])))
    2.75
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1 = _factor(l1, "l1", type(self).__name__)
        self.l2 = _factor(l2, "l2", type(self).__name__)

    def __call__(self, x: Any) -> Any:
        x = _t(x)
        total = math_ops.reduce_sum(math_ops.zeros_like(x))
        if self.l1:
            total = total + self.l1 * math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            total = total + self.l2 * math_ops.reduce_sum(math_ops.square(x))
        return total

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """l1 * sum(|x|) (default 0.01).

    >>> import layerflow as tf
    >>> float(tf.keras.regularizers.L1(0.5)(tf.constant([1.0, -2.0])))
    1.5
    """

    def __init__(self, l1: float = 0.01, **kwargs: Any) -> None:
        l1 = kwargs.pop("l", l1)  # Keras 2 accepts `l=` too
        if kwargs:
            raise TypeError(f"L1 got unexpected arguments {sorted(kwargs)}.")
        self.l1 = _factor(l1, "l1", "L1")

    def __call__(self, x: Any) -> Any:
        return self.l1 * math_ops.reduce_sum(math_ops.abs(_t(x)))

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(Regularizer):
    """l2 * sum(x ** 2) (default 0.01).

    >>> import layerflow as tf
    >>> float(tf.keras.regularizers.L2(0.5)(tf.constant([1.0, -2.0])))
    2.5
    """

    def __init__(self, l2: float = 0.01, **kwargs: Any) -> None:
        l2 = kwargs.pop("l", l2)
        if kwargs:
            raise TypeError(f"L2 got unexpected arguments {sorted(kwargs)}.")
        self.l2 = _factor(l2, "l2", "L2")

    def __call__(self, x: Any) -> Any:
        return self.l2 * math_ops.reduce_sum(math_ops.square(_t(x)))

    def get_config(self) -> dict:
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (`mode="rows"`) or columns of a 2-D weight towards orthogonality:
    `factor * 0.5 * sum(|P - diag(P)|) / (n (n - 1) / 2)`, `P` the Gram matrix of the
    L2-normalized rows (or columns), `n` their count.

    >>> import layerflow as tf
    >>> reg = tf.keras.regularizers.OrthogonalRegularizer(factor=1.0)
    >>> float(reg(tf.constant([[1.0, 0.0], [0.0, 2.0]])))
    0.0
    >>> round(float(reg(tf.constant([[1.0, 1.0], [1.0, 1.0]]))), 4)
    1.0
    """

    def __init__(self, factor: float = 0.01, mode: str = "rows") -> None:
        self.factor = _factor(factor, "factor", "OrthogonalRegularizer")
        if mode not in {"rows", "columns"}:
            raise ValueError(
                "OrthogonalRegularizer: invalid value for argument `mode`. Expected one of "
                f'{{"rows", "columns"}}. Received: mode={mode!r}'
            )
        self.mode = mode

    def __call__(self, inputs: Any) -> Any:
        x = _t(inputs)
        if len(x.shape) != 2:
            raise ValueError(
                "Inputs to OrthogonalRegularizer must have rank 2 (a Dense kernel, for "
                f"example). Received: inputs.shape == {tuple(x.shape)}"
            )
        if self.mode == "rows":
            x = normalization_ops.l2_normalize(x, axis=1)
            product = math_ops.matmul(x, array_ops.transpose(x))
            size = int(x.shape[0])
        else:
            x = normalization_ops.l2_normalize(x, axis=0)
            product = math_ops.matmul(array_ops.transpose(x), x)
            size = int(x.shape[1])
        off_diagonal = product * (1.0 - array_ops.eye(size, dtype=x.dtype))
        num_pairs = size * (size - 1.0) / 2.0
        return self.factor * 0.5 * math_ops.reduce_sum(math_ops.abs(off_diagonal)) / num_pairs

    def get_config(self) -> dict:
        return {"factor": self.factor, "mode": self.mode}


l1 = L1
l2 = L2
orthogonal_regularizer = OrthogonalRegularizer


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:  # noqa: F811 - Keras's names
    """An L1L2 regularizer with both factors (default 0.01 each).

    >>> import layerflow as tf
    >>> tf.keras.regularizers.l1_l2(0.1, 0.2).get_config()
    {'l1': 0.1, 'l2': 0.2}
    """
    return L1L2(l1=l1, l2=l2)


_MODULE_OBJECTS = {
    "Regularizer": Regularizer,
    "L1L2": L1L2,
    "L1": L1,
    "L2": L2,
    "l1": L1,
    "l2": L2,
    "l1_l2": l1_l2,
    "OrthogonalRegularizer": OrthogonalRegularizer,
    "orthogonal_regularizer": OrthogonalRegularizer,
}


def serialize(regularizer: Any) -> Any:
    """`{"class_name": ..., "config": ...}` for a regularizer."""
    return serialization.serialize_keras_object(regularizer)


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """A regularizer from `serialize`'s output or a name ('l1', 'l2', 'l1_l2')."""
    if config == "l1_l2":  # Keras 2: the name means the regularizer, not the factory function
        return L1L2(l1=0.01, l2=0.01)
    return serialization.deserialize_keras_object(
        config, _MODULE_OBJECTS, custom_objects, printable_module_name="regularizer"
    )


def get(identifier: Any) -> Any:
    """A regularizer from None, a name, a config dict, or a callable.

    >>> import layerflow as tf
    >>> tf.keras.regularizers.get("l2").get_config()
    {'l2': 0.01}
    """
    return serialization.get_object(
        identifier,
        deserialize,
        "regularizer",
        "Pass 'l1', 'l2', 'l1_l2', a Regularizer, a config dict, or a callable(weight) -> scalar.",
    )
