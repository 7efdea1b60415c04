"""`tf.keras.losses`: loss classes with Keras' reductions, and their function forms.

A loss's `call(y_true, y_pred)` gives one value per sample (reduced over the last axis); the
`Loss.__call__` applies `sample_weight` and the reduction. Cross-entropies from logits use the
fused, numerically stable `tf.nn` kernels (never `log(softmax(x))` in two steps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.keras import serialization
from layerflow._src.ops import array_ops, nn_ops
from layerflow._src.ops import math_ops as M
from layerflow._src.ops.elementwise_ops import clip_by_value
from layerflow._src.utils import naming

EPSILON = 1e-7


class Reduction:
    """How `Loss.__call__` reduces per-sample losses (`tf.keras.losses.Reduction`)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key: {key!r}. Expected one of {list(cls.all())}.")


def _tensor(x: Any, dtype: Any = None) -> Any:
    if isinstance(x, TensorLike):
        return x
    if dtype is not None and isinstance(x, np.ndarray) and x.dtype.kind in "fiub":
        # NumPy labels (often float64 or uint8) take the predictions' dtype, as Keras casts.
        return convert_to_tensor(x.astype(np.dtype(dtype.name)))
    return convert_to_tensor(x, dtype_hint=dtype)


def _floating(y_pred: Any) -> Any:
    """Predictions as a float tensor (integer predictions become float32)."""
    y_pred = _tensor(y_pred)
    if y_pred.dtype.np.kind != "f":
        y_pred = M.cast(y_pred, "float32")
    return y_pred


def _cast_like(x: Any, like: Any) -> Any:
    """`x` (labels or weights) as a tensor of `like`'s dtype."""
    x = _tensor(x, like.dtype)
    if x.dtype != like.dtype:
        x = M.cast(x, like.dtype)
    return x


def _drop_last(x: Any) -> Any:
    return M.reshape(x, tuple(x.shape)[:-1])


def _pair(y_true: Any, y_pred: Any) -> tuple[Any, Any]:
    y_pred = _floating(y_pred)
    y_true = _cast_like(y_true, y_pred)
    # Keras squeezes a trailing 1 so (N, 1) targets match (N,) predictions and back.
    tr, pr = y_true.ndim, y_pred.ndim
    if tr == pr + 1 and tuple(y_true.shape)[-1] == 1:
        y_true = _drop_last(y_true)
    elif pr == tr + 1 and tuple(y_pred.shape)[-1] == 1:
        y_pred = _drop_last(y_pred)
    return y_true, y_pred


def _reduce(losses: Any, sample_weight: Any, reduction: str) -> Any:
    if sample_weight is not None:
        w = _cast_like(sample_weight, losses)
        lr, wr = losses.ndim, w.ndim
        if wr == lr + 1 and tuple(w.shape)[-1] == 1:
            w = _drop_last(w)
        elif wr < lr:
            w = M.reshape(w, tuple(w.shape) + (1,) * (lr - wr))
        losses = M.multiply(losses, w)
    if reduction == Reduction.NONE:
        return losses
    if reduction == Reduction.SUM:
        return M.reduce_sum(losses)
    return M.reduce_mean(losses) if losses.shape.num_elements() else M.reduce_sum(losses)


