"""`tf.keras.utils.experimental`: `DatasetCreator`."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.utils.dataset_creator import DatasetCreator
