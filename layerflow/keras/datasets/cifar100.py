"""`tf.keras.datasets.cifar100`."""

from layerflow._src.keras.datasets.cifar100 import load_data

__all__ = ["load_data"]
