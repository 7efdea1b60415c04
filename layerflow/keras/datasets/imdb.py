"""`tf.keras.datasets.imdb`."""

from layerflow._src.keras.datasets.imdb import get_word_index, load_data

__all__ = ["get_word_index", "load_data"]
