"""`tf.keras.layers`: every built-in layer (re-exported from `layerflow._src.keras.layers`)."""

from layerflow._src.keras.layers import *  # noqa: F403 - the facade re-exports the whole list
from layerflow._src.keras.layers.layer_serialization import deserialize, serialize
from layerflow.keras.layers import experimental  # tf.keras.layers.experimental.preprocessing.*


def __getattr__(name):  # noqa: ANN001, ANN202
    if name == "DenseFeatures":
        raise AttributeError(
            "tf.keras.layers.DenseFeatures is not provided by layerflow: it consumes "
            "tf.feature_column columns, which TensorFlow deprecated and layerflow does not "
            "implement. Preprocess features with Keras preprocessing layers (Normalization, "
            "CategoryEncoding, Hashing, Discretization) and Concatenate instead."
        )
    raise AttributeError(f"module 'layerflow.keras.layers' has no attribute {name!r}")
