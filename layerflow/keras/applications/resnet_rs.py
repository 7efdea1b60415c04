"""`tf.keras.applications.resnet_rs`."""

from layerflow._src.keras.applications.resnet_rs import (
    ResNetRS50,
    ResNetRS101,
    ResNetRS152,
    ResNetRS200,
    ResNetRS270,
    ResNetRS350,
    ResNetRS420,
    decode_predictions,
    preprocess_input,
)

__all__ = [
    "ResNetRS101",
    "ResNetRS152",
    "ResNetRS200",
    "ResNetRS270",
    "ResNetRS350",
    "ResNetRS420",
    "ResNetRS50",
    "decode_predictions",
    "preprocess_input",
]
