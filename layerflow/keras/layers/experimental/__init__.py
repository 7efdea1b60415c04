"""`tf.keras.layers.experimental`: Keras 2's older names (the preprocessing layers, EinsumDense)."""

from layerflow._src.keras.layers.dynamic_embedding import DynamicEmbedding, DynamicLookup
from layerflow._src.keras.layers.einsum_dense import EinsumDense
from layerflow._src.keras.layers.experimental_extra import (
    RandomFourierFeatures,
    SyncBatchNormalization,
)
from layerflow.keras.layers.experimental import preprocessing
