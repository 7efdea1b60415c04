"""`tf.keras.regularizers`: weight penalties."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.regularizers import (
    L1,
    L1L2,
    L2,
    OrthogonalRegularizer,
    Regularizer,
    deserialize,
    get,
    l1,
    l1_l2,
    l2,
    orthogonal_regularizer,
    serialize,
)
