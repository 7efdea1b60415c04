"""`tf.keras.applications.xception`."""

from layerflow._src.keras.applications.xception import (
    Xception,
    decode_predictions,
    preprocess_input,
)

__all__ = ["Xception", "decode_predictions", "preprocess_input"]
