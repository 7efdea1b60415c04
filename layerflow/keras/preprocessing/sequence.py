"""`tf.keras.preprocessing.sequence`."""

from layerflow._src.keras.preprocessing_legacy.sequence import (
    TimeseriesGenerator,
    make_sampling_table,
    pad_sequences,
    skipgrams,
)

__all__ = ["TimeseriesGenerator", "make_sampling_table", "pad_sequences", "skipgrams"]
