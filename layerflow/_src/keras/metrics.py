"""`tf.keras.metrics`: stateful metrics whose state lives in non-trainable variables.

Metrics need no gradients, so `update_state` computes on the backend arrays directly (on the
device the values live on) and accumulates into its variables in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.utils import naming


def _arr(x: Any) -> Any:
    """The backend array of a tensor, or a host array for anything else."""
    if isinstance(x, TensorLike):
        return x._data
    return np.asarray(x)


def _xp(a: Any) -> Any:
    return backend.array_device(a).xp if not isinstance(a, np.ndarray) else np


def _float(a: Any, xp: Any) -> Any:
    return a if a.dtype.kind == "f" else a.astype(xp.float32)


class Metric(Trackable):
    """Base class: subclasses create state with `add_weight` and implement `update_state`
    and `result`.

    >>> m = Mean()
    >>> m.update_state([1.0, 2.0, 3.0])
    >>> float(m.result())
    2.0
    >>> m.reset_state(); float(m.result())
    0.0
    """

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        self.name = name or naming.to_snake_case(type(self).__name__)
        self._dtype = np.dtype(str(getattr(dtype, "name", dtype or "float32")))
        self._weights: list[Variable] = []
        self._weight_names: list[str] = []

    @property
    def dtype(self) -> Any:
        from layerflow._src.framework import dtypes

        return dtypes.from_numpy(self._dtype)

    def add_weight(
        self,
        name: str,
        shape: Any = (),
        initializer: str = "zeros",
        dtype: Any = None,
        **kwargs: Any,
    ) -> Variable:
        dt = self._dtype if dtype is None else np.dtype(str(getattr(dtype, "name", dtype)))
        value = np.zeros(tuple(shape), dtype=dt)
        if initializer == "ones":
            value += 1
        with naming.name_scope(None), naming.name_scope(self.name):
            v = Variable(value, trainable=False, name=name)
        self._weights.append(v)
        self._weight_names.append(name)
        return v

    @property
    def variables(self) -> list[Variable]:
        return list(self._weights)

    weights = variables
    non_trainable_weights = variables

    @property
    def trainable_weights(self) -> list[Variable]:
        return []

    def _trackable_children(self) -> dict[str, Any]:
        return dict(zip(self._weight_names, self._weights))

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Metric '{type(self).__name__}' must implement update_state().")

    def result(self) -> Tensor:
        raise NotImplementedError(f"Metric '{type(self).__name__}' must implement result().")

    def reset_state(self) -> None:
        """Zero every state variable (in place)."""
        for v in self._weights:
            v._write(np.zeros(v._data.shape, v._data.dtype))

    reset_states = reset_state

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self._dtype.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        return cls(**config)

    def _scalar(self, value: Any) -> Tensor:
        device = self._weights[0]._device if self._weights else backend.current_device()
        xp = device.xp
        return Tensor(xp.asarray(value, dtype=self._dtype), device)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def _weighted(values: Any, sample_weight: Any, xp: Any) -> tuple[Any, Any]:
    """(sum of weighted values, sum of weights) as Keras' Mean reduces them."""
    values = _float(values, xp)
    if sample_weight is None:
        return values.sum(dtype=np.float64), float(values.size)
    w = xp.asarray(_arr(sample_weight), dtype=values.dtype)
    # Keras squeezes or expands the weight to the values' rank, then broadcasts.
    while w.ndim > values.ndim and w.shape[-1] == 1:
        w = w[..., 0]
    while w.ndim < values.ndim:
        w = w[..., None]
    w = xp.broadcast_to(w, values.shape)
    return (values * w).sum(dtype=np.float64), float(w.sum(dtype=np.float64))


