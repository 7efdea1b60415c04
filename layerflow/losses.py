"""`tf.losses`: TF's alias of `tf.keras.losses`."""

from layerflow.keras.losses import *  # noqa: F403
from layerflow.keras.losses import Loss, Reduction, get  # noqa: F401
