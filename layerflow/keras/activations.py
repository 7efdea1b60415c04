"""`tf.keras.activations`: elementwise activation functions by name or callable."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.activations import (
    deserialize,
    elu,
    exponential,
    gelu,
    get,
    hard_sigmoid,
    leaky_relu,
    linear,
    mish,
    relu,
    relu6,
    selu,
    serialize,
    sigmoid,
    silu,
    softmax,
    softplus,
    softsign,
    swish,
    tanh,
)
