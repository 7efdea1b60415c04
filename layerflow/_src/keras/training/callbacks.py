"""`tf.keras.callbacks`: hooks into fit/evaluate/predict.

`CallbackList` fans every hook out to its callbacks; `fit` always adds a `History` (returned to
the caller) and, unless `verbose=0`, a `ProgbarLogger`. The base class is in `callback_base`,
the progress display in `progbar`, `ModelCheckpoint` in `checkpoint_callbacks`; all are
re-exported here.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from layerflow._src.keras.training.callback_base import _HOOKS, Callback, _float, _monitor_op
from layerflow._src.keras.training.checkpoint_callbacks import ModelCheckpoint
from layerflow._src.keras.utils.progbar import ProgbarLogger


class CallbackList(Callback):
    """Several callbacks called as one, in order.

    Batch hooks are only dispatched to callbacks that override them, so the training loop
    pays nothing for callbacks that only care about epochs.
    """

    def __init__(
        self,
        callbacks: Iterable[Callback] | None = None,
        add_history: bool = False,
        add_progbar: bool = False,
        model: Any = None,
        **params: Any,
    ) -> None:
        super().__init__()
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(
                    f"callbacks must be tf.keras.callbacks.Callback instances, got "
                    f"{type(cb).__name__}: subclass Callback or use LambdaCallback."
                )
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        self._history = None
        if add_history:
            existing = [c for c in self.callbacks if isinstance(c, History)]
            self._history = existing[0] if existing else History()
            if not existing:
                self.callbacks.append(self._history)
        # Progress last (so it shows logs other callbacks changed), History before it.
        self.callbacks.sort(key=lambda c: isinstance(c, ProgbarLogger))
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)
        self._refresh()

    def _refresh(self) -> None:
        self._active: dict[str, list[Callable[..., Any]]] = {}
        for hook in _HOOKS:
            fns = []
            for cb in self.callbacks:
                fn = getattr(cb, hook)
                if (
                    _overrides(cb, hook)
                    or hook in ("on_train_batch_begin", "on_train_batch_end")
                    and (_overrides(cb, "on_batch_begin" if "begin" in hook else "on_batch_end"))
                ):
                    fns.append(fn)
            self._active[hook] = fns

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)
        if self.model is not None:
            callback.set_model(self.model)
        callback.set_params(self.params)
        self._refresh()

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params
        for cb in self.callbacks:
            cb.set_params(params)

    def set_model(self, model: Any) -> None:
        self.model = model
        for cb in self.callbacks:
            cb.set_model(model)

    def wants(self, hook: str) -> bool:
        return bool(self._active[hook])

    def _call(self, hook: str, *args: Any) -> None:
        for fn in self._active[hook]:
            fn(*args)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._call("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_predict_batch_end", batch, logs)

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._call("on_train_begin", logs)

    def on_train_end(self, logs: dict | None = None) -> None:
        self._call("on_train_end", logs)

    def on_test_begin(self, logs: dict | None = None) -> None:
        self._call("on_test_begin", logs)

    def on_test_end(self, logs: dict | None = None) -> None:
        self._call("on_test_end", logs)

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._call("on_predict_begin", logs)

    def on_predict_end(self, logs: dict | None = None) -> None:
        self._call("on_predict_end", logs)

    def __iter__(self) -> Any:
        return iter(self.callbacks)


def _overrides(cb: Callback, hook: str) -> bool:
    given = getattr(cb, "_given", None)  # LambdaCallback sets its hooks on the instance
    if given is not None:
        return hook in given
    return getattr(type(cb), hook, None) is not getattr(Callback, hook)


class History(Callback):
    """Records every epoch's logs: `history.history["loss"]` is the list of epoch losses.

    `fit` returns it; `history.plot("curves.png")` draws the curves (needs matplotlib).
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[Any]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        self.epoch.append(epoch)
        for k, v in logs.items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self

    def plot(self, path: str | os.PathLike[str], **kwargs: Any) -> Any:
        """Write the training curves (one panel per metric, validation beside) to a PNG."""
        # Imported here: plotting pulls in matplotlib, an optional extra.
        from layerflow._src.keras.utils import plotting

        return plotting.plot_history(self, path, **kwargs)

    def __repr__(self) -> str:
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


