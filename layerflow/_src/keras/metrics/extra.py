"""More of Keras 2's metrics: the losses as streaming means (hinge family, KL divergence,
Poisson, log-cosh, cosine similarity, MAPE, MSLE, cross-entropies), RootMeanSquaredError,
MeanRelativeError, MeanTensor, F1Score/FBetaScore and R2Score.

Metrics need no gradients: the loss functions run with recording stopped, and the score
metrics accumulate what the gradient-free ops of `ops/metric_ops.py` compute.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.losses import core as losses
from layerflow._src.keras.losses import extra as losses_extra
from layerflow._src.keras.metrics.base_metric import Mean, MeanMetricWrapper, Metric
from layerflow._src.ops import metric_ops

# The metric form: `sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)` (1 is best).
cosine_similarity = metric_ops.cosine_similarity


def _shape_of(x: Any) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


class _LossMetric(MeanMetricWrapper):
    """The mean of a loss function's per-sample values (computed with recording stopped)."""

    _fn: Callable[..., Any]
    _default_name = ""

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(type(self)._fn, name or self._default_name, dtype=dtype, **kwargs)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        with stop_recording_all():
            super().update_state(y_true, y_pred, sample_weight)


def _metric(class_name: str, fn: Callable[..., Any], default: str, doc: str) -> type:
    def __init__(self: Any, name: str = default, dtype: Any = None) -> None:
        _LossMetric.__init__(self, name=name, dtype=dtype)

    return type(class_name, (_LossMetric,), {
        "__init__": __init__, "_fn": staticmethod(fn), "_default_name": default,
        "__doc__": doc, "__module__": __name__, "__qualname__": class_name,
    })  # fmt: skip


E = losses_extra
Hinge = _metric("Hinge", E.hinge, "hinge", "The mean hinge loss.")
SquaredHinge = _metric("SquaredHinge", E.squared_hinge, "squared_hinge", "The squared hinge.")
CategoricalHinge = _metric(
    "CategoricalHinge", E.categorical_hinge, "categorical_hinge", "The categorical hinge."
)
KLDivergence = _metric(
    "KLDivergence", losses.kl_divergence, "kullback_leibler_divergence",
    "The mean Kullback-Leibler divergence between y_true and y_pred.",
)  # fmt: skip
Poisson = _metric("Poisson", E.poisson, "poisson", "The mean Poisson loss.")
LogCoshError = _metric("LogCoshError", E.log_cosh, "logcosh", "The mean log(cosh(error)).")
MeanAbsolutePercentageError = _metric(
    "MeanAbsolutePercentageError", E.mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "100 * the mean |y_true - y_pred| / |y_true|.",
)  # fmt: skip
MeanSquaredLogarithmicError = _metric(
    "MeanSquaredLogarithmicError", E.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "The mean squared error of log(1 + y).",
)  # fmt: skip


class CosineSimilarity(_LossMetric):
    """The mean cosine similarity of label and prediction vectors along `axis`.

    >>> m = CosineSimilarity(); m.update_state([[0.0, 1.0]], [[0.0, 2.0]]); float(m.result())
    1.0
    """

    _fn = staticmethod(cosine_similarity)

    def __init__(self, name: str = "cosine_similarity", dtype: Any = None, axis: int = -1) -> None:
        super().__init__(name=name, dtype=dtype, axis=axis)


class BinaryCrossentropy(_LossMetric):
    """The mean binary cross-entropy (`from_logits`, `label_smoothing` as the loss)."""

    _fn = staticmethod(losses.binary_crossentropy)

    def __init__(self, name: str = "binary_crossentropy", dtype: Any = None,
                 from_logits: bool = False, label_smoothing: float = 0) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)  # fmt: skip


class CategoricalCrossentropy(_LossMetric):
    """The mean categorical cross-entropy of one-hot labels."""

    _fn = staticmethod(losses.categorical_crossentropy)

    def __init__(self, name: str = "categorical_crossentropy", dtype: Any = None,
                 from_logits: bool = False, label_smoothing: float = 0,
                 axis: int = -1) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)  # fmt: skip


