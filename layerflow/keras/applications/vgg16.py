"""`tf.keras.applications.vgg16`."""

from layerflow._src.keras.applications.vgg import (
    VGG16,
    decode_predictions,
    preprocess_input,
)

__all__ = ["VGG16", "decode_predictions", "preprocess_input"]
