"""The metrics' kernels: gradient-free ops from labels and predictions to the statistics a
metric accumulates, and from its accumulated state to its result.

Keras metrics (`keras/metrics/`) call these ops and write what they return into their
variables with `assign_add`/`assign`, so every state change is an op plus a Variable write
(what a traced `tf.function` records), on the device the values live on. None of these ops
has a gradient: metrics are never differentiated.

Sums are taken in float64 and cast to the metric's dtype, as the former in-place kernels did,
so results are unchanged.

>>> import layerflow as tf
>>> total, count = sum_and_count(tf.constant([1.0, 2.0, 3.0]), None, "float32")
>>> float(total), float(count)
(6.0, 3.0)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op


def _float(a: Any, xp: Any) -> Any:
    return a if a.dtype.kind == "f" else a.astype(xp.float32)


def _pair(values: list[Any]) -> tuple[Any, Any, Any]:
    """(y_true, y_pred, sample_weight or None) of a metric op's input list."""
    return values[0], values[1], values[2] if len(values) > 2 else None


def _host_scalars(*arrays: Any) -> bool:
    """Whether every array is a 0-d NumPy array of floats or ints (the metrics' scalar fast
    paths, whose results equal the array paths' bit for bit)."""
    return all(type(a) is np.ndarray and a.ndim == 0 and a.dtype.kind in "fiu" for a in arrays)


def _inputs(*tensors: Any) -> list[Any]:
    return [t for t in tensors if t is not None]


# --- Mean and Sum ---------------------------------------------------------------------------------
@op("metric_sum_and_count", list_input=True, multi_out=True, same_dtype=False)
def _sum_and_count(xp: Any, values: list[Any], dtype: str) -> Any:
    v = _float(values[0], xp)
    if _host_scalars(v, *values[1:]):
        # A scalar (the loss tracker's batch loss and batch size, every training step): the
        # same float32 product and float64 sums (a sum starts from +0.0) in Python floats.
        if len(values) == 1:
            return np.asarray(float(v) + 0.0, dtype=dtype), np.asarray(1.0, dtype=dtype)
        w = values[1].astype(v.dtype)
        total, count = float(v * w) + 0.0, float(w) + 0.0
        return np.asarray(total, dtype=dtype), np.asarray(count, dtype=dtype)
    if len(values) == 1:
        total, count = v.sum(dtype=np.float64), float(v.size)
    else:
        w = values[1].astype(v.dtype)
        # Keras squeezes or expands the weight to the values' rank, then broadcasts.
        while w.ndim > v.ndim and w.shape[-1] == 1:
            w = w[..., 0]
        while w.ndim < v.ndim:
            w = w[..., None]
        w = xp.broadcast_to(w, v.shape)
        total, count = (v * w).sum(dtype=np.float64), float(w.sum(dtype=np.float64))
    return xp.asarray(total, dtype=dtype), xp.asarray(count, dtype=dtype)


def sum_and_count(values: Any, sample_weight: Any, dtype: str) -> tuple[Any, Any]:
    """The (weighted) sum of `values` and the sum of the weights (the number of values when
    `sample_weight` is None), as `dtype` scalars: what Keras's Mean and Sum accumulate."""
    return _sum_and_count(_inputs(values, sample_weight), dtype)


@op("metric_ratio", 2)
def _ratio(xp: Any, num: Any, den: Any, wide: bool) -> Any:
    if _host_scalars(num, den):  # a metric's result at every step: Python's float division
        if wide:
            d = float(den)
            return np.asarray(float(num) / d if d != 0 else 0.0).astype(num.dtype)
        return np.asarray(num / den if den > 0 else 0).astype(num.dtype)
    if wide:  # in float64, as Python floats divide: Mean's result
        n, d = num.astype(np.float64), den.astype(np.float64)
        return xp.where(d != 0, n / xp.where(d != 0, d, 1.0), 0.0).astype(num.dtype)
    return xp.where(den > 0, num / xp.where(den > 0, den, 1), 0).astype(num.dtype)


