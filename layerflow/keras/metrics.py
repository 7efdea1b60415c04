"""`tf.keras.metrics`: stateful metrics and their function forms."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.metrics import (
    AUC,
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    Mean,
    MeanAbsoluteError,
    MeanMetricWrapper,
    MeanSquaredError,
    Metric,
    Precision,
    Recall,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    Sum,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    deserialize,
    get,
    mean_absolute_error,
    mean_squared_error,
    serialize,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)

mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
