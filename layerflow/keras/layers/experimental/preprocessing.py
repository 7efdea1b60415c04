"""`tf.keras.layers.experimental.preprocessing`: the preprocessing layers under their TF 2.3-2.5
names."""

from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer
from layerflow._src.keras.layers.preprocessing.category_encoding import CategoryEncoding
from layerflow._src.keras.layers.preprocessing.discretization import Discretization
from layerflow._src.keras.layers.preprocessing.hashing import HashedCrossing, Hashing
from layerflow._src.keras.layers.preprocessing.image_augmentation import (
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomHeight,
    RandomRotation,
    RandomTranslation,
    RandomWidth,
    RandomZoom,
)
from layerflow._src.keras.layers.preprocessing.image_preprocessing import (
    CenterCrop,
    Rescaling,
    Resizing,
)
from layerflow._src.keras.layers.preprocessing.integer_lookup import IntegerLookup
from layerflow._src.keras.layers.preprocessing.normalization import Normalization
from layerflow._src.keras.layers.preprocessing.string_lookup import StringLookup
from layerflow._src.keras.layers.preprocessing.text_vectorization import (
    TextVectorization,
)