def _both(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return a if b is None else b
    return M.logical_and(M.cast(a, "bool"), M.cast(b, "bool"))


def _valid_mask_weights(losses: Any, sample_weight: Any, mask: Any, reduction: str) -> Any:
    """tf_keras's `apply_valid_mask`: the prediction's mask (`_keras_mask`, e.g. padded time
    steps) becomes sample weights; with a mean reduction the valid entries are scaled by
    total/valid, so the loss is the mean over the unmasked entries only."""
    mask = _cast_like(mask, losses)
    if reduction in (Reduction.AUTO, Reduction.SUM_OVER_BATCH_SIZE):
        total = M.cast(array_ops.size(mask), mask.dtype)
        valid = M.reduce_sum(mask)
        mask = M.multiply(mask, M.divide(total, valid))
    if sample_weight is None:
        return mask
    w = _cast_like(sample_weight, losses)
    if w.shape.rank == mask.shape.rank - 1:
        w = array_ops.expand_dims(w, -1)
    return M.multiply(w, mask)


class Loss:
    """Base class: subclasses implement `call(y_true, y_pred)` returning per-sample losses.

    >>> import layerflow as tf
    >>> class MeanError(tf.keras.losses.Loss):
    ...     def call(self, y_true, y_pred):
    ...         return tf.reduce_mean(y_pred - y_true, axis=-1)
    >>> float(MeanError()([[1.0, 2.0]], [[2.0, 4.0]]))
    1.5
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None) -> None:
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name if name is not None else naming.to_snake_case(type(self).__name__)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        in_mask = getattr(y_pred, "_keras_mask", None)
        if not isinstance(y_pred, TensorLike):
            y_pred = _tensor(y_pred)
        if not isinstance(y_true, TensorLike):
            y_true = _tensor(y_true)
        losses = self.call(y_true, y_pred)
        if not isinstance(losses, TensorLike):
            losses = convert_to_tensor(losses)
        mask = _both(in_mask, getattr(losses, "_keras_mask", None))
        if mask is not None:
            sample_weight = _valid_mask_weights(losses, sample_weight, mask, self.reduction)
        return _reduce(losses, sample_weight, self.reduction)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError(
            f"Loss '{type(self).__name__}' must implement call(self, y_true, y_pred)."
        )

    def get_config(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} reduction={self.reduction!r}>"


class LossFunctionWrapper(Loss):
    """A loss class around a function `fn(y_true, y_pred, **kwargs)`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        reduction: str = Reduction.AUTO,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._fn_kwargs}


# --- function forms ---------------------------------------------------------------------------


