"""The rest of Keras 2's losses: hinge family, log-cosh, Poisson, cosine similarity, MAPE, MSLE,
and the focal cross-entropies; function forms and classes, with tf_keras's formulas.

An import cycle with `core`, on purpose: this module builds on `core` (the `Loss` classes
and helpers) and adds its names to the lookup tables of `core.get`/`deserialize` through
`core.register_builtins`, and `core` imports it after those tables, so whichever of the two
is imported first, both are complete (`core.py` would pass 600 lines with these inside).
"""

from __future__ import annotations

import math
from typing import Any

from layerflow._src.keras.losses import core as base
from layerflow._src.ops import math_ops as M
from layerflow._src.ops import nn_ops
from layerflow._src.ops.array_ops import constant
from layerflow._src.ops.compare_ops import equal, logical_or
from layerflow._src.ops.elementwise_ops import clip_by_value
from layerflow._src.ops.reduce_ops import reduce_all

__all__ = [
    "MAPE",
    "MSLE",
    "BinaryFocalCrossentropy",
    "CategoricalFocalCrossentropy",
    "CategoricalHinge",
    "CosineSimilarity",
    "Hinge",
    "LogCosh",
    "MeanAbsolutePercentageError",
    "MeanSquaredLogarithmicError",
    "Poisson",
    "SquaredHinge",
    "binary_focal_crossentropy",
    "categorical_focal_crossentropy",
    "categorical_hinge",
    "cosine_similarity",
    "hinge",
    "log_cosh",
    "logcosh",
    "mape",
    "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error",
    "msle",
    "poisson",
    "squared_hinge",
]

EPSILON = base.EPSILON


def _const(value: float, like: Any) -> Any:
    return constant(value, dtype=like.dtype)


# --- function forms ---------------------------------------------------------------------------


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Any:
    """`100 * mean(|y_true - y_pred| / max(|y_true|, eps), axis=-1)`.

    >>> float(mean_absolute_percentage_error([[2.0, 4.0]], [[1.0, 5.0]])[0])
    37.5
    """
    y_true, y_pred = base._pair(y_true, y_pred)
    diff = M.abs(M.subtract(y_true, y_pred)) / M.maximum(M.abs(y_true), _const(EPSILON, y_pred))
    return _const(100.0, y_pred) * M.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Any:
    """`mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)), axis=-1)`."""
    y_true, y_pred = base._pair(y_true, y_pred)
    eps, one = _const(EPSILON, y_pred), _const(1.0, y_pred)
    first = M.log(M.maximum(y_pred, eps) + one)
    second = M.log(M.maximum(y_true, eps) + one)
    return M.reduce_mean(M.squared_difference(first, second), axis=-1)


def _signed_labels(y_true: Any) -> Any:
    """Keras converts 0/1 labels to -1/1 (labels already in {-1, 1} stay)."""
    zero, one = _const(0, y_true), _const(1, y_true)
    if bool(reduce_all(logical_or(equal(y_true, zero), equal(y_true, one)))):
        return _const(2.0, y_true) * y_true - _const(1.0, y_true)
    return y_true


def hinge(y_true: Any, y_pred: Any) -> Any:
    """`mean(max(1 - y_true * y_pred, 0), axis=-1)`, 0/1 labels taken as -1/1.

    >>> float(hinge([[0.0, 1.0]], [[0.5, 0.5]])[0])
    1.0
    """
    y_true, y_pred = base._pair(y_true, y_pred)
    t = _signed_labels(y_true)
    return M.reduce_mean(M.maximum(_const(1.0, y_pred) - t * y_pred, _const(0.0, y_pred)), -1)


def squared_hinge(y_true: Any, y_pred: Any) -> Any:
    """`mean(square(max(1 - y_true * y_pred, 0)), axis=-1)`, 0/1 labels taken as -1/1."""
    y_true, y_pred = base._pair(y_true, y_pred)
    t = _signed_labels(y_true)
    margin = M.maximum(_const(1.0, y_pred) - t * y_pred, _const(0.0, y_pred))
    return M.reduce_mean(M.square(margin), axis=-1)


def categorical_hinge(y_true: Any, y_pred: Any) -> Any:
    """`max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)` over the last axis."""
    y_pred = base._floating(y_pred)
    y_true = base._cast_like(y_true, y_pred)
    pos = M.reduce_sum(y_true * y_pred, axis=-1)
    neg = M.reduce_max((_const(1.0, y_pred) - y_true) * y_pred, axis=-1)
    return M.maximum(neg - pos + _const(1.0, y_pred), _const(0.0, y_pred))


