"""`tf.keras.utils.SidecarEvaluator` and `tf.keras.callbacks.SidecarEvaluatorModelExport`:
evaluate, in a process of its own, the checkpoints a training process writes.

The trainer saves with `tf.train.CheckpointManager` / `tf.train.Checkpoint.save` (entries
`model/...`, `optimizer/...`), or with `ModelCheckpoint(save_weights_only=True)` to files named
`<name>-<n>`; the evaluator waits for each new checkpoint, restores it and runs
`model.evaluate`, until it has evaluated the checkpoint numbered `max_evaluations` or no new
checkpoint appeared for `timeout` seconds.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from layerflow._src.keras.training.checkpoint_callbacks import ModelCheckpoint
from layerflow._src.saving import restore
from layerflow._src.saving.checkpoint import Checkpoint, latest_checkpoint

_log = logging.getLogger("layerflow")
_CHECKPOINT_TIMEOUT_SEC = 30
_NUMBERED = re.compile(r".*-(?P<n>\d+)$")


def _latest(folder: str) -> str | None:
    """The latest checkpoint of `folder`: the one its `checkpoint` state file names, else the
    most recently written file named `<name>-<n>` (what ModelCheckpoint leaves)."""
    path = latest_checkpoint(folder)
    if path is not None:
        return path
    if not os.path.isdir(folder):
        return None
    numbered = [
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if _NUMBERED.match(name) and os.path.isfile(os.path.join(folder, name))
    ]
    return max(numbered, key=os.path.getmtime, default=None)


def checkpoints_iterator(
    folder: str, min_interval_secs: float = 0.0, timeout: float | None = None, poll: float = 0.2
) -> Iterator[str]:
    """Each new latest checkpoint of `folder`, as it appears; stops after `timeout` seconds
    without a new one (never, with None)."""
    last = None
    while True:
        start = time.monotonic()
        while True:
            path = _latest(folder)
            if path is not None and path != last:
                break
            if timeout is not None and time.monotonic() - start > timeout:
                return
            time.sleep(poll)
        last = path
        yield path
        if min_interval_secs:
            time.sleep(min_interval_secs)


class SidecarEvaluator:
    """Evaluate a training job's checkpoints as they appear (run `start()` in its own process).

    `model`: the same architecture, compiled with the metrics to compute; `data`: what
    `model.evaluate` takes; `checkpoint_dir`: where the trainer saves; `steps`: evaluation
    steps per checkpoint; `max_evaluations`: stop after the checkpoint whose name ends in
    `-<max_evaluations>`; `callbacks`: passed to `evaluate` (e.g. a TensorBoard writing the
    evaluation metrics); `timeout`: seconds to wait for a new checkpoint before stopping.
    """

    def __init__(
        self,
        model: Any,
        data: Any,
        checkpoint_dir: Any,
        steps: int | None = None,
        max_evaluations: int | None = None,
        callbacks: Any = None,
        timeout: float = _CHECKPOINT_TIMEOUT_SEC,
    ) -> None:
        self.model = model
        self.data = data
        self.checkpoint_dir = os.fspath(checkpoint_dir)
        self.steps = steps
        self.max_evaluations = max_evaluations
        self.callbacks = list(callbacks or [])
        self.timeout = timeout
        self.results: dict[str, Any] = {}

    def start(self) -> None:
        """Run the evaluation loop (returns when it stops, see the class docstring)."""
        children: dict[str, Any] = {"model": self.model}
        if getattr(self.model, "optimizer", None) is not None:
            children["optimizer"] = self.model.optimizer
        checkpoint = Checkpoint(**children)
        for path in checkpoints_iterator(self.checkpoint_dir, timeout=self.timeout):
            try:
                entries = restore.describe(path)
                if any(key.startswith("model/") for key in entries):
                    checkpoint.restore(path).expect_partial()
                else:  # a file of model.save_weights (ModelCheckpoint, save_weights_only)
                    self.model.load_weights(path)
            except (OSError, ValueError) as exc:
                # A checkpoint still being written, or replaced meanwhile: wait for the next.
                _log.info("SidecarEvaluator could not load %s (%s); retrying.", path, exc)
                continue
            _log.info("Evaluation starts: model weights loaded from %s", path)
            self.results = self.model.evaluate(
                self.data, steps=self.steps, callbacks=self.callbacks, verbose=0, return_dict=True
            )
            _log.info("End of evaluation. Metrics: %s", self.results)
            match = _NUMBERED.match(path)
            if self.max_evaluations and match and self.max_evaluations <= int(match["n"]):
                _log.info("Last checkpoint evaluated. SidecarEvaluator stops.")
                return
        _log.info(
            "No new checkpoint appeared in %s for %s seconds; SidecarEvaluator stops.",
            self.checkpoint_dir,
            self.timeout,
        )


class SidecarEvaluatorModelExport(ModelCheckpoint):
    """A callback for `SidecarEvaluator`: after each evaluation, save the model to
    `export_filepath` when `monitor` improved (`save_best_only`), the file's `{epoch}` being the
    number of the checkpoint just evaluated (the newest file matching `checkpoint_filepath`).
    """

    def __init__(self, export_filepath: Any, checkpoint_filepath: Any, **kwargs: Any) -> None:
        super().__init__(filepath=export_filepath, save_best_only=True, **kwargs)
        self._checkpoint_filepath = os.fspath(checkpoint_filepath)
        self.export_index = 0

    def on_test_begin(self, logs: dict | None = None) -> None:
        folder = os.path.dirname(self._checkpoint_filepath) or "."
        latest = _latest(folder)
        match = re.match(r".*ckpt-(?P<ckpt>\d+)", latest or "")
        self.export_index = int(match["ckpt"]) if match else 0

    def on_test_end(self, logs: dict | None = None) -> None:
        # ModelCheckpoint numbers files with epoch + 1; the export names the checkpoint.
        self._save(self.export_index - 1, logs)
