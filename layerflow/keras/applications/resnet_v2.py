"""`tf.keras.applications.resnet_v2`."""

from layerflow._src.keras.applications.resnet_v2 import (
    ResNet50V2,
    ResNet101V2,
    ResNet152V2,
    decode_predictions,
    preprocess_input,
)

__all__ = ["ResNet101V2", "ResNet152V2", "ResNet50V2", "decode_predictions", "preprocess_input"]
