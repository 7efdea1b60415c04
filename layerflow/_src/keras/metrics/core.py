"""`tf.keras.metrics`: stateful metrics whose state lives in non-trainable variables.

The base classes are in `base_metric`, the confusion-count metrics (precision, recall, AUC) in
`confusion_metrics`; this module holds the per-sample metric functions, the classes around them,
and the name lookup, and re-exports the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.keras import serialization
from layerflow._src.keras.metrics.base_metric import (
    Mean,
    MeanMetricWrapper,
    Metric,
    Reduce,
    Sum,
)
from layerflow._src.keras.metrics.confusion import AUC, Precision, Recall
from layerflow._src.ops import metric_ops

__all__ = [
    "AUC",
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "Mean",
    "MeanAbsoluteError",
    "MeanMetricFromLoss",
    "MeanMetricWrapper",
    "MeanSquaredError",
    "Metric",
    "Precision",
    "Recall",
    "Reduce",
    "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "Sum",
    "TopKCategoricalAccuracy",
    "accuracy",
    "binary_accuracy",
    "categorical_accuracy",
    "deserialize",
    "get",
    "mean_absolute_error",
    "mean_squared_error",
    "serialize",
    "sparse_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "top_k_categorical_accuracy",
]


# --- metric functions (each returns one value per sample): gradient-free ops ----------------------
accuracy = metric_ops.accuracy
sparse_categorical_accuracy = metric_ops.sparse_categorical_accuracy
categorical_accuracy = metric_ops.categorical_accuracy
binary_accuracy = metric_ops.binary_accuracy
top_k_categorical_accuracy = metric_ops.top_k_categorical_accuracy
sparse_top_k_categorical_accuracy = metric_ops.sparse_top_k_categorical_accuracy
mean_squared_error = metric_ops.mean_squared_error
mean_absolute_error = metric_ops.mean_absolute_error


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels.

    >>> m = Accuracy(); m.update_state([1, 2, 3, 4], [0, 2, 3, 4]); float(m.result())
    0.75
    """

    def __init__(self, name: str = "accuracy", dtype: Any = None) -> None:
        super().__init__(accuracy, name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of the predictions equals the integer labels.

    >>> m = SparseCategoricalAccuracy()
    >>> m.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]]); float(m.result())
    0.5
    """

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(sparse_categorical_accuracy, name, dtype=dtype)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of the predictions equals the argmax of one-hot labels."""

    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(categorical_accuracy, name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often `y_pred > threshold` equals the binary label."""

    def __init__(
        self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5
    ) -> None:
        super().__init__(binary_accuracy, name, dtype=dtype, threshold=threshold)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the true class is among the `k` highest predictions."""

    def __init__(
        self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None
    ) -> None:
        super().__init__(top_k_categorical_accuracy, name, dtype=dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(
        self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy", dtype: Any = None
    ) -> None:
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype=dtype, k=k)


class MeanSquaredError(MeanMetricWrapper):
    """The mean of `(y_pred - y_true) ** 2`."""

    def __init__(self, name: str = "mean_squared_error", dtype: Any = None) -> None:
        super().__init__(mean_squared_error, name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None) -> None:
        super().__init__(mean_absolute_error, name, dtype=dtype)


class MeanMetricFromLoss(MeanMetricWrapper):
    """A loss function used as a metric (`metrics=["mse"]`)."""


_BY_NAME: dict[str, Callable[[], Metric]] = {
    "accuracy": Accuracy,
    "acc": Accuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "binary_accuracy": BinaryAccuracy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "mse": MeanSquaredError,
    "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError,
    "mean_absolute_error": MeanAbsoluteError,
    "precision": Precision,
    "recall": Recall,
    "auc": AUC,
}

_CLASSES = {
    c.__name__: c
    for c in (
        Mean,
        Sum,
        Accuracy,
        SparseCategoricalAccuracy,
        CategoricalAccuracy,
        BinaryAccuracy,
        TopKCategoricalAccuracy,
        SparseTopKCategoricalAccuracy,
        MeanSquaredError,
        MeanAbsoluteError,
        Precision,
        Recall,
        AUC,
    )
}


# --- the other Keras 2 metrics (metrics_extra, confusion_metrics_extra) --------------------------
# isort: split
from layerflow._src.keras.metrics import confusion_extra as _confusion_extra  # noqa: E402
from layerflow._src.keras.metrics import extra as _extra  # noqa: E402

_NEW_CLASSES = [
    getattr(module, name)
    for module, names in (
        (_extra, ("Hinge", "SquaredHinge", "CategoricalHinge", "KLDivergence", "Poisson",
                  "LogCoshError", "CosineSimilarity", "MeanAbsolutePercentageError",
                  "MeanSquaredLogarithmicError", "RootMeanSquaredError", "BinaryCrossentropy",
                  "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "MeanRelativeError",
                  "MeanTensor", "FBetaScore", "F1Score", "R2Score")),
        (_confusion_extra, _confusion_extra.__all__),
    )
    for name in names
]  # fmt: skip
_CLASSES.update({c.__name__: c for c in _NEW_CLASSES})
_BY_NAME.update(
    {
        "hinge": _extra.Hinge,
        "squared_hinge": _extra.SquaredHinge,
        "categorical_hinge": _extra.CategoricalHinge,
        "kld": _extra.KLDivergence,
        "kl_divergence": _extra.KLDivergence,
        "kullback_leibler_divergence": _extra.KLDivergence,
        "poisson": _extra.Poisson,
        "logcosh": _extra.LogCoshError,
        "log_cosh": _extra.LogCoshError,
        "cosine_similarity": _extra.CosineSimilarity,
        "mape": _extra.MeanAbsolutePercentageError,
        "mean_absolute_percentage_error": _extra.MeanAbsolutePercentageError,
        "msle": _extra.MeanSquaredLogarithmicError,
        "mean_squared_logarithmic_error": _extra.MeanSquaredLogarithmicError,
        "binary_crossentropy": _extra.BinaryCrossentropy,
        "categorical_crossentropy": _extra.CategoricalCrossentropy,
        "sparse_categorical_crossentropy": _extra.SparseCategoricalCrossentropy,
    }
)


def get(identifier: Any) -> Any:
    """A metric (instance or function) from a name, a class name, an instance or a function.

    >>> get("sparse_categorical_accuracy").name
    'sparse_categorical_accuracy'
    """
    if isinstance(identifier, Metric) or (
        callable(identifier) and not isinstance(identifier, type)
    ):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _CLASSES.get(identifier)
        if cls is not None:
            return cls()
    raise ValueError(
        f"Unknown metric {identifier!r}. Known names: {sorted(_BY_NAME)}; or pass a "
        "tf.keras.metrics.Metric instance or a function (y_true, y_pred) -> values."
    )


def serialize(metric: Metric) -> dict[str, Any]:
    return {"class_name": type(metric).__name__, "config": metric.get_config()}


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Metric:
    """A metric from `serialize`'s output; its class must be built in, registered, or in
    `custom_objects` (nothing else is looked up).

    >>> deserialize({"class_name": "Mean", "config": {"name": "m"}}).name
    'm'
    """
    return serialization.deserialize_keras_object(
        config, _CLASSES, custom_objects, printable_module_name="metric"
    )
