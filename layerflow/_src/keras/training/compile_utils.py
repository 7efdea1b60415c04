"""What `compile` builds: the loss container (total loss + its tracker) and the metrics container.

Single-output models are the fast path. Multi-output models (a list, tuple or dict of outputs)
take a loss per output (one loss for all, a list, or a dict keyed by output name) and
`loss_weights`; metric names get the output's name as prefix, as in Keras.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import TensorLike
from layerflow._src.keras.losses import core as losses_mod
from layerflow._src.keras.metrics import core as metrics_mod
from layerflow._src.ops import math_ops as M
from layerflow._src.utils import nest


def _as_loss(identifier: Any) -> Any:
    loss = losses_mod.get(identifier)
    if loss is None or isinstance(loss, losses_mod.Loss):
        return loss
    return losses_mod.LossFunctionWrapper(loss, name=getattr(loss, "__name__", "loss"))


def _output_names(y_pred: Any, given: list[str] | None = None) -> list[str]:
    """Keys of a dict output; else the model's output names (its output layers' names, as
    Keras 2 prefixes per-output metrics: `out1_loss`); else `output_1`, `output_2`, ..."""
    if isinstance(y_pred, dict):
        return list(y_pred)
    n = len(nest.flatten(y_pred))
    if given is not None and len(given) == n:
        return list(given)
    return [f"output_{i + 1}" for i in range(n)]


def _shape(x: Any) -> tuple:
    return tuple(x.shape) if isinstance(x, TensorLike) else np.shape(x)


def _batch_size(y_pred: Any) -> float:
    shape = _shape(nest.flatten(y_pred)[0])
    return float(shape[0]) if len(shape) else 1.0


class LossesContainer:
    """Computes the total training loss and tracks its running mean as the `loss` metric."""

    def __init__(
        self, losses: Any, loss_weights: Any = None, output_names: list[str] | None = None
    ) -> None:
        self._output_names = output_names
        self._user_losses = losses
        self._user_weights = loss_weights
        self.tracker = metrics_mod.Mean(name="loss")
        # Per output: (loss, weight, name). The per-output trackers are made on the first
        # tracker update, never while replicas compute (metric variables are made in one thread).
        self._per_output: list[tuple[Any, float, str]] | None = None
        self._trackers: list[metrics_mod.Mean | None] | None = None
        self._single = None if isinstance(losses, list | tuple | dict) else _as_loss(losses)

    @property
    def metrics(self) -> list[metrics_mod.Metric]:
        out: list[metrics_mod.Metric] = [self.tracker]
        for tracker in self._trackers or ():
            if tracker is not None:
                out.append(tracker)
        return out

    def _build(self, y_pred: Any) -> None:
        names = _output_names(y_pred, self._output_names)
        user, weights = self._user_losses, self._user_weights
        if isinstance(user, dict):
            missing = [k for k in user if k not in names]
            if missing:
                raise ValueError(
                    f"compile(loss=...) names outputs {missing} that the model does not have; "
                    f"its outputs are {names}."
                )
            fns = [_as_loss(user.get(n)) for n in names]
        elif isinstance(user, list | tuple):
            if len(user) != len(names):
                raise ValueError(
                    f"compile(loss=[...]) got {len(user)} losses for a model with {len(names)} "
                    "outputs; pass one loss per output (or a single loss for all)."
                )
            fns = [_as_loss(u) for u in user]
        else:
            fns = [self._single] * len(names)
        if weights is None:
            ws = [1.0] * len(names)
        elif isinstance(weights, dict):
            ws = [float(weights.get(n, 1.0)) for n in names]
        else:
            ws = [float(w) for w in nest.flatten(weights)]
            if len(ws) != len(names):
                raise ValueError(
                    f"loss_weights has {len(ws)} entries for a model with {len(names)} outputs."
                )
        self._per_output = list(zip(fns, ws, names))

    def __call__(
        self, y_true: Any, y_pred: Any, sample_weight: Any = None, regularization_losses: Any = None
    ) -> Any:
        total, parts = self.compute(y_true, y_pred, sample_weight, regularization_losses)
        self.update_trackers(total, parts, y_pred)
        return total

    def compute(
        self, y_true: Any, y_pred: Any, sample_weight: Any = None, regularization_losses: Any = None
    ) -> tuple[Any, list[Any] | None]:
        """The total loss and, for multi-output models, each output's loss (None where that
        output has no loss), without touching the trackers: replicas of a distribution
        strategy compute here in parallel and the trackers are updated once, afterwards."""
        single = self._single
        parts = None
        if single is not None and not nest.is_nested(y_pred) and not nest.is_nested(y_true):
            if y_true is None:
                raise ValueError(
                    "The model was compiled with a loss but no target `y` was given: pass y to "
                    "fit/evaluate, or yield (x, y) pairs from the dataset."
                )
            total = single(y_true, y_pred, sample_weight)
        else:
            total, parts = self._multi(y_true, y_pred, sample_weight)
        if regularization_losses:
            extra = regularization_losses[0]
            for r in regularization_losses[1:]:
                extra = M.add(extra, r)
            total = M.add(
                total, M.cast(extra, total.dtype) if extra.dtype != total.dtype else extra
            )
        return total, parts

    def update_trackers(self, total: Any, parts: list[Any] | None, y_pred: Any) -> None:
        """Add one batch's losses to the running means, weighted by the batch's size."""
        self.tracker.update_state(total, sample_weight=_batch_size(y_pred))
        if parts is None:
            return
        if self._trackers is None:
            multi = len(self._per_output) > 1
            self._trackers = [
                metrics_mod.Mean(name=f"{n}_loss") if multi and fn is not None else None
                for fn, _, n in self._per_output
            ]
        preds = list(y_pred.values()) if isinstance(y_pred, dict) else nest.flatten(y_pred)
        for tracker, value, p in zip(self._trackers, parts, preds):
            if tracker is not None and value is not None:
                tracker.update_state(value, sample_weight=_batch_size(p))

    def _multi(self, y_true: Any, y_pred: Any, sample_weight: Any) -> tuple[Any, list[Any]]:
        if self._per_output is None:
            self._build(y_pred)
        preds = list(y_pred.values()) if isinstance(y_pred, dict) else nest.flatten(y_pred)
        if isinstance(y_true, dict):
            trues = [y_true.get(n) for n in _output_names(y_pred, self._output_names)]
        elif len(preds) == 1:
            trues = [y_true]
        else:
            trues = list(y_true) if isinstance(y_true, list | tuple) else [y_true]
        if len(trues) != len(preds):
            raise ValueError(
                f"The model has {len(preds)} outputs but {len(trues)} targets were given."
            )
        sws = (
            list(sample_weight)
            if isinstance(sample_weight, list | tuple)
            else [sample_weight] * len(preds)
        )
        total = None
        parts: list[Any] = []
        for (fn, w, _), t, p, sw in zip(self._per_output, trues, preds, sws):
            if fn is None or t is None:
                parts.append(None)
                continue
            value = fn(t, p, sw)
            parts.append(value)
            value = value * w if w != 1.0 else value
            total = value if total is None else M.add(total, value)
        if total is None:
            raise ValueError("No loss to compute: every output's loss or target is None.")
        return total, parts

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()


class _AutoAccuracy(metrics_mod.MeanMetricWrapper):
    """`metrics=["accuracy"]`: binary, sparse or categorical accuracy, chosen on first use
    from the shapes of targets and predictions (Keras' rule)."""

    def __init__(self, name: str) -> None:
        super().__init__(self._pick, name=name)
        self._chosen: Any = None

    def _pick(self, y_true: Any, y_pred: Any) -> Any:
        if self._chosen is None:
            t, p = _shape(y_true), _shape(y_pred)
            t_last = t[-1] if t else 1
            p_last = p[-1] if p else 1
            if p_last == 1:
                self._chosen = metrics_mod.binary_accuracy
            elif len(t) < len(p) or (t_last == 1 and p_last > 1):
                self._chosen = metrics_mod.sparse_categorical_accuracy
            else:
                self._chosen = metrics_mod.categorical_accuracy
        return self._chosen(y_true, y_pred)


def _mask_weights(y_pred: Any, mask: Any, sample_weight: Any) -> tuple[Any, Any]:
    """tf_keras's `apply_mask`: the mask as float weights, and the sample weights times it."""
    mask = M.cast(mask, y_pred.dtype)
    if sample_weight is None:
        return mask, mask
    sw = M.cast(sample_weight, mask.dtype)
    if sw.ndim == mask.ndim - 1:
        sw = M.reshape(sw, tuple(sw.shape) + (1,))
    return mask, M.multiply(sw, mask)


def _as_metric(identifier: Any, prefix: str = "") -> metrics_mod.Metric:
    if isinstance(identifier, str) and identifier in ("accuracy", "acc"):
        return _AutoAccuracy(prefix + identifier)
    m = metrics_mod.get(identifier)
    if isinstance(m, metrics_mod.Metric):
        # Keras names a metric given as a string by that string ("mae", not its class name).
        name = identifier if isinstance(identifier, str) else m.name
        m.name = prefix + name
        return m
    return metrics_mod.MeanMetricWrapper(m, name=prefix + getattr(m, "__name__", "metric"))


class MetricsContainer:
    """The compiled metrics, updated from (y_true, y_pred, sample_weight) every batch."""

    def __init__(
        self,
        metrics: Any = None,
        weighted_metrics: Any = None,
        output_names: list[str] | None = None,
    ) -> None:
        self._output_names = output_names
        self._user = metrics
        self._user_weighted = weighted_metrics
        self._per_output: list[tuple[list[metrics_mod.Metric], list[metrics_mod.Metric]]] | None
        self._per_output = None
        self._flat: list[metrics_mod.Metric] = []
        if not isinstance(metrics, dict) and not isinstance(weighted_metrics, dict):
            # Single-output models know their metrics at compile time (metrics_names works).
            plain = [_as_metric(m) for m in nest.flatten(metrics or [])]
            weighted = [_as_metric(m) for m in nest.flatten(weighted_metrics or [])]
            self._single = (plain, weighted)
            self._flat = plain + weighted
        else:
            self._single = None

    @property
    def metrics(self) -> list[metrics_mod.Metric]:
        return list(self._flat)

    def _build(self, y_pred: Any) -> None:
        names = _output_names(y_pred, self._output_names)
        out = []
        for n in names:

            def pick(spec: Any, name: str = n) -> list[Any]:
                if isinstance(spec, dict):
                    return nest.flatten(spec.get(name) or [])
                return nest.flatten(spec or [])

            prefix = f"{n}_"
            plain = [_as_metric(m, prefix) for m in pick(self._user)]
            weighted = [_as_metric(m, prefix) for m in pick(self._user_weighted)]
            out.append((plain, weighted))
        self._per_output = out
        self._flat = [m for plain, weighted in out for m in plain + weighted]

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        single = self._single
        if single is not None and not nest.is_nested(y_pred):
            plain, weighted = single
            mask = getattr(y_pred, "_keras_mask", None)
            if mask is not None:  # tf_keras: the output's mask weights every metric
                mask, sample_weight = _mask_weights(y_pred, mask, sample_weight)
            for m in plain:
                m.update_state(y_true, y_pred, mask) if mask is not None else m.update_state(
                    y_true, y_pred
                )
            for m in weighted:
                m.update_state(y_true, y_pred, sample_weight)
            return
        if self._per_output is None:
            self._build(y_pred)
        preds = list(y_pred.values()) if isinstance(y_pred, dict) else nest.flatten(y_pred)
        if isinstance(y_true, dict):
            trues = [y_true.get(n) for n in _output_names(y_pred, self._output_names)]
        else:
            trues = nest.flatten(y_true) if len(preds) > 1 else [y_true]
        for (plain, weighted), t, p in zip(self._per_output, trues, preds):
            if t is None:
                continue
            for m in plain:
                m.update_state(t, p)
            for m in weighted:
                m.update_state(t, p, sample_weight)

    def reset_state(self) -> None:
        for m in self._flat:
            m.reset_state()
