"""`tf.keras.applications.resnet50`."""

from layerflow._src.keras.applications.resnet import (
    ResNet50,
    decode_predictions,
    preprocess_input,
)

__all__ = ["ResNet50", "decode_predictions", "preprocess_input"]
