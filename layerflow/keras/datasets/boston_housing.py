"""`tf.keras.datasets.boston_housing`."""

from layerflow._src.keras.datasets.boston_housing import load_data

__all__ = ["load_data"]