def log_cosh(y_true: Any, y_pred: Any) -> Any:
    """`mean(log(cosh(y_pred - y_true)), axis=-1)`, computed as x + softplus(-2x) - log 2."""
    y_true, y_pred = base._pair(y_true, y_pred)
    x = M.subtract(y_pred, y_true)
    value = x + nn_ops.softplus(_const(-2.0, x) * x) - _const(math.log(2.0), x)
    return M.reduce_mean(value, axis=-1)


def poisson(y_true: Any, y_pred: Any) -> Any:
    """`mean(y_pred - y_true * log(y_pred + eps), axis=-1)`."""
    y_true, y_pred = base._pair(y_true, y_pred)
    return M.reduce_mean(y_pred - y_true * M.log(y_pred + _const(EPSILON, y_pred)), axis=-1)


def _l2_normalize(x: Any, axis: int) -> Any:
    sq = M.reduce_sum(M.square(x), axis=axis, keepdims=True)
    return x / M.sqrt(M.maximum(sq, _const(1e-12, x)))


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """The loss form: `-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)` (-1 is best).

    >>> float(cosine_similarity([[1.0, 0.0]], [[2.0, 0.0]])[0])
    -1.0
    """
    y_true, y_pred = base._pair(y_true, y_pred)
    return M.negative(
        M.reduce_sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)
    )


def _elementwise_bce(target: Any, output: Any, from_logits: bool) -> Any:
    if from_logits:
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps, one = _const(EPSILON, output), _const(1.0, output)
    p = clip_by_value(output, EPSILON, 1.0 - EPSILON)
    return M.negative(target * M.log(p + eps) + (one - target) * M.log(one - p + eps))


def binary_focal_crossentropy(y_true: Any, y_pred: Any, apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                              label_smoothing: float = 0.0, axis: int = -1) -> Any:  # fmt: skip
    """Binary cross-entropy scaled by `(1 - p_t) ** gamma` (Lin et al., 2017), mean over `axis`;
    `apply_class_balancing` weights positives by `alpha` and negatives by `1 - alpha`."""
    y_true, y_pred = base._pair(y_true, y_pred)
    one = _const(1.0, y_pred)
    if label_smoothing:
        y_true = y_true * _const(1.0 - label_smoothing, y_pred) + _const(0.5 * label_smoothing,
                                                                         y_pred)  # fmt: skip
    p = M.sigmoid(y_pred) if from_logits else y_pred
    p_t = y_true * p + (one - y_true) * (one - p)
    focal = M.pow(one - p_t, _const(gamma, y_pred)) * _elementwise_bce(y_true, y_pred, from_logits)
    if apply_class_balancing:
        focal = (
            y_true * _const(alpha, y_pred) + (one - y_true) * _const(1 - alpha, y_pred)
        ) * focal
    if focal.ndim == 0:
        return focal
    return M.reduce_mean(focal, axis=axis)