def ratio(num: Any, den: Any, wide: bool = False) -> Any:
    """`num / den` elementwise, 0 where `den` is 0 (`wide`: divided in float64)."""
    return _ratio(num, den, bool(wide))


@op("metric_sqrt_ratio", 2)
def _sqrt_ratio(xp: Any, num: Any, den: Any) -> Any:
    n, d = float(backend.to_host(num)), float(backend.to_host(den))
    return xp.asarray(np.sqrt(n / d) if d else 0.0, dtype=num.dtype)


def sqrt_ratio(num: Any, den: Any) -> Any:
    """`sqrt(num / den)` of two scalars, 0 when `den` is 0 (RootMeanSquaredError)."""
    return _sqrt_ratio(num, den)


# --- per-sample metric functions ------------------------------------------------------------------
def _squeeze_last(t: Any, p_ndim: int) -> Any:
    if t.ndim == p_ndim and t.ndim > 0 and t.shape[-1] == 1:
        return t[..., 0]
    return t


@op("accuracy_values", 2, same_dtype=False)
def accuracy(xp: Any, t: Any, p: Any) -> Any:
    """1.0 where `y_true == y_pred` elementwise."""
    if t.ndim == p.ndim + 1 and t.shape[-1] == 1:
        t = t[..., 0]
    return (t == p.astype(t.dtype) if t.dtype != p.dtype else t == p).astype(xp.float32)


@op("sparse_categorical_accuracy_values", 2, same_dtype=False)
def sparse_categorical_accuracy(xp: Any, t: Any, p: Any) -> Any:
    """1.0 where the argmax of `y_pred` equals the integer label `y_true`."""
    t = _squeeze_last(t, p.ndim)
    pred = p.argmax(axis=-1)
    return (pred == t.astype(pred.dtype)).astype(xp.float32)


@op("categorical_accuracy_values", 2, same_dtype=False)
def categorical_accuracy(xp: Any, t: Any, p: Any) -> Any:
    """1.0 where the argmax of `y_pred` equals the argmax of the one-hot `y_true`."""
    return (p.argmax(axis=-1) == t.argmax(axis=-1)).astype(xp.float32)


@op("binary_accuracy_values", 2, same_dtype=False)
def binary_accuracy(xp: Any, t: Any, p: Any, threshold: float = 0.5) -> Any:
    """Mean over the last axis of `(y_pred > threshold) == y_true`."""
    if t.ndim == p.ndim - 1:
        t = t[..., None]
    hit = ((p > threshold).astype(xp.float32) == t.astype(xp.float32)).astype(xp.float32)
    return hit.mean(axis=-1) if hit.ndim else hit


def _in_top_k(xp: Any, p: Any, labels: Any, k: int) -> Any:
    # TF's in_top_k: the target's score beats all but fewer than k others (ties count as in).
    target = xp.take_along_axis(p, labels.reshape(-1, 1).astype(np.int64), axis=-1)
    better = (p > target).sum(axis=-1)
    return (better < k).astype(xp.float32)


@op("top_k_categorical_accuracy_values", 2, same_dtype=False)
def top_k_categorical_accuracy(xp: Any, t: Any, p: Any, k: int = 5) -> Any:
    """1.0 where the true class (argmax of one-hot `y_true`) is among the top `k` predictions."""
    return _in_top_k(xp, p, t.argmax(axis=-1), k)


@op("sparse_top_k_categorical_accuracy_values", 2, same_dtype=False)
def sparse_top_k_categorical_accuracy(xp: Any, t: Any, p: Any, k: int = 5) -> Any:
    """1.0 where the integer label is among the top `k` predictions."""
    return _in_top_k(xp, p, _squeeze_last(t, p.ndim).astype(np.int64), k)


@op("mean_squared_error_values", 2, same_dtype=False)
def mean_squared_error(xp: Any, t: Any, p: Any) -> Any:
    """The mean over the last axis of `(y_pred - y_true) ** 2`."""
    p = _float(p, xp)
    d = p - t.astype(p.dtype)
    return (d * d).mean(axis=-1)


