"""`tf.metrics`: TF's alias of `tf.keras.metrics`."""

from layerflow.keras.metrics import *  # noqa: F403
from layerflow.keras.metrics import Metric, get  # noqa: F401
