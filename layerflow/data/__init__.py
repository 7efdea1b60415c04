"""`tf.data`: input pipelines. Re-exports only; the implementation is in `layerflow._src.data`."""

from layerflow._src.data.dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
)
from layerflow._src.data.dataset import Iterator_ as Iterator
from layerflow._src.data.dataset_methods import NumpyIterator
from layerflow._src.data.iterator_spec import IteratorSpec
from layerflow._src.data.options import Options, ThreadingOptions
from layerflow._src.data.records import (
    FixedLengthRecordDataset,
    TFRecordDataset,
)
from layerflow._src.data.text_sources import TextLineDataset
from layerflow._src.data.transforms_extra import DatasetSpec
from layerflow.data import experimental
