"""Reading checkpoints without a model: `tf.train.list_variables`, `load_checkpoint` (a
`CheckpointReader`), `load_variable`, `get_checkpoint_state`, `checkpoints_iterator`, and
`tf.train.CheckpointOptions`.

A layerflow checkpoint is one safetensors file keyed by structural paths (`model/hidden/kernel`,
`save_counter`), or, saved with a sharding callback, an index at that path naming its data
files (a tensor split across them is reassembled here); those keys are the variable names
listed here. TF writes the same paths with a `/.ATTRIBUTES/VARIABLE_VALUE` suffix; lookups
accept that spelling (and a trailing `:0`) too, so TF code that reads
`"v/.ATTRIBUTES/VARIABLE_VALUE"` finds `v`.

Everything read here is untrusted: the state file's entries resolve only to files directly
inside its folder (others are ignored with a warning, as in CheckpointManager), and the
checkpoint file's header, sizes and checksums are validated before any tensor is returned.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.saving import sharded_file, weights_file
from layerflow._src.saving.checkpoint import _read_state, latest_checkpoint
from layerflow._src.saving.sharding import ShardingCallback

_TF_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# How often checkpoints_iterator looks for a new checkpoint (TF: one second).
POLL_SECONDS = 1.0


def _checkpoint_file(ckpt_dir_or_file: Any) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise ValueError(
                f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}. "
                "Pass a checkpoint file, or a folder where tf.train.Checkpoint.save or a "
                "CheckpointManager wrote one."
            )
        return found
    if not os.path.exists(path):
        raise errors.NotFoundError(
            None,
            None,
            f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files "
            f"for {path}. Check the path: layerflow writes a checkpoint to exactly the path "
            "that save() returned.",
        )
    return path


class CheckpointReader:
    """The variables of one checkpoint file, read lazily (`tf.train.load_checkpoint`).

    >>> import os, tempfile, layerflow as tf
    >>> folder = tempfile.mkdtemp()
    >>> _ = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).save(os.path.join(folder, "ck"))
    >>> reader = tf.train.load_checkpoint(folder)
    >>> reader.get_variable_to_shape_map()["v"], reader.get_tensor("v").tolist()
    ([2], [1.0, 2.0])
    """

    def __init__(self, path: str) -> None:
        self._path = path
        header, info = sharded_file.read_header(path)  # validates the whole structure
        self._entries = {k: (list(e["shape"]), e["dtype"]) for k, e in header.items()}
        self._aliases = {
            a: k
            for a, k in (info.get("aliases") or {}).items()
            if isinstance(a, str) and k in self._entries
        }

    def _key(self, name: str) -> str | None:
        for candidate in (name, name.removesuffix(":0")):
            for key in (candidate, candidate.removesuffix(_TF_SUFFIX)):
                if key in self._entries:
                    return key
                if key in self._aliases:
                    return self._aliases[key]
        return None

    def has_tensor(self, tensor_str: str) -> bool:
        """Whether the checkpoint holds a variable of that name."""
        return self._key(str(tensor_str)) is not None

    def get_tensor(self, tensor_str: str) -> np.ndarray:
        """The variable's value as a NumPy array (validated against its checksum)."""
        key = self._key(str(tensor_str))
        if key is None:
            raise errors.NotFoundError(
                None, None, f"Key {tensor_str} not found in checkpoint '{self._path}'."
            )
        with sharded_file.open_checkpoint(self._path) as r:
            return r.get(key)

    def _names(self) -> list[str]:
        return sorted([*self._entries, *self._aliases])

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """{name: shape as a list} of every variable."""
        return {n: list(self._entries[self._key(n)][0]) for n in self._names()}

    def get_variable_to_dtype_map(self) -> dict[str, Any]:
        """{name: tf.DType} of every variable (bfloat16 and other non-NumPy dtypes by name)."""
        out = {}
        for n in self._names():
            code = self._entries[self._key(n)][1]
            np_dtype = weights_file.entry_dtype({"dtype": code})
            out[n] = dtypes.as_dtype(np_dtype) if np_dtype is not None else code
        return out

    def debug_string(self) -> bytes:
        lines = [f"{n} ({d}) {s}" for n, (s, d) in sorted(self._entries.items())]
        return ("\n".join(lines) + "\n").encode()


