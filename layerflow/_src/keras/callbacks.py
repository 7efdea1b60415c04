"""`tf.keras.callbacks`: hooks into fit/evaluate/predict, and the progress display.

`CallbackList` fans every hook out to its callbacks; `fit` always adds a `History` (returned to
the caller) and, unless `verbose=0`, a `ProgbarLogger`.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np


def _float(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


class Callback:
    """Base class: override any of the `on_*` hooks; `self.model` and `self.params` are set.

    >>> class CountEpochs(Callback):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.n = 0
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         self.n += 1
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}
        self.validation_data = None

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def set_model(self, model: Any) -> None:
        self.model = model

    def on_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...


_HOOKS = (
    "on_epoch_begin",
    "on_epoch_end",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_test_batch_begin",
    "on_test_batch_end",
    "on_predict_batch_begin",
    "on_predict_batch_end",
    "on_train_begin",
    "on_train_end",
    "on_test_begin",
    "on_test_end",
    "on_predict_begin",
    "on_predict_end",
)


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
        from layerflow._src.keras import plotting

        return plotting.plot_history(self, path, **kwargs)

    def __repr__(self) -> str:
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


def _monitor_op(mode: str, monitor: str, who: str) -> tuple[Callable[[Any, Any], bool], float]:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}.")
    if mode == "min" or (mode == "auto" and not _is_accuracy_like(monitor)):
        return np.less, 1.0
    return np.greater, -1.0


def _is_accuracy_like(monitor: str) -> bool:
    return bool(re.search(r"acc|auc|precision|recall|top_k", monitor))


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


class ModelCheckpoint(Callback):
    """Save the model (or its weights) every epoch, or only when `monitor` improves.

    `filepath` may hold format fields filled from the epoch and the logs, e.g.
    `"ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5"`. Saving goes through `model.save_weights`
    (with `save_weights_only=True`) or `model.save`, which write files atomically.
    """

    def __init__(
        self,
        filepath: str | os.PathLike[str],
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: Any = "epoch",
        options: Any = None,
        initial_value_threshold: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(
                f"ModelCheckpoint: save_freq must be 'epoch' or a positive number of batches, "
                f"got {save_freq!r}."
            )
        self.save_freq = save_freq
        self.monitor_op, sign = _monitor_op(mode, monitor, "ModelCheckpoint")
        self.best = initial_value_threshold
        if self.best is None:
            self.best = np.inf if sign > 0 else -np.inf
        self._batches = 0
        self._epoch = 0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._save(self._epoch, logs, batch)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, logs)

    def _path(self, epoch: int, logs: dict, batch: int | None) -> str:
        try:
            if batch is None:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as err:
            raise KeyError(
                f"ModelCheckpoint: filepath {self.filepath!r} uses {err} which is not among the "
                f"logs {sorted(logs)} (nor 'epoch'/'batch')."
            ) from None

    def _save(self, epoch: int, logs: dict | None, batch: int | None = None) -> None:
        logs = {k: _float(v) for k, v in (logs or {}).items()}
        path = self._path(epoch, logs, batch)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                print(
                    f"ModelCheckpoint: can save best model only with '{self.monitor}' available "
                    f"in the logs {sorted(logs)}; skipping.",
                    file=sys.stderr,
                )
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0:
                    print(
                        f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}"
                    )
                return
            if self.verbose > 0:
                print(
                    f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                    f"{current:.5f}, saving model to {path}"
                )
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


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


# --- progress -----------------------------------------------------------------------------------


def _format_logs(logs: dict[str, Any]) -> str:
    parts = []
    for k, v in logs.items():
        v = _float(v)
        if isinstance(v, float):
            parts.append(f"{k}: {v:.4f}" if abs(v) >= 1e-3 or v == 0 else f"{k}: {v:.4e}")
    return " - ".join(parts)


def _step_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


