"""`ModelCheckpoint`: save the model or its weights each epoch, or only when `monitor` improves."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from layerflow._src.keras.training.callback_base import Callback, _float, _monitor_op


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
