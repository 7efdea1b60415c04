"""`tf.keras.models.experimental`: `SharpnessAwareMinimization`."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.training.sharpness_aware import SharpnessAwareMinimization
