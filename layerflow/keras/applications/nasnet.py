"""`tf.keras.applications.nasnet`."""

from layerflow._src.keras.applications.nasnet import (
    NASNetLarge,
    NASNetMobile,
    decode_predictions,
    preprocess_input,
)

__all__ = ["NASNetLarge", "NASNetMobile", "decode_predictions", "preprocess_input"]
