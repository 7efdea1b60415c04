"""Confusion counts (`TruePositives` ... `FalseNegatives`), the metrics that fix one rate and
maximize another (`PrecisionAtRecall`, `RecallAtPrecision`, `SensitivityAtSpecificity`,
`SpecificityAtSensitivity`), and the IoU family (`IoU`, `MeanIoU`, `BinaryIoU`, `OneHotIoU`,
`OneHotMeanIoU`), with Keras 2's thresholds and streaming semantics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.metrics.base_metric import Metric
from layerflow._src.keras.metrics.confusion import parse_thresholds
from layerflow._src.ops import compare_ops, math_ops, metric_ops

__all__ = [
    "BinaryIoU",
    "FalseNegatives",
    "FalsePositives",
    "IoU",
    "MeanIoU",
    "OneHotIoU",
    "OneHotMeanIoU",
    "PrecisionAtRecall",
    "RecallAtPrecision",
    "SensitivityAtSpecificity",
    "SpecificityAtSensitivity",
    "TrueNegatives",
    "TruePositives",
]


def _check_range(owner: Metric, p: Any) -> None:
    lo, hi = metric_ops.value_range(p)
    if lo < 0.0 or hi > 1.0:
        raise ValueError(
            f"{type(owner).__name__} '{owner.name}': predictions must be in [0, 1] "
            f"(probabilities), got values in [{lo}, {hi}]. Apply a sigmoid to logits first."
        )


class _ConfusionCount(Metric):
    """One confusion count at each threshold (0.5 by default; > threshold is positive)."""

    _index = 0  # tp, fp, tn, fn

    def __init__(self, thresholds: Any = None, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = parse_thresholds(self, thresholds)
        self.accumulator = self.add_weight("accumulator", (len(self.thresholds),))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        _check_range(self, y_pred)
        counts = metric_ops.confusion_counts(
            y_true, y_pred, sample_weight, self.thresholds, self.dtype
        )
        self.accumulator.assign_add(counts[self._index])

    def result(self) -> Tensor:
        a = self.accumulator.read_value()
        return a[0] if len(self.thresholds) == 1 else a

    def get_config(self) -> dict[str, Any]:
        thresholds = self.init_thresholds
        if thresholds is not None and not isinstance(thresholds, (int, float)):
            thresholds = list(np.atleast_1d(thresholds).tolist())
        return {**super().get_config(), "thresholds": thresholds}


class TruePositives(_ConfusionCount):
    """The (weighted) number of true positives at each threshold.

    >>> m = TruePositives(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); float(m.result())
    2.0
    """

    _index = 0


class FalsePositives(_ConfusionCount):
    """The (weighted) number of false positives at each threshold."""

    _index = 1


class TrueNegatives(_ConfusionCount):
    """The (weighted) number of true negatives at each threshold."""

    _index = 2


class FalseNegatives(_ConfusionCount):
    """The (weighted) number of false negatives at each threshold."""

    _index = 3


# --- one rate fixed, the other maximized ---------------------------------------------------------


class _SensitivitySpecificityBase(Metric):
    """tp, tn, fp, fn at `num_thresholds` thresholds spread over [0, 1] (Keras 2's grid)."""

    _value_name = ""

    def __init__(self, value: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype)
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError(
                f"Argument `{self._value_name}` must be in the range [0, 1]. Received: "
                f"{self._value_name}={value}"
            )
        if not isinstance(num_thresholds, int) or num_thresholds <= 0:
            raise ValueError(
                "Argument `num_thresholds` must be an integer > 0. Received: "
                f"num_thresholds={num_thresholds!r}"
            )
        self.value = value
        self.num_thresholds = num_thresholds
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
        n = num_thresholds
        self.true_positives = self.add_weight("true_positives", (n,))
        self.true_negatives = self.add_weight("true_negatives", (n,))
        self.false_positives = self.add_weight("false_positives", (n,))
        self.false_negatives = self.add_weight("false_negatives", (n,))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        tp, fp, tn, fn = metric_ops.confusion_counts(
            y_true, y_pred, sample_weight, self.thresholds, self.dtype, self.class_id
        )
        _check_range(self, y_pred if self.class_id is None else y_pred[..., self.class_id])
        self.true_positives.assign_add(tp)
        self.false_positives.assign_add(fp)
        self.true_negatives.assign_add(tn)
        self.false_negatives.assign_add(fn)

    def _max_under_constraint(self, constrained: str, dependent: str) -> Tensor:
        return metric_ops.best_rate(
            self.true_positives, self.false_positives, self.true_negatives,
            self.false_negatives, constrained, dependent, self.value,
        )  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "class_id": self.class_id,
            "num_thresholds": self.num_thresholds,
            self._value_name: self.value,
        }


