"""`tf.keras.applications.mobilenet_v3`."""

from layerflow._src.keras.applications.mobilenet_v3 import (
    MobileNetV3Large,
    MobileNetV3Small,
    decode_predictions,
    preprocess_input,
)

__all__ = ["MobileNetV3Large", "MobileNetV3Small", "decode_predictions", "preprocess_input"]
