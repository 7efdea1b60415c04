"""`tf.initializers`: TF's names for the Keras initializers, the same objects as there."""

from layerflow.keras.initializers import *  # noqa: F403
from layerflow.keras.initializers import deserialize, get, serialize  # noqa: F401