@op("mean_absolute_error_values", 2, same_dtype=False)
def mean_absolute_error(xp: Any, t: Any, p: Any) -> Any:
    """The mean over the last axis of `|y_pred - y_true|`."""
    p = _float(p, xp)
    return xp.abs(p - t.astype(p.dtype)).mean(axis=-1)


@op("cosine_similarity_values", 2, same_dtype=False)
def cosine_similarity(xp: Any, t: Any, p: Any, axis: int = -1) -> Any:
    """`sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)` (1 is best)."""
    p = p.astype(np.float32) if p.dtype.kind != "f" else p
    t = t.astype(p.dtype)

    def norm(a: Any) -> Any:
        return a / xp.sqrt(xp.maximum((a * a).sum(axis=axis, keepdims=True), 1e-12))

    return (norm(t) * norm(p)).sum(axis=axis)


@op("squared_error_values", 2, same_dtype=False)
def squared_error(xp: Any, t: Any, p: Any, dtype: str) -> Any:
    """`(y_pred - y_true) ** 2` elementwise, a trailing axis of 1 squeezed (RMSE)."""
    p = p if p.dtype.kind == "f" else p.astype(dtype)
    t = t.astype(p.dtype)
    if t.ndim == p.ndim + 1 and t.shape[-1] == 1:
        t = t[..., 0]
    elif p.ndim == t.ndim + 1 and p.shape[-1] == 1:
        p = p[..., 0]
    return (p - t) ** 2


@op("relative_error_values", 3, same_dtype=False)
def relative_error(xp: Any, t: Any, p: Any, normalizer: Any, dtype: str) -> Any:
    """`|y_true - y_pred| / normalizer`, 0 where the normalizer is 0."""
    p, t = p.astype(dtype), t.astype(dtype)
    n = xp.broadcast_to(normalizer.astype(dtype), p.shape)
    return xp.where(n != 0, xp.abs(t - p) / xp.where(n != 0, n, 1), 0)


@op("mean_tensor_update", list_input=True, multi_out=True, same_dtype=False)
def _weighted_values(xp: Any, values: list[Any], dtype: str) -> Any:
    v = values[0].astype(dtype)
    w = xp.ones_like(v) if len(values) == 1 else xp.broadcast_to(values[1].astype(dtype), v.shape)
    return v * w, w


def weighted_values(values: Any, sample_weight: Any, dtype: str) -> tuple[Any, Any]:
    """`(values * w, w)` with `w` the weight broadcast to the values (ones when None)."""
    return _weighted_values(_inputs(values, sample_weight), dtype)


# --- confusion counts at thresholds ---------------------------------------------------------------
@op("confusion_counts", list_input=True, multi_out=True, same_dtype=False)
def _confusion_counts(xp: Any, values: list[Any], thresholds: tuple, class_id: Any, top_k: Any,
                      wide: bool, from_logits: bool, dtype: str) -> Any:  # fmt: skip
    t, p, w = _pair(values)
    p = _float(p, xp)
    t = t.astype(p.dtype).reshape(p.shape) if t.size == p.size else t.astype(p.dtype)
    if top_k is not None:
        kth = xp.sort(p, axis=-1)[..., -top_k][..., None]
        p = xp.where(p >= kth, p, xp.asarray(-np.inf, dtype=p.dtype))
    if class_id is not None:
        t, p = t[..., class_id], p[..., class_id]
    if w is not None:
        w = w.astype(p.dtype)
        while w.ndim < p.ndim:
            w = w[..., None]
        w = xp.broadcast_to(w, p.shape).reshape(-1)
    t, p = t.reshape(-1), p.reshape(-1)
    if from_logits:
        p = 1.0 / (1.0 + xp.exp(-p))
    if wide:
        t, p = t.astype(np.float64), p.astype(np.float64)
        w = None if w is None else w.astype(np.float64)
    th = xp.asarray(thresholds, dtype=p.dtype)
    above = p[None, :] > th[:, None]
    pos = (t > 0.5)[None, :]
    ww = xp.ones_like(p) if w is None else w
    counts = [
        (above & pos).astype(p.dtype) @ ww,
        (above & ~pos).astype(p.dtype) @ ww,
        (~above & ~pos).astype(p.dtype) @ ww,
        (~above & pos).astype(p.dtype) @ ww,
    ]
    return tuple(c.astype(dtype) for c in counts)


