"""`tf.keras.constraints`: projections applied to weights after each update."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.constraints import (
    Constraint,
    MaxNorm,
    MinMaxNorm,
    NonNeg,
    RadialConstraint,
    UnitNorm,
    deserialize,
    get,
    max_norm,
    min_max_norm,
    non_neg,
    radial_constraint,
    serialize,
    unit_norm,
)
