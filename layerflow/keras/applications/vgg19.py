"""`tf.keras.applications.vgg19`."""

from layerflow._src.keras.applications.vgg import (
    VGG19,
    decode_predictions,
    preprocess_input,
)

__all__ = ["VGG19", "decode_predictions", "preprocess_input"]