class Reduce(Metric):
    def __init__(self, reduction: str, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction == "mean":
            self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        a = _arr(values)
        xp = _xp(a)
        total, count = _weighted(a, sample_weight, xp)
        self.total._data += self._dtype.type(total)
        if self.reduction == "mean":
            self.count._data += self._dtype.type(count)

    def result(self) -> Tensor:
        if self.reduction == "sum":
            return self._scalar(self.total._data)
        count = float(self.count._data)
        return self._scalar(float(self.total._data) / count if count else 0.0)


class Mean(Reduce):
    """The (weighted) mean of the values seen."""

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__("mean", name=name, dtype=dtype)


class Sum(Reduce):
    """The (weighted) sum of the values seen.

    >>> s = Sum(); s.update_state([1.0, 2.0]); float(s.result())
    3.0
    """

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__("sum", name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred)` over every sample seen."""

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, dtype: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric_wrapper"), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(values, sample_weight)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._fn_kwargs}


# --- metric functions on arrays (each returns one value per sample) ------------------------------


def _pair(y_true: Any, y_pred: Any) -> tuple[Any, Any, Any]:
    t, p = _arr(y_true), _arr(y_pred)
    xp = _xp(p)
    if xp is not np and isinstance(t, np.ndarray):
        t = xp.asarray(t)
    return t, p, xp


def _squeeze_last(t: Any, p_ndim: int) -> Any:
    if t.ndim == p_ndim and t.ndim > 0 and t.shape[-1] == 1:
        return t[..., 0]
    return t


def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where `y_true == y_pred` elementwise."""
    t, p, xp = _pair(y_true, y_pred)
    if t.ndim == p.ndim + 1 and t.shape[-1] == 1:
        t = t[..., 0]
    return (t == p.astype(t.dtype) if t.dtype != p.dtype else t == p).astype(xp.float32)


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where the argmax of `y_pred` equals the integer label `y_true`."""
    t, p, xp = _pair(y_true, y_pred)
    t = _squeeze_last(t, p.ndim)
    pred = p.argmax(axis=-1)
    return (pred == t.astype(pred.dtype)).astype(xp.float32)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where the argmax of `y_pred` equals the argmax of the one-hot `y_true`."""
    t, p, xp = _pair(y_true, y_pred)
    return (p.argmax(axis=-1) == t.argmax(axis=-1)).astype(xp.float32)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """Mean over the last axis of `(y_pred > threshold) == y_true`."""
    t, p, xp = _pair(y_true, y_pred)
    if t.ndim == p.ndim - 1:
        t = t[..., None]
    hit = ((p > threshold).astype(xp.float32) == t.astype(xp.float32)).astype(xp.float32)
    return hit.mean(axis=-1) if hit.ndim else hit


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the true class (argmax of one-hot `y_true`) is among the top `k` predictions."""
    t, p, xp = _pair(y_true, y_pred)
    return _in_top_k(p, t.argmax(axis=-1), k, xp)


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    t, p, xp = _pair(y_true, y_pred)
    return _in_top_k(p, _squeeze_last(t, p.ndim).astype(np.int64), k, xp)


def _in_top_k(p: Any, labels: Any, k: int, xp: Any) -> Any:
    # TF's in_top_k: the target's score beats all but fewer than k others (ties count as in).
    target = xp.take_along_axis(p, labels.reshape(-1, 1).astype(np.int64), axis=-1)
    better = (p > target).sum(axis=-1)
    return (better < k).astype(xp.float32)


def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    t, p, xp = _pair(y_true, y_pred)
    d = _float(p, xp) - t.astype(_float(p, xp).dtype)
    return (d * d).mean(axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    t, p, xp = _pair(y_true, y_pred)
    return xp.abs(_float(p, xp) - t.astype(_float(p, xp).dtype)).mean(axis=-1)


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


# --- confusion-matrix metrics ---------------------------------------------------------------------


def _confusion_inputs(
    y_true: Any, y_pred: Any, sample_weight: Any, class_id: int | None, top_k: int | None
) -> tuple[Any, Any, Any, Any]:
    t, p, xp = _pair(y_true, y_pred)
    p = _float(p, xp)
    t = t.astype(p.dtype).reshape(p.shape) if t.size == p.size else t.astype(p.dtype)
    if top_k is not None:
        kth = xp.sort(p, axis=-1)[..., -top_k][..., None]
        p = xp.where(p >= kth, p, xp.asarray(-np.inf, dtype=p.dtype))
    if class_id is not None:
        t, p = t[..., class_id], p[..., class_id]
    w = None
    if sample_weight is not None:
        w = xp.asarray(_arr(sample_weight), dtype=p.dtype)
        while w.ndim < p.ndim:
            w = w[..., None]
        w = xp.broadcast_to(w, p.shape).reshape(-1)
    return t.reshape(-1), p.reshape(-1), w, xp


def _counts(t: Any, p: Any, w: Any, thresholds: Any, xp: Any) -> tuple[Any, Any, Any, Any]:
    """tp, fp, tn, fn at each threshold (prediction > threshold is positive)."""
    above = p[None, :] > thresholds[:, None]
    pos = (t > 0.5)[None, :]
    ww = xp.ones_like(p) if w is None else w
    tp = (above & pos).astype(p.dtype) @ ww
    fp = (above & ~pos).astype(p.dtype) @ ww
    fn = (~above & pos).astype(p.dtype) @ ww
    tn = (~above & ~pos).astype(p.dtype) @ ww
    return tp, fp, tn, fn


class _Confusion(Metric):
    def __init__(
        self,
        thresholds: Any,
        top_k: int | None,
        class_id: int | None,
        name: str | None,
        dtype: Any,
        default: float,
    ) -> None:
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        t = [default] if thresholds is None else np.atleast_1d(thresholds).tolist()
        for x in t:
            if not 0.0 <= float(x) <= 1.0:
                raise ValueError(f"{type(self).__name__}: thresholds must be in [0, 1], got {x}.")
        self.thresholds = [float(x) for x in t]
        self.top_k = top_k
        self.class_id = class_id
        n = len(self.thresholds)
        self.true_positives = self.add_weight("true_positives", (n,))
        self.false_positives = self.add_weight("false_positives", (n,))
        self.false_negatives = self.add_weight("false_negatives", (n,))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        t, p, w, xp = _confusion_inputs(y_true, y_pred, sample_weight, self.class_id, self.top_k)
        th = xp.asarray(self.thresholds, dtype=p.dtype)
        tp, fp, _, fn = _counts(t, p, w, th, xp)
        self.true_positives._data += tp.astype(self._dtype)
        self.false_positives._data += fp.astype(self._dtype)
        self.false_negatives._data += fn.astype(self._dtype)

    def _ratio(self, num: Any, den: Any) -> Tensor:
        xp = _xp(num)
        out = xp.where(den > 0, num / xp.where(den > 0, den, 1), 0).astype(self._dtype)
        return Tensor(out[0] if len(self.thresholds) == 1 else out, self._weights[0]._device)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "thresholds": self.init_thresholds,
            "top_k": self.top_k,
            "class_id": self.class_id,
        }


class Precision(_Confusion):
    """tp / (tp + fp) at each threshold (0.5 by default).

    >>> m = Precision(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); round(float(m.result()), 4)
    0.6667
    """

    def __init__(
        self,
        thresholds: Any = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(thresholds, top_k, class_id, name or "precision", dtype, 0.5)

    def result(self) -> Tensor:
        tp, fp = self.true_positives._data, self.false_positives._data
        return self._ratio(tp, tp + fp)


class Recall(_Confusion):
    """tp / (tp + fn) at each threshold (0.5 by default)."""

    def __init__(
        self,
        thresholds: Any = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(thresholds, top_k, class_id, name or "recall", dtype, 0.5)

    def result(self) -> Tensor:
        tp, fn = self.true_positives._data, self.false_negatives._data
        return self._ratio(tp, tp + fn)


class AUC(Metric):
    """Area under the ROC (or PR) curve, from confusion counts at `num_thresholds` thresholds.

    ROC uses the trapezoidal rule (Keras' "interpolation"); PR uses Davis & Goadrich's
    interpolation, as Keras does.
    """

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: Any = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ) -> None:
        super().__init__(name=name or "auc", dtype=dtype)
        curve = curve.upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR', got {curve!r}.")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(
                "AUC: summation_method must be 'interpolation', 'minoring' or 'majoring', got "
                f"{summation_method!r}."
            )
        if thresholds is not None:
            inner = sorted(float(x) for x in thresholds)
            num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds}.")
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        eps = 1e-7
        self.thresholds = [0.0 - eps] + inner + [1.0 + eps]
        self.num_thresholds = num_thresholds
        self.curve = curve
        self.summation_method = summation_method
        self.from_logits = from_logits
        self.multi_label = multi_label
        n = num_thresholds
        self.true_positives = self.add_weight("true_positives", (n,))
        self.true_negatives = self.add_weight("true_negatives", (n,))
        self.false_positives = self.add_weight("false_positives", (n,))
        self.false_negatives = self.add_weight("false_negatives", (n,))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        t, p, w, xp = _confusion_inputs(y_true, y_pred, sample_weight, None, None)
        if self.from_logits:
            p = 1.0 / (1.0 + xp.exp(-p))
        th = xp.asarray(self.thresholds, dtype=np.float64)
        tp, fp, tn, fn = _counts(
            t.astype(np.float64),
            p.astype(np.float64),
            None if w is None else w.astype(np.float64),
            th,
            xp,
        )
        self.true_positives._data += tp.astype(self._dtype)
        self.false_positives._data += fp.astype(self._dtype)
        self.true_negatives._data += tn.astype(self._dtype)
        self.false_negatives._data += fn.astype(self._dtype)

    def result(self) -> Tensor:
        tp = backend.to_host(self.true_positives._data).astype(np.float64)
        fp = backend.to_host(self.false_positives._data).astype(np.float64)
        tn = backend.to_host(self.true_negatives._data).astype(np.float64)
        fn = backend.to_host(self.false_negatives._data).astype(np.float64)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._scalar(_interpolate_pr_auc(tp, fp, fn))
        rec = _div(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _div(fp, fp + tn), rec
        else:
            x, y = rec, _div(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return self._scalar(float(np.sum((x[:-1] - x[1:]) * heights)))

    def reset_state(self) -> None:
        super().reset_state()

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_thresholds": self.num_thresholds,
            "curve": self.curve,
            "summation_method": self.summation_method,
            "from_logits": self.from_logits,
        }


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


def _interpolate_pr_auc(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> float:
    """Davis & Goadrich (2006) interpolation of the PR curve, as Keras computes it."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    prec_slope = _div(dtp, np.maximum(dp, 0))
    intercept = tp[1:] - prec_slope * p[1:]
    safe_p_ratio = np.where(
        (p[:-1] > 0) & (p[1:] > 0), _div(p[:-1], np.maximum(p[1:], 0)), np.ones_like(p[1:])
    )
    pr_auc_increment = _div(
        prec_slope * (dtp + intercept * np.log(safe_p_ratio)), np.maximum(tp[1:] + fn[1:], 0)
    )
    return float(np.sum(pr_auc_increment))


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
    table = {**_CLASSES, **(custom_objects or {})}
    cls = table.get(config.get("class_name", ""))
    if cls is None:
        raise ValueError(f"Unknown metric class {config.get('class_name')!r}.")
    return cls.from_config(config.get("config", {}))
