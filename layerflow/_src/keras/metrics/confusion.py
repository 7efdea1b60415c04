"""Metrics from confusion counts at thresholds: `Precision`, `Recall`, `AUC`."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.metrics.base_metric import Metric, _arr, _float, _pair, _xp


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


def parse_thresholds(metric: Any, thresholds: Any) -> list[float]:
    """A confusion metric's thresholds as floats in [0, 1] (0.5 when None), as Keras checks them."""
    t = [0.5] if thresholds is None else np.atleast_1d(thresholds).tolist()
    for x in t:
        if not 0.0 <= float(x) <= 1.0:
            raise ValueError(f"{type(metric).__name__}: thresholds must be in [0, 1], got {x}.")
    return [float(x) for x in t]


class _Confusion(Metric):
    """tp, fp and fn counts at each threshold (0.5 by default); `result` combines them.

    The default name is the class name in snake case ('precision', 'recall').
    """

    def __init__(
        self,
        thresholds: Any = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = parse_thresholds(self, thresholds)
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

    def result(self) -> Tensor:
        tp, fp = self.true_positives._data, self.false_positives._data
        return self._ratio(tp, tp + fp)


class Recall(_Confusion):
    """tp / (tp + fn) at each threshold (0.5 by default).

    >>> m = Recall(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); round(float(m.result()), 4)
    0.6667
    """

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
