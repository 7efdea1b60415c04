"""`tf.keras.mixed_precision`: dtype policies and loss scaling."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.engine.dtype_policy import Policy, global_policy, set_global_policy
from layerflow._src.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer
