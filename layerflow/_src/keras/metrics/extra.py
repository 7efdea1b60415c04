"""More of Keras 2's metrics: the losses as streaming means (hinge family, KL divergence,
Poisson, log-cosh, cosine similarity, MAPE, MSLE, cross-entropies), RootMeanSquaredError,
MeanRelativeError, MeanTensor, F1Score/FBetaScore and R2Score.

Metrics need no gradients: the loss functions run with recording stopped, and the score
metrics accumulate into their variables from the backend arrays.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.losses import core as losses
from layerflow._src.keras.losses import extra as losses_extra
from layerflow._src.keras.metrics.base_metric import (
    Mean,
    MeanMetricWrapper,
    Metric,
    _arr,
    _pair,
    _xp,
)

_EPS = 1e-7


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """The metric form: `sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)` (1 is best)."""
    t, p, xp = _pair(y_true, y_pred)
    p = p.astype(np.float32) if p.dtype.kind != "f" else p
    t = t.astype(p.dtype)

    def norm(a: Any) -> Any:
        return a / xp.sqrt(xp.maximum((a * a).sum(axis=axis, keepdims=True), 1e-12))

    return (norm(t) * norm(p)).sum(axis=axis)


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
        t, p, _ = _pair(y_true, y_pred)
        p = p if p.dtype.kind == "f" else p.astype(self._dtype)
        t = t.astype(p.dtype)
        if t.ndim == p.ndim + 1 and t.shape[-1] == 1:
            t = t[..., 0]
        elif p.ndim == t.ndim + 1 and p.shape[-1] == 1:
            p = p[..., 0]
        super().update_state((p - t) ** 2, sample_weight)

    def result(self) -> Tensor:
        count = float(self.count._data)
        return self._scalar(math.sqrt(float(self.total._data) / count) if count else 0.0)


class MeanRelativeError(Mean):
    """The mean of `|y_true - y_pred| / normalizer` (0 where the normalizer is 0).

    >>> m = MeanRelativeError(normalizer=[1.0, 2.0]); m.update_state([1.0, 2.0], [2.0, 4.0])
    >>> float(m.result())
    1.0
    """

    def __init__(self, normalizer: Any, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name or "mean_relative_error", dtype=dtype)
        self.normalizer = np.asarray(_arr(normalizer), dtype=self._dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        t, p, xp = _pair(y_true, y_pred)
        p = p.astype(self._dtype)
        t = t.astype(self._dtype)
        n = xp.broadcast_to(xp.asarray(self.normalizer), p.shape)
        rel = xp.where(n != 0, xp.abs(t - p) / xp.where(n != 0, n, 1), 0)
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
        v = _arr(values)
        xp = _xp(v)
        v = v.astype(self._dtype)
        if not self._weights:
            self._build(tuple(v.shape))
        elif tuple(v.shape) != self._shape:
            raise ValueError(
                f"MeanTensor '{self.name}' was built for values of shape {self._shape}, got "
                f"shape {tuple(v.shape)}; every update must have the same shape."
            )
        w = xp.ones_like(v) if sample_weight is None else xp.broadcast_to(
            xp.asarray(_arr(sample_weight), dtype=v.dtype), v.shape
        )  # fmt: skip
        self.total._data += v * w
        self.count._data += w

    def result(self) -> Tensor:
        if not self._weights:
            raise ValueError(
                f"MeanTensor '{self.name}' has no result before its first update_state(): the "
                "shape of the values is not known yet."
            )
        total, count = self.total._data, self.count._data
        xp = _xp(total)
        out = xp.where(count != 0, total / xp.where(count != 0, count, 1), 0).astype(self._dtype)
        return Tensor(out, self.total._device)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "shape": None if self._shape is None else list(self._shape)}


def _host(a: Any) -> np.ndarray:
    return np.asarray(backend.to_host(a))


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
        t, p, xp = _pair(y_true, y_pred)
        t, p = t.astype(self._dtype), p.astype(self._dtype)
        if not self.built:
            self._build(tuple(t.shape), tuple(p.shape))
        if self.threshold is None:
            top = p.max(axis=-1, keepdims=True)
            p = ((p >= top) & (xp.abs(p) > 1e-12)).astype(self._dtype)
        else:
            p = (p > self.threshold).astype(self._dtype)
        w = None if sample_weight is None else xp.asarray(_arr(sample_weight), self._dtype)

        def wsum(v: Any) -> Any:
            if w is not None:
                v = v * w.reshape(-1, 1)
            return v.sum(axis=self.axis)

        self.true_positives._data += wsum(p * t)
        self.false_positives._data += wsum(p * (1 - t))
        self.false_negatives._data += wsum((1 - p) * t)
        self.intermediate_weights._data += wsum(t)

    def result(self) -> Tensor:
        if not self.built:
            return self._scalar(0.0)
        tp = _host(self.true_positives._data).astype(np.float64)
        fp, fn = _host(self.false_positives._data), _host(self.false_negatives._data)
        precision = tp / (tp + fp + _EPS)
        recall = tp / (tp + fn + _EPS)
        b2 = self.beta**2
        f = precision * recall / (b2 * precision + recall + _EPS) * (1 + b2)
        if self.average == "weighted":
            iw = _host(self.intermediate_weights._data)
            f = np.sum(f * iw / (iw.sum() + _EPS))
        elif self.average is not None:
            f = np.mean(f)
        return Tensor(
            self._weights[0]._device.xp.asarray(f, dtype=self._dtype), self._weights[0]._device
        )

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
        t, p, xp = _pair(y_true, y_pred)
        t, p = t.astype(self._dtype), p.astype(self._dtype)
        if not self.built:
            self._build(tuple(t.shape), tuple(p.shape))
        w = xp.asarray(1 if sample_weight is None else _arr(sample_weight), dtype=self._dtype)
        if w.ndim == 1:
            w = w[:, None]
        w = xp.broadcast_to(w, t.shape)
        self.sum._data += (t * w).sum(axis=0)
        self.squared_sum._data += (t * t * w).sum(axis=0)
        self.total_mse._data += ((t - p) ** 2 * w).sum(axis=0)
        self.count._data += w.sum(axis=0)
        self.num_samples._data += np.int32(t.size)

    def result(self) -> Tensor:
        if not self.built:
            return self._scalar(0.0)
        s, sq = _host(self.sum._data).astype(np.float64), _host(self.squared_sum._data)
        mse, count = _host(self.total_mse._data), _host(self.count._data)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = sq - s * (s / count)
            raw = 1 - mse / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        if self.class_aggregation == "uniform_average":
            r2 = np.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            r2 = np.sum(total * raw) / np.sum(total)
        else:
            r2 = raw
        n = int(_host(self.num_samples._data))
        if self.num_regressors:
            if self.num_regressors > n - 1:
                warnings.warn(
                    "More independent predictors than datapoints in adjusted R2 score. Falling "
                    "back to standard R2 score.",
                    stacklevel=2,
                )
            elif self.num_regressors == n - 1:
                warnings.warn(
                    "Division by zero in Adjusted R2 score. Falling back to standard R2 score.",
                    stacklevel=2,
                )
            else:
                r2 = 1.0 - (1.0 - r2) * (n - 1.0) / (n - self.num_regressors - 1.0)
        dev = self._weights[0]._device
        return Tensor(dev.xp.asarray(r2, dtype=self._dtype), dev)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "class_aggregation": self.class_aggregation,
            "num_regressors": self.num_regressors,
        }
