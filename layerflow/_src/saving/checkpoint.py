"""`tf.train.Checkpoint`, `tf.train.CheckpointManager` and `tf.train.latest_checkpoint`.

A checkpoint is one safetensors file (layerflow's weights format) holding every variable
reachable from the checkpoint's children, keyed by structural paths (`model/hidden/kernel`,
`optimizer/slots/0`, `save_counter`). `save(prefix)` writes `prefix-N` and records it in the
folder's `checkpoint` state file, in TensorFlow's text format, so `latest_checkpoint` finds it.

With `CheckpointOptions(experimental_sharding_callback=...)` (`sharding.py`) the file at the
checkpoint's path is instead an index naming several data files beside it (`sharded_file.py`);
every reader takes both forms.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import warnings
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.device_spec import DeviceSpec
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.saving import python_state, restore, sharded_file, sharding, weights_file
from layerflow._src.saving.restore import LoadStatus
from layerflow._src.utils.files import atomic_write

STATE_FILE = "checkpoint"


class Checkpoint(Trackable):
    """Groups trackables (models, layers, optimizers, variables) for saving and restoring.

    >>> import os, tempfile, layerflow as tf
    >>> v = tf.Variable(3.0)
    >>> ckpt = tf.train.Checkpoint(v=v)
    >>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
    >>> os.path.basename(path)
    'ckpt-1'
    >>> _ = v.assign(0.0)
    >>> ckpt.restore(path).assert_consumed().__class__.__name__
    'LoadStatus'
    >>> float(v.numpy())
    3.0
    """

    def __init__(self, root: Any = None, **kwargs: Any) -> None:
        children: dict[str, Any] = {}
        if root is not None:
            _check_child("root", root)
            children.update(root._trackable_children() if isinstance(root, Trackable) else {})
        for name, value in kwargs.items():
            _check_child(name, value)
            children[name] = value
        if "save_counter" in children:
            raise ValueError("tf.train.Checkpoint: 'save_counter' is reserved; use another name.")
        self._children = children
        self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        self._writer = _BackgroundWriter()

    @property
    def save_counter(self) -> Variable:
        """How many times `save` ran (restored with the checkpoint, so numbering continues)."""
        return self._save_counter

    def _trackable_children(self) -> dict[str, Any]:
        return {**self._children, "save_counter": self._save_counter}

    def __getattr__(self, name: str) -> Any:
        children = self.__dict__.get("_children", {})
        if name in children:
            return children[name]
        raise AttributeError(f"'Checkpoint' object has no attribute {name!r}")

    def write(self, file_prefix: Any, options: Any = None) -> str:
        """Write one file at exactly `file_prefix` (no numbering, no state file).

        Missing parent folders are created, as TensorFlow does.
        """
        path = os.fspath(file_prefix)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._write_then(path, options, lambda: None)
        return path

    def _write_then(self, path: str, options: Any, after: Any) -> None:
        """Write the checkpoint file, then run `after()`: now, or (with async options) in the
        background on a copy of the values taken now. A sharding callback runs now (its
        errors raise here), before anything is written."""
        callback = getattr(options, "experimental_sharding_callback", None)
        if not _is_async(options):
            self.sync()  # an earlier async write lands first
            tensors, info = restore.snapshot(self, "layerflow.checkpoint")
            _write_files(path, tensors, info, _shards(self, tensors, callback))
            after()
            return
        tensors, info = restore.snapshot(self, "layerflow.checkpoint", copy=True)
        shards = _shards(self, tensors, callback)

        def job() -> None:
            _write_files(path, tensors, info, shards)
            after()

        self._writer.submit(job)

    def sync(self) -> None:
        """Wait until every asynchronous save has been written (`CheckpointOptions(
        enable_async=True)`); re-raise the error of one that failed. Saves without async
        options are written before `save` returns, so there is nothing to wait for."""
        self._writer.wait()

    def save(self, file_prefix: Any, options: Any = None) -> str:
        """Write `file_prefix-N` (N = the new save_counter) and record it as the latest."""
        self._save_counter._data[...] += 1
        path = f"{os.fspath(file_prefix)}-{int(self._save_counter._data)}"
        folder = os.path.dirname(os.path.abspath(path))

        def record() -> None:
            old = _read_state(folder)  # entries outside the folder are dropped (with a warning)
            kept = [p for p in (old[1] if old else []) if p != path] + [path]
            _write_state(folder, path, kept)

        try:
            os.makedirs(folder, exist_ok=True)
            self._write_then(path, options, record)
        except BaseException:
            self._save_counter._data[...] -= 1
            raise
        return path

    def read(self, save_path: Any, options: Any = None) -> LoadStatus:
        """Restore from a file written by `write` or `save`."""
        return self.restore(save_path)

    def restore(self, save_path: Any, options: Any = None) -> LoadStatus:
        """Restore values now, or when unbuilt parts create their variables (TF semantics:
        missing or extra entries are reported by the status's `assert_*` methods; a shape or
        dtype mismatch raises and assigns nothing)."""
        if save_path is None:
            status = LoadStatus("<none>")
            status._partial = True
            return status
        path = os.fspath(save_path)
        self.sync()
        return restore.load(self, path, strict_structure=False)


def _shards(root: Any, tensors: dict, callback: Any) -> list | None:
    """The validated shards of `callback` (None: no callback, one file). As in TF, tensors are
    grouped by task and the callback is called once per task."""
    if callback is None:
        return None
    owners: dict[str, Any] = {}
    for p, var in restore.variables_by_path(root):
        owners.setdefault(p, var)
    for p, obj in restore._python_states(root):
        owners[python_state.state_key(p)] = obj
    cpu = backend.cpu_device()
    by_task: dict[tuple, list] = {}
    for key, arr in tensors.items():
        owner = owners.get(key)
        device = DeviceSpec.from_string(owner.device if isinstance(owner, Variable) else cpu.name)
        shardable = sharding.ShardableTensor(
            _tensor_save_spec=None,
            tensor=Tensor(arr, cpu),
            dtype=dtypes.as_dtype(arr.dtype),
            device=device,
            name=getattr(owner, "name", key),
            shape=TensorShape(arr.shape),
            slice_spec="",
            checkpoint_key=key,
            trackable=owner,
        )
        by_task.setdefault(sharding.task_of(device), []).append(shardable)
    shards: list = []
    for group in by_task.values():
        shards += sharding.validate_shards(callback(group), group, callback.description)
    return shards


def _write_files(path: str, tensors: dict, info: dict, shards: list | None) -> None:
    """One weights file at `path`, or (with shards) data files and an index at `path`; data
    files of a sharded checkpoint that was at `path` before are deleted after the write."""
    if shards is not None:
        sharded_file.write(path, shards, info)
        return
    old = sharded_file.data_files(path)
    weights_file.write(path, tensors, info)
    for p in old:
        with contextlib.suppress(OSError):
            os.remove(p)


def _is_async(options: Any) -> bool:
    return bool(getattr(options, "enable_async", False))


class _BackgroundWriter:
    """One daemon thread per checkpoint that runs save jobs in order; the first error is kept
    and re-raised by `wait` (so a failed async save is never silent)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def submit(self, job: Any) -> None:
        self.wait()  # one write at a time, in order: the previous one finishes first

        def run() -> None:
            try:
                job()
            except BaseException as err:  # kept for wait(); the thread must not die loudly
                self._error = err

        with self._lock:
            self._thread = threading.Thread(target=run, name="checkpoint-writer", daemon=True)
            self._thread.start()

    def wait(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        err, self._error = self._error, None
        if err is not None:
            raise err


def _check_child(name: str, value: Any) -> None:
    if not isinstance(value, Trackable | Variable):
        raise ValueError(
            f"tf.train.Checkpoint: '{name}' must be a trackable object (a layer, model, "
            f"optimizer, tf.Module, tf.Variable, dataset iterator or Checkpoint), got "
            f"{type(value).__name__}."
        )


# --- the state file ---------------------------------------------------------------------------
# The state file is input like any other file: it may have been edited, copied from another
# machine or planted. Its entries are only ever resolved to files directly inside its folder;
# anything else is ignored with a warning, so rotation can never delete or list a file elsewhere.
_LINE = re.compile(r'^\s*(model_checkpoint_path|all_model_checkpoint_paths):\s*"(.*)"\s*$')
_ESCAPE = re.compile(rb"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"\\": b"\\", b'"': b'"', b"'": b"'"}


def _unescape(text: str) -> str | None:
    """A quoted text-format string's value (C escapes, as TF writes them); None if invalid."""

    def one(m: re.Match) -> bytes:
        code = m.group(1)
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        if code[:1] == b"x":
            return bytes([int(code[1:], 16)])
        if code[:1].isdigit() and code[:1] < b"8":
            return bytes([int(code, 8) & 0xFF])
        raise ValueError(f"unknown escape {code!r}")

    try:
        return _ESCAPE.sub(one, text.encode("utf-8")).decode("utf-8")
    except ValueError:  # includes UnicodeDecodeError
        return None


def _resolve(folder: str, value: str | None) -> str | None:
    """`folder`/name if the entry names a file directly inside `folder`, else None."""
    if not value or "\x00" in value:
        return None
    full = os.path.normpath(os.path.join(os.path.abspath(folder), value))
    if os.path.dirname(full) != os.path.normpath(os.path.abspath(folder)):
        return None
    return os.path.join(folder, os.path.basename(full))


def _read_state(
    folder: str, latest_filename: str | None = None, own: re.Pattern | None = None
) -> tuple[str, list[str]] | None:
    """(latest, every) recorded in `folder`'s state file, or None.

    Entries outside `folder` (and, with `own`, entries whose file name does not match it) are
    ignored with a warning.
    """
    state = os.path.join(folder, latest_filename or STATE_FILE)
    try:
        with open(state, "rb") as f:
            lines = f.read().decode("utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnicodeDecodeError):
        return None
    latest, every, ignored = None, [], []
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        full = _resolve(folder, _unescape(m.group(2)))
        if full is None or (own is not None and not own.fullmatch(os.path.basename(full))):
            if m.group(2) not in ignored:
                ignored.append(m.group(2))
            continue
        if m.group(1) == "model_checkpoint_path":
            latest = full
        else:
            every.append(full)
    if ignored:
        whose = "" if own is None else f" matching '{own.pattern}'"
        warnings.warn(
            f"Ignoring {len(ignored)} entr{'y' if len(ignored) == 1 else 'ies'} of the checkpoint "
            f"state file '{state}' that do not name a checkpoint file{whose} inside '{folder}': "
            f"{ignored[:5]}{' ...' if len(ignored) > 5 else ''}. layerflow never lists or "
            "deletes files outside a checkpoint folder; remove these lines to silence this.",
            stacklevel=3,
        )
    return (latest, every) if latest else None


def _write_state(folder: str, latest: str, every: list[str]) -> None:
    def rel(p: str) -> str:
        p = os.path.relpath(os.path.abspath(p), folder)
        return p.replace("\\", "\\\\").replace('"', '\\"')

    text = f'model_checkpoint_path: "{rel(latest)}"\n' + "".join(
        f'all_model_checkpoint_paths: "{rel(p)}"\n' for p in every
    )
    with atomic_write(os.path.join(folder, STATE_FILE)) as tmp, open(tmp, "w") as f:
        f.write(text)


def latest_checkpoint(checkpoint_dir: Any, latest_filename: str | None = None) -> str | None:
    """The newest checkpoint recorded in `checkpoint_dir`, or None (TF's function).

    >>> import tempfile
    >>> latest_checkpoint(tempfile.mkdtemp()) is None
    True
    """
    state = _read_state(os.fspath(checkpoint_dir), latest_filename)
    if state is None or not os.path.exists(state[0]):
        return None
    return state[0]


class CheckpointManager:
    """Numbered checkpoints in one folder, keeping the newest `max_to_keep`.

    >>> import tempfile, layerflow as tf
    >>> ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    >>> manager = tf.train.CheckpointManager(ckpt, tempfile.mkdtemp(), max_to_keep=2)
    >>> [os.path.basename(manager.save()) for _ in range(3)]
    ['ckpt-1', 'ckpt-2', 'ckpt-3']
    >>> [os.path.basename(p) for p in manager.checkpoints]
    ['ckpt-2', 'ckpt-3']
    """

    def __init__(
        self,
        checkpoint: Checkpoint,
        directory: Any,
        max_to_keep: int | None,
        keep_checkpoint_every_n_hours: float | None = None,
        checkpoint_name: str = "ckpt",
        step_counter: Any = None,
        checkpoint_interval: int | None = None,
        init_fn: Any = None,
    ) -> None:
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(
                f"CheckpointManager needs a tf.train.Checkpoint, got {type(checkpoint).__name__}."
            )
        if not checkpoint_name or os.path.basename(checkpoint_name) != checkpoint_name:
            raise ValueError(
                f"CheckpointManager: checkpoint_name must be a plain file name, got "
                f"{checkpoint_name!r}. Put the folder into `directory` instead."
            )
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"max_to_keep must be a positive integer or None, got {max_to_keep}.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        # The only files this manager lists or deletes: `<checkpoint_name>-<number>` here.
        self._own = re.compile(re.escape(checkpoint_name) + r"-(-?[0-9]+)")
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step: int | None = None
        os.makedirs(self._directory, exist_ok=True)
        state = _read_state(self._directory, own=self._own)
        self._checkpoints = [p for p in (state[1] if state else []) if os.path.exists(p)]
        self._latest = state[0] if state and os.path.exists(state[0]) else None

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def latest_checkpoint(self) -> str | None:
        return self._latest

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoints, oldest first."""
        return list(self._checkpoints)

    def save(self, checkpoint_number: Any = None, check_interval: bool = True,
             options: Any = None) -> str | None:  # fmt: skip
        """Write the next numbered checkpoint, delete the oldest beyond `max_to_keep`."""
        if self._interval and check_interval and self._step_counter is not None:
            step = int(np.asarray(self._step_counter))
            if self._last_step is not None and step - self._last_step < self._interval:
                return None
            self._last_step = step
        ckpt = self._checkpoint
        ckpt._save_counter._data[...] += 1
        number = int(ckpt._save_counter._data) if checkpoint_number is None else int(
            np.asarray(checkpoint_number)
        )  # fmt: skip
        path = f"{self._prefix}-{number}"
        before = list(self._checkpoints)
        self._checkpoints = [p for p in self._checkpoints if p != path] + [path]
        doomed = []
        if self._max_to_keep is not None:
            while len(self._checkpoints) > self._max_to_keep:
                doomed.append(self._checkpoints.pop(0))
        kept = list(self._checkpoints)

        def record() -> None:
            _write_state(self._directory, path, kept)
            # Every path here is one of ours: saved by this manager, or read through `_own`.
            for old in doomed:  # after the state file no longer names them
                for p in [*sharded_file.data_files(old), old]:  # a sharded one's data files too
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(p)

        try:
            ckpt._write_then(path, options, record)
        except BaseException:
            ckpt._save_counter._data[...] -= 1
            self._checkpoints = before
            raise
        self._latest = path
        return path

    @property
    def checkpoint_interval(self) -> int | None:
        """The minimum number of steps between two saves (None: every `save` writes)."""
        return self._interval

    def sync(self) -> None:
        """Wait until every asynchronous save of the checkpoint has been written."""
        self._checkpoint.sync()

    def restore_or_initialize(self) -> str | None:
        """Restore the latest checkpoint, or run `init_fn` when there is none."""
        if self._latest is not None:
            self._checkpoint.restore(self._latest)
            return self._latest
        if self._init_fn is not None:
            self._init_fn()
        return None