def categorical_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """Categorical cross-entropy with each class term scaled by `alpha * (1 - p) ** gamma`."""
    if isinstance(axis, bool):
        raise ValueError(f"categorical_focal_crossentropy: axis must be an int, got {axis!r}.")
    y_pred = base._floating(y_pred)
    y_true = base._cast_like(y_true, y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(
            f"categorical_focal_crossentropy: y_true of shape {tuple(y_true.shape)} and "
            f"y_pred of shape {tuple(y_pred.shape)} must match (one-hot labels)."
        )
    if label_smoothing:
        n = tuple(y_pred.shape)[-1]
        y_true = y_true * _const(1.0 - label_smoothing, y_pred) + _const(label_smoothing / n,
                                                                         y_pred)  # fmt: skip
    p = nn_ops.softmax(y_pred, axis=axis) if from_logits else y_pred
    p = p / M.reduce_sum(p, axis=axis, keepdims=True)
    p = clip_by_value(p, EPSILON, 1.0 - EPSILON)
    cce = M.negative(y_true) * M.log(p)
    factor = M.pow(_const(1.0, p) - p, _const(gamma, p)) * _const(alpha, p)
    return M.reduce_sum(factor * cce, axis=axis)


mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
logcosh = log_cosh


# --- classes ---------------------------------------------------------------------------------


class _Wrapper(base.LossFunctionWrapper):
    """A loss class of this module: `fn` is fixed by the class (a tf_keras config's "fn" key is
    dropped on load)."""

    _fn: Any = None
    _default_name = ""

    def __init__(self, reduction: str = base.Reduction.AUTO, name: str | None = None,
                 **options: Any) -> None:  # fmt: skip
        name = self._default_name if name is None else name
        super().__init__(type(self)._fn, reduction=reduction, name=name, **options)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        config = {k: v for k, v in config.items() if k != "fn"}
        return cls(**config)


def _simple(class_name: str, fn: Any, default: str, doc: str) -> type:
    def __init__(self: Any, reduction: str = base.Reduction.AUTO, name: str = default) -> None:
        _Wrapper.__init__(self, reduction=reduction, name=name)

    return type(class_name, (_Wrapper,), {
        "__init__": __init__, "_fn": staticmethod(fn), "_default_name": default,
        "__doc__": doc, "__module__": __name__, "__qualname__": class_name,
    })  # fmt: skip


Hinge = _simple("Hinge", hinge, "hinge", "Hinge loss: mean(max(1 - y_true * y_pred, 0)).")
SquaredHinge = _simple(
    "SquaredHinge", squared_hinge, "squared_hinge", "Squared hinge loss (labels -1/1 or 0/1)."
)
CategoricalHinge = _simple(
    "CategoricalHinge", categorical_hinge, "categorical_hinge",
    "max(neg - pos + 1, 0) with pos the true class's score and neg the best other score.",
)  # fmt: skip
LogCosh = _simple("LogCosh", log_cosh, "log_cosh", "log(cosh(y_pred - y_true)), mean over -1.")
Poisson = _simple("Poisson", poisson, "poisson", "y_pred - y_true * log(y_pred), mean over -1.")
MeanAbsolutePercentageError = _simple(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "100 * mean(|y_true - y_pred| / |y_true|).",
)  # fmt: skip
MeanSquaredLogarithmicError = _simple(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "mean(square(log(y_pred + 1) - log(y_true + 1))).",
)  # fmt: skip


class CosineSimilarity(_Wrapper):
    """`-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`; -1 means same direction.

    >>> import layerflow as tf
    >>> float(tf.keras.losses.CosineSimilarity()([[0.0, 1.0]], [[0.0, 3.0]]))
    -1.0
    """

    _fn = staticmethod(cosine_similarity)

    def __init__(self, axis: int = -1, reduction: str = base.Reduction.AUTO,
                 name: str = "cosine_similarity") -> None:  # fmt: skip
        super().__init__(reduction=reduction, name=name, axis=axis)


class BinaryFocalCrossentropy(_Wrapper):
    """Focal loss for binary labels (`gamma` down-weights easy examples).

    >>> import layerflow as tf
    >>> loss = tf.keras.losses.BinaryFocalCrossentropy(gamma=2.0)
    >>> round(float(loss([[0.0, 1.0]], [[0.4, 0.6]])), 4)
    0.0817
    """

    _fn = staticmethod(binary_focal_crossentropy)

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25,
                 gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = base.Reduction.AUTO,
                 name: str = "binary_focal_crossentropy") -> None:  # fmt: skip
        super().__init__(reduction=reduction, name=name,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)  # fmt: skip
        self.from_logits = from_logits
        self.apply_class_balancing = apply_class_balancing
        self.alpha = alpha
        self.gamma = gamma


class CategoricalFocalCrossentropy(_Wrapper):
    """Focal loss for one-hot labels (Lin et al., 2017).

    >>> import layerflow as tf
    >>> loss = tf.keras.losses.CategoricalFocalCrossentropy()
    >>> round(float(loss([[0.0, 1.0]], [[0.4, 0.6]])), 4)
    0.0204
    """

    _fn = staticmethod(categorical_focal_crossentropy)

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = base.Reduction.AUTO,
                 name: str = "categorical_focal_crossentropy") -> None:  # fmt: skip
        super().__init__(reduction=reduction, name=name, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)  # fmt: skip
        self.from_logits = from_logits
        self.alpha = alpha
        self.gamma = gamma


CLASSES = {
    c.__name__: c
    for c in (
        Hinge, SquaredHinge, CategoricalHinge, LogCosh, Poisson, MeanAbsolutePercentageError,
        MeanSquaredLogarithmicError, CosineSimilarity, BinaryFocalCrossentropy,
        CategoricalFocalCrossentropy,
    )
}  # fmt: skip

FUNCTIONS = {
    "hinge": hinge,
    "squared_hinge": squared_hinge,
    "categorical_hinge": categorical_hinge,
    "log_cosh": log_cosh,
    "logcosh": log_cosh,
    "poisson": poisson,
    "cosine_similarity": cosine_similarity,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error,
    "MAPE": mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": mean_squared_logarithmic_error,
    "MSLE": mean_squared_logarithmic_error,
    "binary_focal_crossentropy": binary_focal_crossentropy,
    "categorical_focal_crossentropy": categorical_focal_crossentropy,
}

base.register_builtins(CLASSES, FUNCTIONS)
