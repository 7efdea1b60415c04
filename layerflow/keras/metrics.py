"""`tf.keras.metrics`: stateful metrics and their function forms."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.metrics.core import (
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

# isort: split
from layerflow._src.keras.losses.core import (
    binary_crossentropy,
    categorical_crossentropy,
    kl_divergence,
    sparse_categorical_crossentropy,
)
from layerflow._src.keras.losses.extra import (
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
    hinge,
    log_cosh,
    logcosh,
    mean_absolute_percentage_error,
    mean_squared_logarithmic_error,
    poisson,
    squared_hinge,
)
from layerflow._src.keras.metrics.confusion_extra import (
    BinaryIoU,
    FalseNegatives,
    FalsePositives,
    IoU,
    MeanIoU,
    OneHotIoU,
    OneHotMeanIoU,
    PrecisionAtRecall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
from layerflow._src.keras.metrics.extra import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CategoricalHinge,
    CosineSimilarity,
    F1Score,
    FBetaScore,
    Hinge,
    KLDivergence,
    LogCoshError,
    MeanAbsolutePercentageError,
    MeanRelativeError,
    MeanSquaredLogarithmicError,
    MeanTensor,
    Poisson,
    R2Score,
    RootMeanSquaredError,
    SparseCategoricalCrossentropy,
    SquaredHinge,
)
from layerflow.keras import _metrics_experimental as experimental

kld = KLD = kullback_leibler_divergence = kl_divergence
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error

mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
