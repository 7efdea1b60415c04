"""`tf.keras.datasets.cifar10`."""

from layerflow._src.keras.datasets.cifar10 import load_data

__all__ = ["load_data"]
