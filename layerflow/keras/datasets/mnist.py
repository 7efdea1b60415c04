"""`tf.keras.datasets.mnist`."""

from layerflow._src.keras.datasets.mnist import load_data

__all__ = ["load_data"]