class EarlyStopping(Callback):
    """Stop training when `monitor` has not improved by `min_delta` for `patience` epochs.

    With `restore_best_weights=True` the model gets the weights of its best epoch back when
    training stops (Keras restores them only when stopping early; so do we, and also at the
    end of training when a better epoch exists, as Keras 2.11+ does).
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.monitor_op, sign = _monitor_op(mode, monitor, "EarlyStopping")
        self.min_delta *= -sign if sign > 0 else 1
        self.wait = 0
        self.stopped_epoch = 0
        self.best: float = np.inf if sign > 0 else -np.inf
        self.best_weights: list[Any] | None = None
        self.best_epoch = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def _improved(self, current: float, reference: float) -> bool:
        return bool(self.monitor_op(current - self.min_delta, reference))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None:
            print(
                f"EarlyStopping: metric '{self.monitor}' is not in the logs (available: "
                f"{sorted(logs or {})}); skipping this epoch.",
                file=sys.stderr,
            )
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print(
                        "Restoring model weights from the end of the best epoch: "
                        f"{self.best_epoch + 1}."
                    )
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class LearningRateScheduler(Callback):
    """Set the learning rate each epoch from `schedule(epoch, lr)` (or `schedule(epoch)`).

    >>> cb = LearningRateScheduler(lambda epoch, lr: lr * 0.5)
    """

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        opt = self.model.optimizer
        lr = float(opt.learning_rate)
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = _float(new)
        if not isinstance(new, float) or math.isnan(new):
            raise ValueError(
                f"LearningRateScheduler: the schedule must return a finite float, got {new!r}."
            )
        opt.learning_rate = new
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["lr"] = float(self.model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when `monitor` stalls for `patience` epochs."""

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0, got {factor}.")
        self.monitor = monitor
        self.factor = factor
        self.patience = patience
        self.verbose = verbose
        self.min_delta = min_delta
        self.cooldown = cooldown
        self.min_lr = min_lr
        self.monitor_op, sign = _monitor_op(mode, monitor, "ReduceLROnPlateau")
        self._sign = sign
        self._reset()

    def _reset(self) -> None:
        self.best = np.inf if self._sign > 0 else -np.inf
        self.wait = 0
        self.cooldown_counter = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def _better(self, current: float) -> bool:
        if self._sign > 0:
            return current < self.best - self.min_delta
        return current > self.best + self.min_delta

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs if logs is not None else {}
        opt = self.model.optimizer
        logs["lr"] = float(opt.learning_rate)
        current = logs.get(self.monitor)
        if current is None:
            print(
                f"ReduceLROnPlateau: metric '{self.monitor}' is not in the logs "
                f"{sorted(logs)}; skipping.",
                file=sys.stderr,
            )
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._better(current):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(opt.learning_rate)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    opt.learning_rate = new
                    if self.verbose > 0:
                        print(
                            f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                            f"to {new}."
                        )
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class CSVLogger(Callback):
    """Stream each epoch's logs to a CSV file (one row per epoch, header first)."""

    def __init__(
        self, filename: str | os.PathLike[str], separator: str = ",", append: bool = False
    ) -> None:
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys: list[str] | None = None
        self._file: io.TextIOBase | None = None
        self._writer: Any = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        has_header = (
            self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        )
        self._file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115
        self._has_header = has_header
        self.keys = None
        self._writer = None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            self._writer = csv.DictWriter(
                self._file, fieldnames=["epoch", *self.keys], delimiter=self.sep
            )
            if not self._has_header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        for k in self.keys:
            v = logs.get(k, "NA")
            row[k] = _float(v)
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TerminateOnNaN(Callback):
    """Stop training as soon as a batch's loss is NaN or infinite."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training", file=sys.stderr)
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from plain functions: `LambdaCallback(on_epoch_end=lambda epoch, logs: ...)`."""

    def __init__(
        self,
        on_epoch_begin: Callable | None = None,
        on_epoch_end: Callable | None = None,
        on_batch_begin: Callable | None = None,
        on_batch_end: Callable | None = None,
        on_train_begin: Callable | None = None,
        on_train_end: Callable | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        given = {
            "on_epoch_begin": on_epoch_begin,
            "on_epoch_end": on_epoch_end,
            "on_train_batch_begin": on_batch_begin,
            "on_train_batch_end": on_batch_end,
            "on_train_begin": on_train_begin,
            "on_train_end": on_train_end,
            **kwargs,
        }
        for hook, fn in given.items():
            if fn is None:
                continue
            if hook not in _HOOKS:
                raise TypeError(f"LambdaCallback: unknown hook {hook!r}; known: {list(_HOOKS)}.")
            setattr(self, hook, fn)
        self._given = {k for k, v in given.items() if v is not None}


def configure(callbacks: Any, model: Any, verbose: int, **params: Any) -> CallbackList:
    """The CallbackList fit/evaluate/predict use: the user's callbacks, History, progress."""
    if isinstance(callbacks, CallbackList):
        cbl = callbacks
        cbl.set_model(model)
        cbl.set_params({**cbl.params, "verbose": verbose, **params})
        return cbl
    cbl = CallbackList(
        list(callbacks or []),
        add_history=params.pop("_history", False),
        add_progbar=verbose != 0,
        model=model,
    )
    cbl.set_params({"verbose": verbose, **params})
    return cbl


__all__ = [
    "Callback",
    "CallbackList",
    "History",
    "EarlyStopping",
    "ModelCheckpoint",
    "LearningRateScheduler",
    "ReduceLROnPlateau",
    "CSVLogger",
    "TerminateOnNaN",
    "ProgbarLogger",
    "LambdaCallback",
]
