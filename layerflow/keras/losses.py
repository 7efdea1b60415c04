"""`tf.keras.losses`: loss classes, their function forms, `Reduction` and `get`."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.losses import (
    KLD,
    MAE,
    MSE,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    Huber,
    KLDivergence,
    Loss,
    MeanAbsoluteError,
    MeanSquaredError,
    Reduction,
    SparseCategoricalCrossentropy,
    binary_crossentropy,
    categorical_crossentropy,
    deserialize,
    get,
    huber,
    kl_divergence,
    kld,
    kullback_leibler_divergence,
    mae,
    mean_absolute_error,
    mean_squared_error,
    mse,
    serialize,
    sparse_categorical_crossentropy,
)
