"""`tf.keras.activations`: elementwise functions by name or callable, composed from layerflow ops.

Every activation is differentiable through the tape because it is written with layerflow ops;
none needs gradient code of its own. Formulas and defaults follow Keras 2 (TF 2.10).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import array_ops, dense_ops, elementwise_ops, math_ops, nn_ops

from . import serialization


def _t(x: Any) -> Any:
    return x if isinstance(x, TensorLike) else convert_to_tensor(x)


def _const(value: float, like: Any) -> Any:
    return array_ops.constant(value, dtype=like.dtype)


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None, threshold: float = 0.0) -> Any:
    """max(x, 0) by default; `alpha` leaks below `threshold`, `max_value` caps the output.

    >>> import layerflow as tf
    >>> tf.keras.activations.relu([-2.0, 0.5, 9.0], alpha=0.5, max_value=6.0).numpy()
    array([-1. ,  0.5,  6. ], dtype=float32)
    """
    x = _t(x)
    if alpha == 0 and max_value is None and threshold == 0:
        return math_ops.relu(x)
    negative = None
    if alpha != 0:
        negative = math_ops.relu(-x + threshold) if threshold != 0 else math_ops.relu(-x)
    if threshold != 0:
        y = x * math_ops.cast(math_ops.greater(x, _const(threshold, x)), x.dtype)
    else:
        y = math_ops.relu(x)
    if max_value is not None:
        y = math_ops.minimum(y, _const(max_value, x))
    if negative is not None:
        y = y - alpha * negative
    return y


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)).

    >>> import layerflow as tf
    >>> float(tf.keras.activations.sigmoid(0.0))
    0.5
    """
    return math_ops.sigmoid(_t(x))


def tanh(x: Any) -> Any:
    """Hyperbolic tangent.

    >>> import layerflow as tf
    >>> float(tf.keras.activations.tanh(0.0))
    0.0
    """
    return math_ops.tanh(_t(x))


def softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    """exp(x) / sum(exp(x)) along `axis` (shifted by the max, so large inputs do not overflow).

    >>> import layerflow as tf
    >>> tf.keras.activations.softmax([[0.0, 0.0]]).numpy()
    array([[0.5, 0.5]], dtype=float32)
    """
    x = _t(x)
    if x.ndim < 2:
        raise ValueError(
            f"softmax: cannot apply softmax to a tensor of rank {x.ndim} (shape {tuple(x.shape)}); "
            "Keras expects a batch, rank >= 2. Use tf.nn.softmax for a single vector."
        )
    if isinstance(axis, int):
        return nn_ops.softmax(x, axis=axis)  # one fused op with its own gradient
    shifted = x - array_ops.stop_gradient(math_ops.reduce_max(x, axis=axis, keepdims=True))
    e = math_ops.exp(shifted)
    return e / math_ops.reduce_sum(e, axis=axis, keepdims=True)


def softplus(x: Any) -> Any:
    """log(exp(x) + 1), computed as max(x, 0) + log(1 + exp(-|x|)) to avoid overflow.

    >>> import layerflow as tf
    >>> round(float(tf.keras.activations.softplus(0.0)), 4)
    0.6931
    """
    return nn_ops.softplus(_t(x))


def softsign(x: Any) -> Any:
    """x / (|x| + 1).

    >>> import layerflow as tf
    >>> float(tf.keras.activations.softsign(1.0))
    0.5
    """
    return nn_ops.softsign(_t(x))


