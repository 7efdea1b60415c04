"""`tf.keras.datasets.reuters`."""

from layerflow._src.keras.datasets.reuters import get_label_names, get_word_index, load_data

__all__ = ["get_label_names", "get_word_index", "load_data"]