def load_checkpoint(ckpt_dir_or_file: Any) -> CheckpointReader:
    """A CheckpointReader for a checkpoint file, or for the latest checkpoint of a folder."""
    return CheckpointReader(_checkpoint_file(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: Any) -> list[tuple[str, list[int]]]:
    """[(name, shape)] of every variable of a checkpoint (file, or a folder's latest), sorted.

    >>> import os, tempfile, layerflow as tf
    >>> folder = tempfile.mkdtemp()
    >>> _ = tf.train.Checkpoint(w=tf.Variable(tf.zeros([2, 3]))).save(os.path.join(folder, "c"))
    >>> tf.train.list_variables(folder)
    [('save_counter', []), ('w', [2, 3])]
    """
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file: Any, name: str) -> np.ndarray:
    """The value of one variable of a checkpoint, as a NumPy array (`name` may end in ':0')."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


class CheckpointState:
    """What a folder's `checkpoint` state file records (TF's CheckpointState proto fields)."""

    def __init__(self, model_checkpoint_path: str, all_model_checkpoint_paths: list[str]) -> None:
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps: list[float] = []
        self.last_preserved_timestamp = 0.0

    def __repr__(self) -> str:
        every = "".join(
            f'all_model_checkpoint_paths: "{p}"\n' for p in self.all_model_checkpoint_paths
        )
        return f'model_checkpoint_path: "{self.model_checkpoint_path}"\n{every}'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckpointState) and (
            self.model_checkpoint_path,
            self.all_model_checkpoint_paths,
        ) == (other.model_checkpoint_path, other.all_model_checkpoint_paths)

    __hash__ = None  # type: ignore[assignment]


def get_checkpoint_state(checkpoint_dir: Any, latest_filename: str | None = None) -> Any:
    """The CheckpointState of `checkpoint_dir` (paths joined to the folder), or None when it has
    no state file. Entries that point outside the folder are ignored with a warning.

    >>> import tempfile, layerflow as tf
    >>> tf.train.get_checkpoint_state(tempfile.mkdtemp()) is None
    True
    """
    folder = os.fspath(checkpoint_dir)
    if latest_filename is not None and os.path.basename(latest_filename) != latest_filename:
        raise ValueError(
            f"get_checkpoint_state: latest_filename must be a file name inside the folder, got "
            f"{latest_filename!r}."
        )
    state = _read_state(folder, latest_filename)
    if state is None:
        return None
    latest, every = state
    if latest not in every:
        every = [*every, latest]
    return CheckpointState(latest, every)


def _wait_for_new(folder: str, last: str | None, timeout: float | None) -> str | None:
    stop = None if timeout is None else time.monotonic() + timeout
    while True:
        path = latest_checkpoint(folder)
        if path is not None and path != last:
            return path
        if stop is not None and time.monotonic() + POLL_SECONDS > stop:
            return None
        time.sleep(POLL_SECONDS)


def checkpoints_iterator(checkpoint_dir: Any, min_interval_secs: float = 0,
                         timeout: float | None = None,
                         timeout_fn: Any = None) -> Iterator[str]:  # fmt: skip
    """Yield each new latest checkpoint of `checkpoint_dir` as it appears (TF's semantics):
    waits (polling every second) for one newer than the last yielded; after `timeout` seconds
    without one it stops, unless `timeout_fn` is given, which is called and ends the
    iteration by returning True (False: wait again). At least `min_interval_secs` pass
    between two yields.
    """
    folder = os.fspath(checkpoint_dir)
    last = None
    while True:
        found = _wait_for_new(folder, last, timeout)
        if found is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        start = time.monotonic()
        last = found
        yield found
        rest = start + min_interval_secs - time.monotonic()
        if rest > 0:
            time.sleep(rest)


class CheckpointOptions:
    """Options of `Checkpoint.save`/`write`/`restore` (`tf.train.CheckpointOptions`).

    `experimental_io_device` is accepted and unused (one process reads and writes the file);
    `enable_async` (or `experimental_enable_async_checkpoint`) makes `Checkpoint.save`/`write`
    copy the values and write the file in a background thread; `Checkpoint.sync()` waits for
    it. `experimental_sharding_callback` (a `tf.train.experimental.ShardingCallback`, e.g.
    `MaxShardSizePolicy(max_shard_size)`) splits the checkpoint into several data files named
    by an index at the checkpoint's path; reading is transparent. Write callbacks are accepted
    and unused.
    """

    __slots__ = ("experimental_io_device", "experimental_enable_async_checkpoint",
                 "experimental_write_callbacks", "enable_async",
                 "experimental_sharding_callback", "experimental_skip_slot_variables")  # fmt: skip

    def __init__(self, experimental_io_device: Any = None,
                 experimental_enable_async_checkpoint: bool = False,
                 experimental_write_callbacks: Any = None, enable_async: bool = False,
                 experimental_sharding_callback: Any = None,
                 experimental_skip_slot_variables: bool = False) -> None:  # fmt: skip
        if experimental_sharding_callback is not None and not isinstance(
            experimental_sharding_callback, ShardingCallback
        ):
            raise ValueError(
                "The experimental_sharding_callback checkpoint option must be of type "
                "ShardingCallback. The option provided was of type "
                f"{type(experimental_sharding_callback)}. Use tf.train.experimental."
                "MaxShardSizePolicy(max_shard_size), ShardByTaskPolicy(), or a subclass of "
                "tf.train.experimental.ShardingCallback."
            )
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = bool(experimental_enable_async_checkpoint)
        self.enable_async = bool(enable_async or experimental_enable_async_checkpoint)
        self.experimental_write_callbacks = experimental_write_callbacks
        self.experimental_sharding_callback = experimental_sharding_callback
        self.experimental_skip_slot_variables = bool(experimental_skip_slot_variables)

    def __repr__(self) -> str:
        return f"CheckpointOptions(enable_async={self.enable_async})"


__all__ = [
    "CheckpointOptions", "CheckpointReader", "CheckpointState", "checkpoints_iterator",
    "get_checkpoint_state", "list_variables", "load_checkpoint", "load_variable",
]  # fmt: skip
