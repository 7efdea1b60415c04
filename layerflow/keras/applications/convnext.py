"""`tf.keras.applications.convnext`."""

from layerflow._src.keras.applications.convnext import (
    ConvNeXtBase,
    ConvNeXtLarge,
    ConvNeXtSmall,
    ConvNeXtTiny,
    ConvNeXtXLarge,
    decode_predictions,
    preprocess_input,
)

__all__ = [
    "ConvNeXtBase",
    "ConvNeXtLarge",
    "ConvNeXtSmall",
    "ConvNeXtTiny",
    "ConvNeXtXLarge",
    "decode_predictions",
    "preprocess_input",
]
