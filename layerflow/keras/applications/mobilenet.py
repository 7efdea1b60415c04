"""`tf.keras.applications.mobilenet`."""

from layerflow._src.keras.applications.mobilenet import (
    MobileNet,
    decode_predictions,
    preprocess_input,
)

__all__ = ["MobileNet", "decode_predictions", "preprocess_input"]
