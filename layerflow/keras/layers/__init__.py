"""`tf.keras.layers`: every built-in layer (re-exported from `layerflow._src.keras.layers`)."""

from layerflow._src.keras.layers import *  # noqa: F403 - the facade re-exports the whole list
from layerflow._src.keras.layers.layer_serialization import deserialize, serialize
from layerflow.keras.layers import experimental  # tf.keras.layers.experimental.preprocessing.*