def _interactive(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


class ProgbarLogger(Callback):
    """Keras-style progress: a live bar per epoch with `verbose=1` (tqdm when installed),
    one line per epoch with `verbose=2`. Evaluate and predict show a bar with `verbose=1`.
    """

    def __init__(self, count_mode: str = "steps", stateful_metrics: Any = None) -> None:
        super().__init__()
        self._bar: Any = None
        self._last = 0.0
        self._start = 0.0
        self._seen = 0
        self._mode = "train"
        self.stream = None

    @property
    def verbose(self) -> int:
        return int(self.params.get("verbose", 1) or 0)

    def _out(self) -> Any:
        return self.stream or sys.stdout

    def _open(self, total: int | None, mode: str) -> None:
        self._mode = mode
        self._seen = 0
        self._start = self._last = time.perf_counter()
        self._bar = None
        if self.verbose != 1 or not _interactive(self._out()):
            # Like Keras' Progbar: a live bar only on a terminal or notebook; logs and pipes get
            # one finished line per epoch instead of hundreds of carriage-return updates.
            return
        bar_class = _tqdm_class()
        if bar_class is None:  # tqdm is the `progress` extra; without it, print at the end
            return
        self._bar = bar_class(
            total=total,
            file=self._out(),
            leave=True,
            bar_format="{n_fmt}/{total_fmt} [{bar:30}] - {keras}",
            ascii=".>=",
            mininterval=0.1,
        )

    def _postfix(self, logs: dict | None) -> str:
        elapsed = time.perf_counter() - self._start
        text = _format_logs(logs or {})
        head = f"{elapsed:.0f}s {_step_time(elapsed / max(self._seen, 1))}"
        return head + (f" - {text}" if text else "")

    def _step(self, batch: int, logs: dict | None) -> None:
        self._seen = batch + 1
        if self._bar is None:
            return
        now = time.perf_counter()
        self._bar.update(self._seen - self._bar.n)
        if now - self._last >= 0.1:
            self._last = now
            self._bar.keras = self._postfix(logs)

    def _close(self, logs: dict | None, epoch_line: bool) -> None:
        if self._bar is not None:
            self._bar.keras = self._postfix(logs)
            if self._bar.total is None:
                self._bar.total = self._seen
            self._bar.close()
            self._bar = None
        elif self.verbose == 1:
            total = self._seen
            print(f"{total}/{total} [{'=' * 30}] - {self._postfix(logs)}", file=self._out())
        elif self.verbose == 2 and epoch_line:
            secs = time.perf_counter() - self._start
            steps = self.params.get("steps") if self._mode == "train" else None
            total = steps or self._seen
            text = _format_logs(logs or {})
            print(
                f"{self._seen}/{total} - {secs:.0f}s - {text + ' - ' if text else ''}"
                f"{_step_time(secs / max(self._seen, 1))}",
                file=self._out(),
            )

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}", file=self._out())
        self._open(self.params.get("steps"), "train")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._step(batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._close(logs, True)

    def on_test_begin(self, logs: dict | None = None) -> None:
        if not self.params.get("_in_fit"):
            self._open(self.params.get("test_steps"), "test")

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if not self.params.get("_in_fit"):
            self._step(batch, logs)

    def on_test_end(self, logs: dict | None = None) -> None:
        if not self.params.get("_in_fit"):
            self._close(logs, False)

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._open(self.params.get("predict_steps"), "predict")

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._step(batch, None)

    def on_predict_end(self, logs: dict | None = None) -> None:
        self._close(None, False)


_BAR_CLASS: list[Any] = []


def _tqdm_class() -> Any:
    """A tqdm subclass whose bar format can show Keras' "1s 4ms/step - loss: ..." text."""
    if not _BAR_CLASS:
        try:
            from tqdm import tqdm
        except ImportError:
            _BAR_CLASS.append(None)
            return None

        class KerasBar(tqdm):
            keras = ""

            @property
            def format_dict(self) -> dict[str, Any]:
                d = super().format_dict
                d["keras"] = self.keras
                return d

        _BAR_CLASS.append(KerasBar)
    return _BAR_CLASS[0]


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
