"""`tf.data`: input pipelines. Re-exports only; the implementation is in `layerflow._src.data`."""

from layerflow._src.data.dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
)
from layerflow._src.data.dataset import Iterator_ as Iterator
from layerflow._src.data.text_sources import TextLineDataset
from layerflow.data import experimental
