"""`tf.keras.applications.resnet`."""

from layerflow._src.keras.applications.resnet import (
    ResNet50,
    ResNet101,
    ResNet152,
    decode_predictions,
    preprocess_input,
)

__all__ = ["ResNet101", "ResNet152", "ResNet50", "decode_predictions", "preprocess_input"]