def confusion_counts(y_true: Any, y_pred: Any, sample_weight: Any, thresholds: Any,
                     dtype: str, class_id: int | None = None, top_k: int | None = None,
                     wide: bool = False, from_logits: bool = False) -> tuple:  # fmt: skip
    """(tp, fp, tn, fn) at each threshold (a prediction above the threshold is positive), as
    `dtype`; `wide` counts in float64 (AUC), `from_logits` applies a sigmoid first."""
    return _confusion_counts(_inputs(y_true, y_pred, sample_weight), tuple(thresholds),
                             class_id, top_k, bool(wide), bool(from_logits), dtype)  # fmt: skip


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


def _host64(values: list[Any]) -> list[np.ndarray]:
    return [np.asarray(backend.to_host(v), dtype=np.float64) for v in values]


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


@op("auc_from_counts", list_input=True)
def _auc(xp: Any, values: list[Any], curve: str, summation_method: str) -> Any:
    tp, fp, tn, fn = _host64(values)
    dt = values[0].dtype
    if curve == "PR" and summation_method == "interpolation":
        return xp.asarray(_interpolate_pr_auc(tp, fp, fn), dtype=dt)
    rec = _div(tp, tp + fn)
    x, y = (_div(fp, fp + tn), rec) if curve == "ROC" else (rec, _div(tp, tp + fp))
    if summation_method == "interpolation":
        heights = (y[:-1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        heights = np.minimum(y[:-1], y[1:])
    else:
        heights = np.maximum(y[:-1], y[1:])
    return xp.asarray(float(np.sum((x[:-1] - x[1:]) * heights)), dtype=dt)


def auc(tp: Any, fp: Any, tn: Any, fn: Any, curve: str, summation_method: str) -> Any:
    """The area under the ROC or PR curve from confusion counts at sorted thresholds."""
    return _auc([tp, fp, tn, fn], curve, summation_method)


@op("best_rate_under_constraint", list_input=True)
def _best_rate(xp: Any, values: list[Any], constrained: str, dependent: str, value: float) -> Any:
    tp, fp, tn, fn = _host64(values)
    rates = {
        "sensitivity": _div(tp, tp + fn),
        "recall": _div(tp, tp + fn),
        "specificity": _div(tn, tn + fp),
        "precision": _div(tp, tp + fp),
    }
    feasible = rates[constrained] >= value
    best = float(rates[dependent][feasible].max()) if feasible.any() else 0.0
    return xp.asarray(best, dtype=values[0].dtype)


def best_rate(tp: Any, fp: Any, tn: Any, fn: Any, constrained: str, dependent: str,
              value: float) -> Any:  # fmt: skip
    """The best `dependent` rate over the thresholds where `constrained` >= `value`."""
    return _best_rate([tp, fp, tn, fn], constrained, dependent, float(value))


# --- confusion matrix and IoU ---------------------------------------------------------------------
@op("confusion_matrix_counts", list_input=True, same_dtype=False)
def _confusion_matrix(xp: Any, values: list[Any], n: int, sparse_true: bool, sparse_pred: bool,
                      axis: int, ignore_class: Any, dtype: str, who: str) -> Any:  # fmt: skip
    t, p, w = _pair(values)
    if not sparse_true:
        t = t.argmax(axis=axis)
    if not sparse_pred:
        p = p.argmax(axis=axis)
    if w is not None:
        w = w.astype(dtype)
        w = xp.broadcast_to(w, t.shape) if w.size != t.size else w
        w = w.reshape(-1)
    t = t.astype(dtype).reshape(-1).astype(np.int64)
    p = p.astype(dtype).reshape(-1).astype(np.int64)
    if ignore_class is not None:
        keep = t != ignore_class
        t, p = t[keep], p[keep]
        w = None if w is None else w[keep]
    bad = (t < 0) | (t >= n) | (p < 0) | (p >= n)
    if bool(bad.any()):
        raise _ClassIdError(
            f"{who}: labels and predictions must be class ids in [0, {n}); got labels in "
            f"[{int(t.min())}, {int(t.max())}] and predictions in [{int(p.min())}, "
            f"{int(p.max())}]."
        )
    return xp.bincount(t * n + p, weights=w, minlength=n * n).reshape(n, n).astype(dtype)


class _ClassIdError(TypeError):
    """Carries a bad-class-id message out of the op (which turns ValueErrors into
    InvalidArgumentError); `confusion_matrix_counts` raises it as the ValueError Keras raises."""


def confusion_matrix_counts(y_true: Any, y_pred: Any, sample_weight: Any, num_classes: int,
                            dtype: str, who: str, sparse_y_true: bool = True,
                            sparse_y_pred: bool = True, axis: int = -1,
                            ignore_class: int | None = None) -> Any:  # fmt: skip
    """The (weighted) `num_classes` x `num_classes` confusion matrix of one batch (rows: true
    class), with Keras's IoU input options; class ids out of range are a ValueError naming
    `who`."""
    try:
        return _confusion_matrix(_inputs(y_true, y_pred, sample_weight), int(num_classes),
                                 bool(sparse_y_true), bool(sparse_y_pred), int(axis),
                                 ignore_class, dtype, who)  # fmt: skip
    except _ClassIdError as err:
        raise ValueError(str(err)) from None


@op("iou_from_confusion_matrix")
def _iou(xp: Any, cm: Any, target_class_ids: tuple) -> Any:
    c = np.asarray(backend.to_host(cm), dtype=np.float64)
    tp = np.diag(c)
    denominator = c.sum(axis=0) + c.sum(axis=1) - tp
    ids = list(target_class_ids)
    tp, denominator = tp[ids], denominator[ids]
    valid = float((denominator > 1e-9).sum())
    iou = _div(tp, denominator)
    return xp.asarray(float(iou.sum()) / valid if valid else 0.0, dtype=cm.dtype)


def iou(confusion_matrix: Any, target_class_ids: Any) -> Any:
    """The mean IoU of `target_class_ids` whose union is not empty (0 when none)."""
    return _iou(confusion_matrix, tuple(int(i) for i in target_class_ids))


# --- F-beta and R2 --------------------------------------------------------------------------------
@op("fbeta_counts", list_input=True, multi_out=True, same_dtype=False)
def _fbeta_counts(xp: Any, values: list[Any], threshold: Any, axis: Any, dtype: str) -> Any:
    t, p, w = _pair(values)
    t, p = t.astype(dtype), p.astype(dtype)
    if threshold is None:
        top = p.max(axis=-1, keepdims=True)
        p = ((p >= top) & (xp.abs(p) > 1e-12)).astype(dtype)
    else:
        p = (p > threshold).astype(dtype)
    w = None if w is None else w.astype(dtype)

    def wsum(v: Any) -> Any:
        if w is not None:
            v = v * w.reshape(-1, 1)
        return v.sum(axis=axis)

    return wsum(p * t), wsum(p * (1 - t)), wsum((1 - p) * t), wsum(t)


def fbeta_counts(y_true: Any, y_pred: Any, sample_weight: Any, threshold: float | None,
                 axis: int | None, dtype: str) -> tuple:  # fmt: skip
    """(tp, fp, fn, true counts) of one batch for F-beta (positives above `threshold`, or
    the row's maximum when None), summed over `axis`."""
    return _fbeta_counts(_inputs(y_true, y_pred, sample_weight), threshold, axis, dtype)


_EPS = 1e-7


@op("fbeta_score", list_input=True)
def _fbeta(xp: Any, values: list[Any], beta: float, average: Any) -> Any:
    tp, fp, fn, iw = (np.asarray(backend.to_host(v)) for v in values)
    tp = tp.astype(np.float64)
    precision = tp / (tp + fp + _EPS)
    recall = tp / (tp + fn + _EPS)
    b2 = beta**2
    f = precision * recall / (b2 * precision + recall + _EPS) * (1 + b2)
    if average == "weighted":
        f = np.sum(f * iw / (iw.sum() + _EPS))
    elif average is not None:
        f = np.mean(f)
    return xp.asarray(f, dtype=values[0].dtype)


def fbeta(tp: Any, fp: Any, fn: Any, intermediate_weights: Any, beta: float,
          average: str | None) -> Any:  # fmt: skip
    """F-beta from its accumulated counts, per class or averaged as `average` says."""
    return _fbeta([tp, fp, fn, intermediate_weights], float(beta), average)


@op("r2_sums", list_input=True, multi_out=True, same_dtype=False)
def _r2_sums(xp: Any, values: list[Any], dtype: str) -> Any:
    t, p, w = _pair(values)
    t, p = t.astype(dtype), p.astype(dtype)
    w = xp.asarray(1, dtype=dtype) if w is None else w.astype(dtype)
    if w.ndim == 1:
        w = w[:, None]
    w = xp.broadcast_to(w, t.shape)
    return (
        (t * w).sum(axis=0),
        (t * t * w).sum(axis=0),
        ((t - p) ** 2 * w).sum(axis=0),
        w.sum(axis=0),
        xp.asarray(t.size, dtype=np.int32),
    )


def r2_sums(y_true: Any, y_pred: Any, sample_weight: Any, dtype: str) -> tuple:
    """(sum, squared sum, residual sum, weight sum per output, number of values) of a batch."""
    return _r2_sums(_inputs(y_true, y_pred, sample_weight), dtype)


@op("r2_score", list_input=True, same_dtype=False)
def _r2(xp: Any, values: list[Any], class_aggregation: Any, num_regressors: int) -> Any:
    s, sq, mse, count, n = (np.asarray(backend.to_host(v)) for v in values)
    s = s.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = sq - s * (s / count)
        raw = 1 - mse / total
    raw = np.where(np.isinf(raw), 0.0, raw)
    if class_aggregation == "uniform_average":
        r2 = np.mean(raw)
    elif class_aggregation == "variance_weighted_average":
        r2 = np.sum(total * raw) / np.sum(total)
    else:
        r2 = raw
    n = int(n)
    if num_regressors:
        if num_regressors > n - 1:
            warnings.warn(
                "More independent predictors than datapoints in adjusted R2 score. Falling "
                "back to standard R2 score.",
                stacklevel=4,
            )
        elif num_regressors == n - 1:
            warnings.warn(
                "Division by zero in Adjusted R2 score. Falling back to standard R2 score.",
                stacklevel=4,
            )
        else:
            r2 = 1.0 - (1.0 - r2) * (n - 1.0) / (n - num_regressors - 1.0)
    return xp.asarray(r2, dtype=values[0].dtype)


def r2_score(sums: Any, squared_sums: Any, residuals: Any, counts: Any, num_samples: Any,
             class_aggregation: str | None, num_regressors: int) -> Any:  # fmt: skip
    """R2 (adjusted when `num_regressors` > 0) from the accumulated sums."""
    return _r2([sums, squared_sums, residuals, counts, num_samples], class_aggregation,
               int(num_regressors))  # fmt: skip


@op("value_range", multi_out=True)
def _value_range(xp: Any, p: Any) -> Any:
    if not p.size:
        return xp.asarray(0.0), xp.asarray(1.0)
    return xp.asarray(float(p.min())), xp.asarray(float(p.max()))


def value_range(p: Any) -> tuple[float, float]:
    """(min, max) of `p` as Python floats ((0, 1) when empty): the input checks of metrics."""
    lo, hi = _value_range(p)
    return float(lo), float(hi)