class SparseCategoricalCrossentropy(_LossMetric):
    """The mean cross-entropy of integer labels."""

    _fn = staticmethod(losses.sparse_categorical_crossentropy)

    def __init__(self, name: str = "sparse_categorical_crossentropy", dtype: Any = None,
                 from_logits: bool = False, ignore_class: int | None = None,
                 axis: int = -1) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype, from_logits=from_logits,
                         ignore_class=ignore_class, axis=axis)  # fmt: skip


class RootMeanSquaredError(Mean):
    """`sqrt(mean((y_pred - y_true) ** 2))` over every element seen (weighted).

    >>> m = RootMeanSquaredError(); m.update_state([[0.0, 1.0]], [[1.0, 1.0]])
    >>> round(float(m.result()), 4)
    0.7071
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        squared = metric_ops.squared_error(y_true, y_pred, self.dtype)
        super().update_state(squared, sample_weight)

    def result(self) -> Tensor:
        return metric_ops.sqrt_ratio(self.total, self.count)


class MeanRelativeError(Mean):
    """The mean of `|y_true - y_pred| / normalizer` (0 where the normalizer is 0).

    >>> m = MeanRelativeError(normalizer=[1.0, 2.0]); m.update_state([1.0, 2.0], [2.0, 4.0])
    >>> float(m.result())
    1.0
    """

    def __init__(self, normalizer: Any, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name or "mean_relative_error", dtype=dtype)
        self.normalizer = np.asarray(normalizer, dtype=self.dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        rel = metric_ops.relative_error(y_true, y_pred, self.normalizer, self.dtype)
        super().update_state(rel, sample_weight)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "normalizer": self.normalizer.tolist()}


class MeanTensor(Metric):
    """The elementwise (weighted) mean of every tensor seen; all must share one shape.

    >>> m = MeanTensor(); m.update_state([0.0, 1.0]); m.update_state([2.0, 3.0])
    >>> m.result().numpy()
    array([1., 2.], dtype=float32)
    """

    def __init__(self, name: str = "mean_tensor", dtype: Any = None, shape: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self._shape = None if shape is None else tuple(int(d) for d in shape)
        if self._shape is not None:
            self._build(self._shape)

    def _build(self, shape: tuple) -> None:
        self._shape = shape
        self.total = self.add_weight("total", shape)
        self.count = self.add_weight("count", shape)

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        weighted, w = metric_ops.weighted_values(values, sample_weight, self.dtype)
        if not self.weights:
            self._build(tuple(weighted.shape))
        elif tuple(weighted.shape) != self._shape:
            raise ValueError(
                f"MeanTensor '{self.name}' was built for values of shape {self._shape}, got "
                f"shape {tuple(weighted.shape)}; every update must have the same shape."
            )
        self.total.assign_add(weighted)
        self.count.assign_add(w)

    def result(self) -> Tensor:
        if not self.weights:
            raise ValueError(
                f"MeanTensor '{self.name}' has no result before its first update_state(): the "
                "shape of the values is not known yet."
            )
        return metric_ops.ratio(self.total, self.count)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "shape": None if self._shape is None else list(self._shape)}


class FBetaScore(Metric):
    """F-beta per class (`average=None`) or averaged ("micro", "macro", "weighted"); predictions
    above `threshold` count as positive (default: the row's maximum is the positive).

    >>> m = FBetaScore(beta=1.0); m.update_state([[1, 0], [0, 1]], [[0.9, 0.1], [0.6, 0.4]])
    >>> m.result().numpy().round(4)
    array([0.6667, 0.    ], dtype=float32)
    """

    def __init__(self, average: str | None = None, beta: float = 1.0,
                 threshold: float | None = None, name: str = "fbeta_score",
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(
                "Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                f"'weighted'}}. Received: average={average!r}"
            )
        if not isinstance(beta, float):
            raise ValueError(
                f"Invalid `beta` argument value. It should be a Python float. Received: "
                f"beta={beta!r} of type {type(beta).__name__!r}"
            )
        if beta <= 0.0:
            raise ValueError(f"Invalid `beta` argument value. It should be > 0. Received: {beta}")
        if threshold is not None and (not isinstance(threshold, float) or not 0 < threshold <= 1):
            raise ValueError(
                "Invalid `threshold` argument value. It should be a Python float in the range "
                f"]0, 1]. Received: threshold={threshold!r}"
            )
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self.built = False

    def _build(self, t_shape: tuple, p_shape: tuple) -> None:
        if len(p_shape) != 2 or len(t_shape) != 2:
            raise ValueError(
                f"{type(self).__name__} expects 2D inputs with shape (batch_size, output_dim). "
                f"Received input shapes: y_pred.shape={p_shape} and y_true.shape={t_shape}."
            )
        shape = () if self.average == "micro" else (p_shape[-1],)
        self.true_positives = self.add_weight("true_positives", shape)
        self.false_positives = self.add_weight("false_positives", shape)
        self.false_negatives = self.add_weight("false_negatives", shape)
        self.intermediate_weights = self.add_weight("intermediate_weights", shape)
        self.built = True

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        if not self.built:
            self._build(_shape_of(y_true), _shape_of(y_pred))
        tp, fp, fn, iw = metric_ops.fbeta_counts(
            y_true, y_pred, sample_weight, self.threshold, self.axis, self.dtype
        )
        self.true_positives.assign_add(tp)
        self.false_positives.assign_add(fp)
        self.false_negatives.assign_add(fn)
        self.intermediate_weights.assign_add(iw)

    def result(self) -> Tensor:
        if not self.built:
            return self._scalar(0.0)
        return metric_ops.fbeta(
            self.true_positives, self.false_positives, self.false_negatives,
            self.intermediate_weights, self.beta, self.average,
        )  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "average": self.average,
            "beta": self.beta,
            "threshold": self.threshold,
        }


class F1Score(FBetaScore):
    """The harmonic mean of precision and recall (FBetaScore with beta = 1).

    >>> m = F1Score(average="micro"); m.update_state([[1, 0], [0, 1]], [[0.9, 0.1], [0.6, 0.4]])
    >>> round(float(m.result()), 4)
    0.5
    """

    def __init__(self, average: str | None = None, threshold: float | None = None,
                 name: str = "f1_score", dtype: Any = None) -> None:  # fmt: skip
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["beta"]
        return config


class R2Score(Metric):
    """The coefficient of determination per output, aggregated by `class_aggregation`
    ("uniform_average", "variance_weighted_average" or None); `num_regressors` > 0 gives the
    adjusted R2.

    >>> m = R2Score(); m.update_state([[1.0], [2.0], [3.0]], [[1.0], [2.0], [4.0]])
    >>> float(m.result())
    0.5
    """

    def __init__(self, class_aggregation: str | None = "uniform_average",
                 num_regressors: int = 0, name: str = "r2_score",
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError(
                f"Invalid value for argument `class_aggregation`. Expected one of {valid}. "
                f"Received: class_aggregation={class_aggregation!r}"
            )
        if num_regressors < 0:
            raise ValueError(
                "Invalid value for argument `num_regressors`. Expected a value >= 0. Received: "
                f"num_regressors={num_regressors}"
            )
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_weight("num_samples", dtype="int32")
        self.built = False

    def _build(self, t_shape: tuple, p_shape: tuple) -> None:
        if len(p_shape) != 2 or len(t_shape) != 2:
            raise ValueError(
                "R2Score expects 2D inputs with shape (batch_size, output_dim). Received input "
                f"shapes: y_pred.shape={p_shape} and y_true.shape={t_shape}."
            )
        n = p_shape[-1]
        self.squared_sum = self.add_weight("squared_sum", (n,))
        self.sum = self.add_weight("sum", (n,))
        self.total_mse = self.add_weight("residual", (n,))
        self.count = self.add_weight("count", (n,))
        self.built = True

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        if not self.built:
            self._build(_shape_of(y_true), _shape_of(y_pred))
        s, sq, mse, count, n = metric_ops.r2_sums(y_true, y_pred, sample_weight, self.dtype)
        self.sum.assign_add(s)
        self.squared_sum.assign_add(sq)
        self.total_mse.assign_add(mse)
        self.count.assign_add(count)
        self.num_samples.assign_add(n)

    def result(self) -> Tensor:
        if not self.built:
            return self._scalar(0.0)
        return metric_ops.r2_score(
            self.sum, self.squared_sum, self.total_mse, self.count, self.num_samples,
            self.class_aggregation, self.num_regressors,
        )  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "class_aggregation": self.class_aggregation,
            "num_regressors": self.num_regressors,
        }