def sparse_categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    axis: int = -1,
    ignore_class: int | None = None,
) -> Any:
    """Cross-entropy between integer labels and predicted distributions (or logits).

    >>> import layerflow as tf
    >>> l = tf.keras.losses.sparse_categorical_crossentropy([1], [[1.0, 3.0]], from_logits=True)
    >>> round(float(l[0]), 4)
    0.1269
    """
    y_pred = _tensor(y_pred)
    if y_pred.dtype.np.kind != "f":
        y_pred = M.cast(y_pred, "float32")
    labels = _tensor(y_true)
    if labels.ndim == y_pred.ndim and tuple(labels.shape)[-1] == 1:
        labels = M.reshape(labels, tuple(labels.shape)[:-1])
    if labels.dtype.np.kind != "i":
        labels = M.cast(labels, "int64")
    if axis not in (-1, y_pred.ndim - 1):
        raise ValueError(
            f"sparse_categorical_crossentropy supports only the last axis as the class axis, got "
            f"axis={axis} for predictions of rank {y_pred.ndim}."
        )
    if tuple(labels.shape) != tuple(y_pred.shape)[:-1]:
        raise ValueError(
            f"sparse_categorical_crossentropy: labels of shape {tuple(labels.shape)} do not "
            f"match predictions of shape {tuple(y_pred.shape)}; expected labels of shape "
            f"{tuple(y_pred.shape)[:-1]} (one integer class per sample)."
        )
    logits = y_pred
    if not from_logits:
        logits = M.log(clip_by_value(y_pred, EPSILON, 1.0 - EPSILON))
    if ignore_class is not None:
        valid = M.not_equal(labels, ignore_class)
        safe = M.where(valid, labels, M.zeros_like(labels))
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=safe, logits=logits)
        return M.multiply(losses, M.cast(valid, losses.dtype))
    return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """Cross-entropy between one-hot (or soft) labels and predictions, over `axis`."""
    y_pred = _floating(y_pred)
    y_true = _cast_like(y_true, y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(
            f"categorical_crossentropy: y_true of shape {tuple(y_true.shape)} and y_pred "
            f"of shape {tuple(y_pred.shape)} must match. For integer labels use "
            "sparse_categorical_crossentropy."
        )
    if label_smoothing:
        n = tuple(y_pred.shape)[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = M.truediv(y_pred, M.reduce_sum(y_pred, axis=axis, keepdims=True))
    p = clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return M.negative(M.reduce_sum(M.multiply(y_true, M.log(p)), axis=axis))


def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """Binary cross-entropy, averaged over `axis`."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        ce = nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        pos = M.multiply(y_true, M.log(p + EPSILON))
        neg = M.multiply(1.0 - y_true, M.log(1.0 - p + EPSILON))
        ce = M.negative(pos + neg)
    if ce.ndim == 0:
        return ce
    return M.reduce_mean(ce, axis=axis)


def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """`mean(square(y_pred - y_true), axis=-1)`.

    >>> float(mean_squared_error([[0.0, 1.0]], [[1.0, 1.0]])[0])
    0.5
    """
    y_true, y_pred = _pair(y_true, y_pred)
    return M.reduce_mean(M.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """`mean(abs(y_pred - y_true), axis=-1)`."""
    y_true, y_pred = _pair(y_true, y_pred)
    return M.reduce_mean(M.abs(M.subtract(y_pred, y_true)), axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """`0.5 x^2` for `|x| <= delta`, else `delta (|x| - 0.5 delta)`; mean over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    err = M.abs(M.subtract(y_pred, y_true))
    quad = M.minimum(err, delta)
    lin = M.subtract(err, quad)
    return M.reduce_mean(0.5 * M.square(quad) + delta * lin, axis=-1)


def kl_divergence(y_true: Any, y_pred: Any) -> Any:
    """`sum(y_true * log(y_true / y_pred), axis=-1)` with both clipped to [eps, 1]."""
    y_true, y_pred = _pair(y_true, y_pred)
    t = clip_by_value(y_true, EPSILON, 1.0)
    p = clip_by_value(y_pred, EPSILON, 1.0)
    return M.reduce_sum(M.multiply(t, M.log(M.truediv(t, p))), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
kld = KLD = kullback_leibler_divergence = kl_divergence


# --- classes ---------------------------------------------------------------------------------


class _Crossentropy(LossFunctionWrapper):
    """A cross-entropy class: options go to its function, and `from_logits` stays readable."""

    def __init__(
        self,
        fn: Callable[..., Any],
        reduction: str,
        name: str | None,
        from_logits: bool,
        **options: Any,
    ) -> None:
        super().__init__(fn, reduction=reduction, name=name, from_logits=from_logits, **options)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(_Crossentropy):
    """Cross-entropy for integer labels; `from_logits=True` takes raw scores (fused kernel).

    >>> import layerflow as tf
    >>> loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> round(float(loss([1, 0], [[1.0, 3.0], [2.0, 0.0]])), 4)
    0.1269
    """

    def __init__(
        self,
        from_logits: bool = False,
        ignore_class: int | None = None,
        reduction: str = Reduction.AUTO,
        name: str = "sparse_categorical_crossentropy",
    ) -> None:
        super().__init__(
            sparse_categorical_crossentropy, reduction, name, from_logits, ignore_class=ignore_class
        )


class _SmoothedCrossentropy(_Crossentropy):
    """The categorical and binary cross-entropy classes: one signature, their own function.

    `name=None` takes Loss's default, the class name in snake case (Keras's default names).
    """

    _fn: Callable[..., Any]

    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = Reduction.AUTO,
        name: str | None = None,
    ) -> None:
        fn = type(self)._fn
        super().__init__(
            fn, reduction, name, from_logits, label_smoothing=label_smoothing, axis=axis
        )


class CategoricalCrossentropy(_SmoothedCrossentropy):
    """Cross-entropy for one-hot labels (`label_smoothing` as Keras).

    >>> import layerflow as tf
    >>> loss = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
    >>> round(float(loss([[0.0, 1.0]], [[1.0, 3.0]])), 4)
    0.1269
    """

    _fn = staticmethod(categorical_crossentropy)


class BinaryCrossentropy(_SmoothedCrossentropy):
    """Binary cross-entropy for 0/1 labels (probabilities, or logits with `from_logits`).

    >>> import layerflow as tf
    >>> round(float(tf.keras.losses.BinaryCrossentropy()([[1.0, 0.0]], [[0.9, 0.1]])), 4)
    0.1054
    """

    _fn = staticmethod(binary_crossentropy)


class MeanSquaredError(LossFunctionWrapper):
    """Mean of squared errors over the last axis, then the reduction."""

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_squared_error") -> None:
        super().__init__(mean_squared_error, reduction=reduction, name=name)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_absolute_error") -> None:
        super().__init__(mean_absolute_error, reduction=reduction, name=name)


class Huber(LossFunctionWrapper):
    def __init__(
        self, delta: float = 1.0, reduction: str = Reduction.AUTO, name: str = "huber_loss"
    ) -> None:
        super().__init__(huber, reduction=reduction, name=name, delta=delta)


class KLDivergence(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "kl_divergence") -> None:
        super().__init__(kl_divergence, reduction=reduction, name=name)


_CLASSES = {
    c.__name__: c
    for c in (
        SparseCategoricalCrossentropy,
        CategoricalCrossentropy,
        BinaryCrossentropy,
        MeanSquaredError,
        MeanAbsoluteError,
        Huber,
        KLDivergence,
    )
}

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    "mean_squared_error": mean_squared_error,
    "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error,
    "mae": mean_absolute_error,
    "huber": huber,
    "huber_loss": huber,
    "kl_divergence": kl_divergence,
    "kld": kl_divergence,
    "kullback_leibler_divergence": kl_divergence,
}


# --- the other Keras 2 losses ------------------------------------------------------------------
# They live in `losses_extra` (which builds on the classes above) and add themselves to the two
# tables through `register_builtins`, whichever module is imported first.


def register_builtins(classes: dict[str, type], functions: dict[str, Callable[..., Any]]) -> None:
    """Make built-in loss classes and functions known to `get` and `deserialize` by name."""
    _CLASSES.update(classes)
    _FUNCTIONS.update(functions)


from layerflow._src.keras.losses import extra as _losses_extra  # noqa: E402, F401


def get(identifier: Any) -> Any:
    """A loss from a name (function or class name), a Loss instance, a class or a function.

    >>> get("sparse_categorical_crossentropy").__name__
    'sparse_categorical_crossentropy'
    """
    if identifier is None:
        return None
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        fn = _FUNCTIONS.get(identifier)
        if fn is not None:
            return fn
        cls = _CLASSES.get(identifier)
        if cls is not None:
            return cls()
    elif isinstance(identifier, dict):
        return deserialize(identifier)
    elif callable(identifier):
        return identifier
    raise ValueError(
        f"Unknown loss {identifier!r}. Known names: {sorted(_FUNCTIONS)}; or pass a "
        "tf.keras.losses.Loss instance or a function (y_true, y_pred) -> per-sample losses."
    )


def serialize(loss: Any) -> Any:
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return getattr(loss, "__name__", loss)


def deserialize(config: Any, custom_objects: dict[str, Any] | None = None) -> Any:
    """A loss from `serialize`'s output: a built-in name, or a config dict whose class is built in,
    registered, or in `custom_objects` (nothing else is looked up).

    >>> type(deserialize({"class_name": "MeanSquaredError", "config": {}})).__name__
    'MeanSquaredError'
    """
    table = {**_FUNCTIONS, **_CLASSES} if isinstance(config, str) else _CLASSES
    return serialization.deserialize_keras_object(
        config, table, custom_objects, printable_module_name="loss"
    )
