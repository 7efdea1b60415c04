"""Metrics from confusion counts at thresholds: `Precision`, `Recall`, `AUC`."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.metrics.base_metric import Metric
from layerflow._src.ops import metric_ops


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
        tp, fp, _, fn = metric_ops.confusion_counts(
            y_true, y_pred, sample_weight, self.thresholds, self.dtype, self.class_id, self.top_k
        )
        self.true_positives.assign_add(tp)
        self.false_positives.assign_add(fp)
        self.false_negatives.assign_add(fn)

    def _ratio(self, num: Any, den: Any) -> Tensor:
        out = metric_ops.ratio(num, den)
        return out[0] if len(self.thresholds) == 1 else out

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
        tp, fp = self.true_positives, self.false_positives
        return self._ratio(tp, tp + fp)


class Recall(_Confusion):
    """tp / (tp + fn) at each threshold (0.5 by default).

    >>> m = Recall(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); round(float(m.result()), 4)
    0.6667
    """

    def result(self) -> Tensor:
        tp, fn = self.true_positives, self.false_negatives
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
        tp, fp, tn, fn = metric_ops.confusion_counts(
            y_true, y_pred, sample_weight, self.thresholds, self.dtype, wide=True,
            from_logits=self.from_logits,
        )  # fmt: skip
        self.true_positives.assign_add(tp)
        self.false_positives.assign_add(fp)
        self.true_negatives.assign_add(tn)
        self.false_negatives.assign_add(fn)

    def result(self) -> Tensor:
        return metric_ops.auc(
            self.true_positives, self.false_positives, self.true_negatives,
            self.false_negatives, self.curve, self.summation_method,
        )  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_thresholds": self.num_thresholds,
            "curve": self.curve,
            "summation_method": self.summation_method,
            "from_logits": self.from_logits,
        }
