"""`tf.keras.applications.inception_v3`."""

from layerflow._src.keras.applications.inception_v3 import (
    InceptionV3,
    decode_predictions,
    preprocess_input,
)

__all__ = ["InceptionV3", "decode_predictions", "preprocess_input"]