class SensitivityAtSpecificity(_SensitivitySpecificityBase):
    """The best sensitivity over the thresholds whose specificity is >= `specificity`.

    >>> m = SensitivityAtSpecificity(0.5, num_thresholds=3)
    >>> m.update_state([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9]); float(m.result())
    0.5
    """

    _value_name = "specificity"

    def __init__(self, specificity: float, num_thresholds: int = 200,
                 class_id: int | None = None, name: str | None = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(specificity, num_thresholds, class_id, name, dtype)
        self.specificity = specificity

    def result(self) -> Tensor:
        return self._max_under_constraint("specificity", "sensitivity")


class SpecificityAtSensitivity(_SensitivitySpecificityBase):
    """The best specificity over the thresholds whose sensitivity is >= `sensitivity`."""

    _value_name = "sensitivity"

    def __init__(self, sensitivity: float, num_thresholds: int = 200,
                 class_id: int | None = None, name: str | None = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)
        self.sensitivity = sensitivity

    def result(self) -> Tensor:
        return self._max_under_constraint("sensitivity", "specificity")


class PrecisionAtRecall(_SensitivitySpecificityBase):
    """The best precision over the thresholds whose recall is >= `recall`."""

    _value_name = "recall"

    def __init__(self, recall: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__(recall, num_thresholds, class_id, name, dtype)
        self.recall = recall

    def result(self) -> Tensor:
        return self._max_under_constraint("recall", "precision")


class RecallAtPrecision(_SensitivitySpecificityBase):
    """The best recall over the thresholds whose precision is >= `precision`."""

    _value_name = "precision"

    def __init__(self, precision: float, num_thresholds: int = 200,
                 class_id: int | None = None, name: str | None = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(precision, num_thresholds, class_id, name, dtype)
        self.precision = precision

    def result(self) -> Tensor:
        return self._max_under_constraint("precision", "recall")


# --- IoU ---------------------------------------------------------------------------------------


class IoU(Metric):
    """Intersection over union of the classes in `target_class_ids`, averaged over those whose
    union is not empty, from a streaming `num_classes` x `num_classes` confusion matrix.

    >>> m = IoU(num_classes=2, target_class_ids=[0])
    >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1]); float(m.result())
    0.3333333432674408
    """

    def __init__(self, num_classes: int, target_class_ids: Any, name: str | None = None,
                 dtype: Any = None, ignore_class: int | None = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1) -> None:  # fmt: skip
        super().__init__(name=name, dtype=dtype)
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"{type(self).__name__}: num_classes must be an int >= 1, got "
                             f"{num_classes!r}.")  # fmt: skip
        ids = [int(i) for i in target_class_ids]
        if not ids or max(ids) >= num_classes or min(ids) < 0:
            raise ValueError(
                f"Target class id {max(ids) if ids else None} is out of range, which is "
                f"[0, {num_classes})."
            )
        self.num_classes = num_classes
        self.target_class_ids = ids
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_weight("total_confusion_matrix", (num_classes, num_classes))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        cm = metric_ops.confusion_matrix_counts(
            y_true, y_pred, sample_weight, self.num_classes, self.dtype,
            f"{type(self).__name__} '{self.name}'", self.sparse_y_true, self.sparse_y_pred,
            self.axis, self.ignore_class,
        )  # fmt: skip
        self.total_cm.assign_add(cm)

    def result(self) -> Tensor:
        return metric_ops.iou(self.total_cm, self.target_class_ids)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "target_class_ids": self.target_class_ids,
            "ignore_class": self.ignore_class,
            "sparse_y_true": self.sparse_y_true,
            "sparse_y_pred": self.sparse_y_pred,
            "axis": self.axis,
        }


class MeanIoU(IoU):
    """The mean IoU over all `num_classes` classes (those with an empty union are left out).

    >>> m = MeanIoU(num_classes=2); m.update_state([0, 0, 1, 1], [0, 1, 0, 1]); float(m.result())
    0.3333333432674408
    """

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None,
                 ignore_class: int | None = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1) -> None:  # fmt: skip
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["target_class_ids"]
        return config


class BinaryIoU(IoU):
    """IoU of binary labels, a prediction >= `threshold` counting as class 1.

    >>> m = BinaryIoU(target_class_ids=[1]); m.update_state([0, 1, 1], [0.2, 0.7, 0.4])
    >>> float(m.result())
    0.5
    """

    def __init__(self, target_class_ids: Any = (0, 1), threshold: float = 0.5,
                 name: str | None = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        p = math_ops.cast(y_pred, self.dtype)
        above = math_ops.cast(compare_ops.greater_equal(p, self.threshold), self.dtype)
        super().update_state(y_true, above, sample_weight)

    def get_config(self) -> dict[str, Any]:
        return {
            "target_class_ids": self.target_class_ids,
            "threshold": self.threshold,
            "name": self.name,
            "dtype": self.dtype,
        }


class OneHotIoU(IoU):
    """IoU for one-hot labels (and, unless `sparse_y_pred`, one score per class)."""

    def __init__(self, num_classes: int, target_class_ids: Any, name: str | None = None,
                 dtype: Any = None, ignore_class: int | None = None, sparse_y_pred: bool = False,
                 axis: int = -1) -> None:  # fmt: skip
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["sparse_y_true"]
        return config


class OneHotMeanIoU(MeanIoU):
    """Mean IoU for one-hot labels (and, unless `sparse_y_pred`, one score per class)."""

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None,
                 ignore_class: int | None = None, sparse_y_pred: bool = False,
                 axis: int = -1) -> None:  # fmt: skip
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["sparse_y_true"]
        return config
