"""Callbacks that talk to the world outside the training loop: `TensorBoard` (event files
through `tf.summary`), `BackupAndRestore` (fault-tolerant training), `RemoteMonitor` (an HTTP
POST per epoch) and the legacy `BaseLogger`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import warnings
from typing import Any

import numpy as np

from layerflow._src.framework.variables import Variable
from layerflow._src.keras.optimizers.schedules import LearningRateSchedule
from layerflow._src.keras.training.callback_base import Callback
from layerflow._src.saving.checkpoint import Checkpoint
from layerflow._src.summary import summary_ops
from layerflow._src.summary import writer as summary_writer


# --- BaseLogger -------------------------------------------------------------------------------
class BaseLogger(Callback):
    """Keras 2's epoch averager of batch logs: each batch's values weighted by its `size` log
    (Keras 1/TF1 loops put one there), the average written into the epoch logs; metrics named
    in `stateful_metrics` keep their last value. TF 2's `fit` already logs epoch averages and
    no `size`, so there it changes nothing (tf_keras would fail on the missing
    `params["metrics"]`; here the names default to those seen).
    """

    def __init__(self, stateful_metrics: Any = None) -> None:
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.seen = 0
        self.totals: dict[str, Any] = {}

    def on_batch_end(self, batch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        batch_size = logs.get("size", 0)
        num_steps = logs.get("num_steps", 1)
        self.seen += batch_size * num_steps
        for k, v in logs.items():
            if k in self.stateful_metrics:
                self.totals[k] = v
            elif k in self.totals:
                self.totals[k] += v * batch_size
            else:
                self.totals[k] = v * batch_size

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is None:
            return
        names = (self.params or {}).get("metrics") or list(self.totals)
        for k in names:
            if k not in self.totals:
                continue
            if k in self.stateful_metrics:
                logs[k] = self.totals[k]
            elif self.seen:
                logs[k] = self.totals[k] / self.seen


# --- RemoteMonitor -----------------------------------------------------------------------------
class RemoteMonitor(Callback):
    """POST the epoch logs to `root + path` at each epoch end: as a form field `field` holding
    JSON (default), or as a JSON body (`send_as_json=True`). Uses the standard library; a server
    that cannot be reached gives a warning, never an error, so training goes on.
    """

    def __init__(
        self,
        root: str = "http://localhost:9000",
        path: str = "/publish/epoch/end/",
        field: str = "data",
        headers: dict | None = None,
        send_as_json: bool = False,
        timeout: float = 5.0,
    ) -> None:
        super().__init__()
        self.root = root
        self.path = path
        self.field = field
        self.headers = headers
        self.send_as_json = send_as_json
        self.timeout = timeout

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        import urllib.error  # here: http.client and ssl are slow to import, and rarely needed
        import urllib.parse
        import urllib.request

        send: dict[str, Any] = {"epoch": epoch}
        for k, v in (logs or {}).items():
            if isinstance(v, (np.ndarray, np.generic)):
                v = v.item()
            elif hasattr(v, "numpy"):
                v = np.asarray(v).item()
            send[k] = v
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(
            self.root + self.path, data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            warnings.warn(
                f"Warning: could not reach RemoteMonitor root server at {self.root} ({exc}).",
                RuntimeWarning,
                stacklevel=2,
            )


# --- BackupAndRestore -----------------------------------------------------------------------------
_CKPT = "chief"  # the file name tf_keras uses for the single worker's checkpoint folder


class BackupAndRestore(Callback):
    """Fault-tolerant training: back up the model, its optimizer and the training position to
    `backup_dir`; a `fit` started again after an interruption restores them and continues at
    the same epoch and batch (batches already trained on in that epoch are skipped, so with
    unshuffled data the result equals one uninterrupted run).

    `save_freq`: "epoch" (after each epoch), an int N (every N batches), or False (only before
    a preemption). `delete_checkpoint`: remove the backup when `fit` ends normally.
    `save_before_preemption`: on SIGTERM, back up at the end of the running batch and exit with
    status 42 (the process is being preempted), as tf_keras's preemption handler does.

    >>> import layerflow as tf
    >>> tf.keras.callbacks.BackupAndRestore(backup_dir="/tmp/backup").save_freq
    'epoch'
    """

    def __init__(
        self,
        backup_dir: Any,
        save_freq: Any = "epoch",
        delete_checkpoint: bool = True,
        save_before_preemption: bool = False,
    ) -> None:
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: backup_dir must be provided (a folder path).")
        if save_freq != "epoch" and save_freq is not False:
            if isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq <= 0:
                raise ValueError(
                    "BackupAndRestore: save_freq must be 'epoch', a positive integer or False, "
                    f"got {save_freq!r}."
                )
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self.save_before_preemption = save_before_preemption
        self._batches_seen_since_last_saving = 0
        self._epoch = 0
        self._resume: tuple[int, int] | None = None
        self._preempted = False
        self._old_handler: Any = None

    @property
    def _path(self) -> str:
        return os.path.join(self.backup_dir, _CKPT, "checkpoint")

    def _checkpoint(self, epoch: Variable, step: Variable) -> Checkpoint:
        children: dict[str, Any] = {"model": self.model, "epoch": epoch, "step": step}
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            children["optimizer"] = optimizer
        return Checkpoint(**children)

    def _save(self, epoch: int, step: int) -> None:
        epoch_v = Variable(np.int64(epoch), trainable=False, name="epoch")
        step_v = Variable(np.int64(step), trainable=False, name="step")
        self._checkpoint(epoch_v, step_v).write(self._path)  # one file, written atomically

    def fit_resume_point(self) -> tuple[int, int] | None:
        """(epoch, batch) where the interrupted `fit` stopped, after `on_train_begin`."""
        return self._resume

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._resume = None
        self._batches_seen_since_last_saving = 0
        if os.path.exists(self._path):
            epoch_v = Variable(np.int64(0), trainable=False, name="epoch")
            step_v = Variable(np.int64(0), trainable=False, name="step")
            self._checkpoint(epoch_v, step_v).restore(self._path)
            self._resume = (int(epoch_v.numpy()), int(step_v.numpy()))
        if self.save_before_preemption:
            self._install_preemption_handler()

    def _install_preemption_handler(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            warnings.warn(
                "BackupAndRestore(save_before_preemption=True) needs fit to run in the main "
                "thread (signal handlers); no preemption backup will be made.",
                RuntimeWarning,
                stacklevel=3,
            )
            return
        self._preempted = False

        def on_sigterm(signum: int, frame: Any) -> None:
            self._preempted = True

        self._old_handler = signal.signal(signal.SIGTERM, on_sigterm)

    def _restore_handler(self) -> None:
        if self._old_handler is not None:
            signal.signal(signal.SIGTERM, self._old_handler)
            self._old_handler = None

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        steps = (self.params or {}).get("steps")
        done = batch + 1
        position = (self._epoch + 1, 0) if steps and done >= steps else (self._epoch, done)
        if self._preempted:
            self._save(*position)
            self._restore_handler()
            raise SystemExit(42)
        if isinstance(self.save_freq, int) and self.save_freq is not False:
            self._batches_seen_since_last_saving += 1
            if self._batches_seen_since_last_saving >= self.save_freq:
                self._save(*position)
                self._batches_seen_since_last_saving = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0)

    def on_train_end(self, logs: dict | None = None) -> None:
        self._restore_handler()
        if self.delete_checkpoint and os.path.exists(self._path):
            os.remove(self._path)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(self._path))
        self._resume = None


def resume_point(callbacks: list[Any], initial_epoch: int) -> tuple[int, int]:
    """(epoch, batches to skip) for `fit`, after `on_train_begin`: where a restored
    `BackupAndRestore` says the interrupted run stopped, else (initial_epoch, 0)."""
    for cb in callbacks:
        point = cb.fit_resume_point() if hasattr(cb, "fit_resume_point") else None
        if point is not None:
            return max(point[0], initial_epoch), point[1] if point[0] >= initial_epoch else 0
    return initial_epoch, 0


# --- TensorBoard --------------------------------------------------------------------------------
class TensorBoard(Callback):
    """Write TensorBoard logs under `log_dir/train` and `log_dir/validation`.

    - Scalars: `epoch_<metric>` at each epoch end (validation metrics to the validation run),
      `epoch_learning_rate` when the learning rate is a schedule, `epoch_steps_per_second`
      with `write_steps_per_second`; with `update_freq` "batch" or N, `batch_<metric>` every N
      optimizer steps (and summaries the model writes itself, which run under the train
      writer with that step); `evaluation_<metric>_vs_iterations` after each evaluation.
    - `histogram_freq` N: a histogram of every weight every N epochs; `write_images`: the
      weights as images too (Dense kernels, biases, Conv kernels).
    - `write_graph`: the Keras model's structure (its JSON config, the "conceptual graph" of
      TensorBoard's Graphs dashboard) for Sequential and functional models. There is no TF op
      graph to write: layerflow runs eagerly.
    - Profiling (`profile_batch`) and the embedding projector (`embeddings_freq`) are not
      available: a value other than 0 gives a warning and is ignored.

    Needs the `tensorboard` package (`pip install layerflow[tensorboard]`).
    """

    def __init__(
        self,
        log_dir: Any = "logs",
        histogram_freq: int = 0,
        write_graph: bool = True,
        write_images: bool = False,
        write_steps_per_second: bool = False,
        update_freq: Any = "epoch",
        profile_batch: Any = 0,
        embeddings_freq: int = 0,
        embeddings_metadata: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        unknown = set(kwargs) - {
            "write_grads",
            "embeddings_layer_names",
            "embeddings_data",
            "batch_size",
        }
        if unknown:
            raise ValueError(
                f"Unrecognized arguments in `TensorBoard` Callback: {sorted(unknown)}. Supported "
                "kwargs are: ['batch_size', 'embeddings_data', 'embeddings_layer_names', "
                "'write_grads'] (all ignored, as in TF 2)."
            )
        if update_freq != "epoch" and update_freq != "batch":
            if isinstance(update_freq, bool) or not isinstance(update_freq, int) or update_freq < 1:
                raise ValueError(
                    "TensorBoard: update_freq must be 'epoch', 'batch' or a positive integer, got "
                    f"{update_freq!r}."
                )
        if histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be >= 0, got {histogram_freq}.")
        for arg, value, what in (
            ("profile_batch", profile_batch, "profiling"),
            ("embeddings_freq", embeddings_freq, "the embedding projector"),
        ):
            if value not in (0, None, "0", "0,0", (0, 0)):
                warnings.warn(
                    f"TensorBoard: {arg}={value!r} is ignored: {what} is not available in "
                    "layerflow.",
                    UserWarning,
                    stacklevel=2,
                )
        summary_writer.require_tensorboard("tf.keras.callbacks.TensorBoard")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers: dict[str, Any] = {}
        self._pushed: list[Any] = []
        self._epoch_start_time = 0.0
        self._previous_epoch_iterations = 0
        self._batch_start_time = 0.0
        self._val_steps = 0

    # writers ---------------------------------------------------------------------------------
    def set_model(self, model: Any) -> None:
        self.model = model
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._close_writers()
        if self.write_graph:
            self._write_keras_model_summary()

    def _writer(self, which: str) -> Any:
        if which not in self._writers:
            folder = self._train_dir if which == "train" else self._val_dir
            self._writers[which] = summary_writer.create_file_writer(folder)
        return self._writers[which]

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def _train_step(self) -> Any:
        optimizer = getattr(self.model, "optimizer", None)
        return optimizer.iterations if optimizer is not None else 0

    def _push_writer(self, which: str, step: Any) -> None:
        if self.update_freq == "epoch":
            return
        stack = contextlib.ExitStack()
        stack.enter_context(self._writer(which).as_default(step))
        freq = self.update_freq
        stack.enter_context(
            summary_writer.record_if(lambda: summary_writer.step_value(step) % freq == 0)
        )
        self._pushed.append(stack)

    def _pop_writer(self) -> None:
        if self.update_freq != "epoch" and self._pushed:
            self._pushed.pop().close()

    def _write_keras_model_summary(self) -> None:
        model = self.model
        sequential = type(model).__name__ == "Sequential"
        if not (getattr(model, "_is_graph_network", False) or sequential):
            return
        try:
            to_json = getattr(model, "to_json", None)
            if to_json is not None:
                json_string = to_json()
            else:
                json_string = json.dumps(
                    {"class_name": type(model).__name__, "config": model.get_config()},
                    default=lambda o: getattr(o, "name", str(o)),
                )
        except (NotImplementedError, TypeError, ValueError, AttributeError):
            return  # a model whose config cannot be written has no structure to show
        from tensorboard.compat.proto import summary_pb2

        meta = summary_pb2.SummaryMetadata()
        meta.plugin_data.plugin_name = "graph_keras_model"
        meta.plugin_data.content = b"1"
        with self._writer("train").as_default(), summary_writer.record_if(True):
            summary_ops.write("keras", np.array(json_string, dtype=object), step=0, metadata=meta)

    # training hooks -----------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        self._push_writer("train", self._train_step())

    def on_train_end(self, logs: dict | None = None) -> None:
        self._pop_writer()
        self._close_writers()

    def on_test_begin(self, logs: dict | None = None) -> None:
        self._val_steps = 0
        self._push_writer("validation", self._val_step_value)

    @property
    def _val_step_value(self) -> Any:
        return _Counter(self)

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._val_steps += 1

    def on_test_end(self, logs: dict | None = None) -> None:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and logs:
            with summary_writer.record_if(True), self._writer("validation").as_default():
                step = int(optimizer.iterations.numpy())
                for name, value in logs.items():
                    summary_ops.scalar(f"evaluation_{name}_vs_iterations", value, step=step)
        self._pop_writer()

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.update_freq == "epoch":
            return
        step = self._train_step()
        if self.write_steps_per_second:
            elapsed = max(time.time() - self._batch_start_time, 1e-9)
            summary_ops.scalar("batch_steps_per_second", 1.0 / elapsed, step=step)
        for name, value in (logs or {}).items():
            summary_ops.scalar("batch_" + name, value, step=step)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self.write_steps_per_second:
            self._previous_epoch_iterations = summary_writer.step_value(self._train_step())
            self._epoch_start_time = time.time()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _log_epoch_metrics(self, epoch: int, logs: dict | None) -> None:
        if not logs:
            return
        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val_logs = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        optimizer = getattr(self.model, "optimizer", None)
        schedule = getattr(optimizer, "_learning_rate", None)
        if isinstance(schedule, LearningRateSchedule):
            train_logs["learning_rate"] = schedule(optimizer.iterations)
        if self.write_steps_per_second:
            done = summary_writer.step_value(self._train_step()) - self._previous_epoch_iterations
            train_logs["steps_per_second"] = done / max(time.time() - self._epoch_start_time, 1e-9)
        with summary_writer.record_if(True):
            if train_logs:
                with self._writer("train").as_default():
                    for name, value in train_logs.items():
                        summary_ops.scalar("epoch_" + name, value, step=epoch)
            if val_logs:
                with self._writer("validation").as_default():
                    for name, value in val_logs.items():
                        summary_ops.scalar("epoch_" + name, value, step=epoch)

    def _log_weights(self, epoch: int) -> None:
        with self._writer("train").as_default(), summary_writer.record_if(True):
            for layer in self.model.layers:
                for weight in layer.weights:
                    name = weight.name.replace(":", "_")
                    summary_ops.histogram(name + "/histogram", weight, step=epoch)
                    if self.write_images:
                        self._log_weight_as_image(weight, name + "/image", epoch)

    def _log_weight_as_image(self, weight: Any, name: str, epoch: int) -> None:
        """tf_keras's layout: a bias as a 1 x n image, a Dense kernel as one image (its longer
        side horizontal), a Conv kernel as one image per output channel."""
        w = np.squeeze(np.asarray(weight))
        if w.ndim == 1:
            w = w.reshape(1, w.shape[0], 1, 1)
        elif w.ndim == 2:
            if w.shape[0] > w.shape[1]:
                w = w.T
            w = w.reshape(1, w.shape[0], w.shape[1], 1)
        elif w.ndim == 3:
            w = np.transpose(w, (2, 0, 1))[..., None]
        else:
            return
        # Scale to [0, 1] for display (TF casts floats outside it to black or white).
        lo, hi = float(w.min()), float(w.max())
        w = (w - lo) / (hi - lo) if hi > lo else np.zeros_like(w)
        summary_ops.image(name, w.astype(np.float32), step=epoch)


class _Counter:
    """The validation run's batch count, read when a summary is written."""

    def __init__(self, owner: TensorBoard) -> None:
        self._owner = owner

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._owner._val_steps, dtype=dtype)


__all__ = ["BackupAndRestore", "BaseLogger", "RemoteMonitor", "TensorBoard", "resume_point"]
