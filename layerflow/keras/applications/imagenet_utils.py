"""`tf.keras.applications.imagenet_utils`."""

from layerflow._src.keras.applications.imagenet_utils import decode_predictions, preprocess_input

__all__ = ["decode_predictions", "preprocess_input"]
