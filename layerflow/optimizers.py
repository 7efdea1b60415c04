"""`tf.optimizers`: TF's alias of `tf.keras.optimizers`."""

from layerflow.keras.optimizers import *  # noqa: F403
from layerflow.keras.optimizers import Optimizer, get, legacy, schedules  # noqa: F401
