"""`tf.keras.datasets.fashion_mnist`."""

from layerflow._src.keras.datasets.fashion_mnist import load_data

__all__ = ["load_data"]
