"""`tf.keras.applications.mobilenet_v2`."""

from layerflow._src.keras.applications.mobilenet_v2 import (
    MobileNetV2,
    decode_predictions,
    preprocess_input,
)

__all__ = ["MobileNetV2", "decode_predictions", "preprocess_input"]
