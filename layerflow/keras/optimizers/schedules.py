"""`tf.keras.optimizers.schedules`: learning-rate schedules."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.optimizers.schedules import (
    CosineDecay,
    CosineDecayRestarts,
    ExponentialDecay,
    InverseTimeDecay,
    LearningRateSchedule,
    PiecewiseConstantDecay,
    PolynomialDecay,
    deserialize,
    serialize,
)