def elu(x: Any, alpha: float = 1.0) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise.

    >>> import layerflow as tf
    >>> tf.keras.activations.elu([-1.0, 2.0]).numpy().round(4)
    array([-0.6321,  2.    ], dtype=float32)
    """
    return nn_ops.elu(_t(x), alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Any:
    """Scaled ELU: scale * elu(x, alpha) with the self-normalizing constants.

    >>> import layerflow as tf
    >>> round(float(tf.keras.activations.selu(1.0)), 4)
    1.0507
    """
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x: Any, approximate: bool = False) -> Any:
    """x * Phi(x), Phi the standard normal CDF (`approximate=True`: the tanh formula).

    >>> import layerflow as tf
    >>> round(float(tf.keras.activations.gelu(1.0)), 4)
    0.8413
    """
    x = _t(x)
    if approximate:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + math_ops.tanh(inner))
    return 0.5 * x * (1.0 + elementwise_ops.erf(x / math.sqrt(2.0)))


def swish(x: Any) -> Any:
    """x * sigmoid(x) (also `silu`).

    >>> import layerflow as tf
    >>> float(tf.keras.activations.swish(0.0))
    0.0
    """
    x = _t(x)
    return x * math_ops.sigmoid(x)


silu = swish


def leaky_relu(x: Any, alpha: float = 0.2) -> Any:
    """x for x >= 0, alpha * x otherwise (`tf.nn.leaky_relu`'s default alpha 0.2).

    >>> import layerflow as tf
    >>> tf.keras.activations.leaky_relu([-1.0, 1.0]).numpy()
    array([-0.2,  1. ], dtype=float32)
    """
    return nn_ops.leaky_relu(_t(x), alpha)


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6).

    >>> import layerflow as tf
    >>> tf.keras.activations.relu6([-1.0, 7.0]).numpy()
    array([0., 6.], dtype=float32)
    """
    return nn_ops.relu6(_t(x))


def hard_sigmoid(x: Any) -> Any:
    """Keras 2's piecewise-linear sigmoid: clip(0.2 * x + 0.5, 0, 1).

    >>> import layerflow as tf
    >>> tf.keras.activations.hard_sigmoid([-3.0, 0.0, 3.0]).numpy()
    array([0. , 0.5, 1. ], dtype=float32)
    """
    x = _t(x)
    y = 0.2 * x + 0.5
    return math_ops.maximum(math_ops.minimum(y, _const(1.0, x)), _const(0.0, x))


def exponential(x: Any) -> Any:
    """exp(x).

    >>> import layerflow as tf
    >>> float(tf.keras.activations.exponential(0.0))
    1.0
    """
    return math_ops.exp(_t(x))


def linear(x: Any) -> Any:
    """The input unchanged.

    >>> import layerflow as tf
    >>> tf.keras.activations.linear(3.0)
    3.0
    """
    return x


def mish(x: Any) -> Any:
    """x * tanh(softplus(x)) (Misra 2019), softplus computed without overflow.

    >>> import layerflow as tf
    >>> [round(v, 4) for v in tf.keras.activations.mish([-1.0, 0.0, 2.0]).numpy().tolist()]
    [-0.3034, 0.0, 1.944]
    """
    x = _t(x)
    return x * math_ops.tanh(softplus(x))


# Dense's op fuses these (`dense_ops.dense`): relu with its defaults is tf.nn.relu.
dense_ops.register_fused_activation(relu, "relu")
dense_ops.register_fused_activation(linear, "linear")


_ACTIVATIONS: dict[str, Callable[..., Any]] = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
    "softplus": softplus,
    "softsign": softsign,
    "elu": elu,
    "selu": selu,
    "gelu": gelu,
    "swish": swish,
    "silu": silu,
    "leaky_relu": leaky_relu,
    "relu6": relu6,
    "hard_sigmoid": hard_sigmoid,
    "exponential": exponential,
    "linear": linear,
    "mish": mish,
}


def serialize(activation: Callable[..., Any]) -> Any:
    """An activation's name (or a config dict for an activation object such as a layer).

    >>> import layerflow as tf
    >>> tf.keras.activations.serialize(tf.nn.relu)
    'relu'
    """
    if activation is None:
        return "linear"
    name = getattr(activation, "__name__", None)
    if name in _ACTIVATIONS and serialization._GLOBAL_CUSTOM_NAMES.get(activation) is None:
        # `tf.nn.relu` and `tf.keras.activations.relu` both serialize as 'relu', as in Keras.
        return name
    return serialization.serialize_keras_object(activation)


def deserialize(name: Any, custom_objects: dict | None = None) -> Callable[..., Any]:
    """The activation a name (or config dict) refers to.

    >>> import layerflow as tf
    >>> tf.keras.activations.deserialize("relu") is tf.keras.activations.relu
    True
    """
    return serialization.deserialize_keras_object(
        name, _ACTIVATIONS, custom_objects, printable_module_name="activation function"
    )


def get(identifier: Any) -> Callable[..., Any]:
    """An activation from None (linear), a name, a config dict, or a callable.

    >>> import layerflow as tf
    >>> tf.keras.activations.get(None) is tf.keras.activations.linear
    True
    """
    return serialization.get_object(
        identifier,
        deserialize,
        "activation function",
        "Pass a name such as 'relu', a callable, or None for linear.",
        default=linear,
        error=TypeError,
    )
