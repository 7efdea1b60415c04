"""`tf.keras.applications.inception_resnet_v2`."""

from layerflow._src.keras.applications.inception_resnet_v2 import (
    InceptionResNetV2,
    decode_predictions,
    preprocess_input,
)

__all__ = ["InceptionResNetV2", "decode_predictions", "preprocess_input"]
