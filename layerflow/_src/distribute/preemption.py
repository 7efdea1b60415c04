"""Checkpoint on preemption: `PreemptionCheckpointHandler`, `TerminationConfig`,
`PreemptionWatcher` (`tf.distribute.experimental`).

The handler watches for a termination notice (SIGTERM by default, or a polled
`termination_watcher_fn`). As in TF's local mode: when a notice arrives, the next `run` call
schedules a checkpoint after one more step, the call after that saves (through the
CheckpointManager) and calls `exit_fn` (default `sys.exit(42)`, the restart code TF uses
outside cloud platforms). With a `grace_period`, training continues until the period is
almost over, then checkpoints and exits. A restarted program restores the latest checkpoint
and the run count when the handler is created.

The number of completed `run` calls is kept next to the checkpoints in
`preemption_state.json` (which checkpoint, how many runs), read back with checks, so the
count survives a restart without changing the user's checkpoint structure.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from layerflow._src.framework import errors
from layerflow._src.saving.checkpoint import Checkpoint, CheckpointManager

_log = logging.getLogger("layerflow")
_STATE_FILE = "preemption_state.json"
RESTART_CODE = 42


class TerminationConfig:
    """How a `PreemptionCheckpointHandler` learns of, and reacts to, a termination.

    termination_watcher_fn: called about once a second on a background thread; True means a
      termination notice arrived (default: the process receiving SIGTERM).
    exit_fn: called after the checkpoint is saved (default: `sys.exit(42)`).
    grace_period: seconds between the notice and the forced termination; training goes on
      until shortly before it ends (default 0: checkpoint as soon as possible).
    save_fn: called instead of `CheckpointManager.save(...)` to save.
    """

    def __init__(
        self,
        termination_watcher_fn: Callable[[], bool] | None = None,
        exit_fn: Callable[[], Any] | None = None,
        grace_period: float | None = None,
        save_fn: Callable[..., Any] | None = None,
    ) -> None:
        for name, fn in (("termination_watcher_fn", termination_watcher_fn),
                         ("exit_fn", exit_fn), ("save_fn", save_fn)):  # fmt: skip
            if fn is not None and not callable(fn):
                raise TypeError(f"TerminationConfig: {name} must be callable, got {fn!r}.")
        if grace_period is not None and grace_period < 0:
            raise ValueError(f"TerminationConfig: grace_period must be >= 0, got {grace_period}.")
        self.termination_watcher_fn = termination_watcher_fn
        self.exit_fn = exit_fn
        self.grace_period = grace_period
        self.save_fn = save_fn


def _default_exit() -> None:
    sys.exit(RESTART_CODE)


def _chain_sigterm(callback: Callable[[], None]) -> None:
    """Call `callback` on SIGTERM, then whatever Python handler was installed before."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: Any) -> None:
        callback()
        if callable(previous):
            previous(signum, frame)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError as err:  # not the main thread
        raise RuntimeError(
            "Watching for SIGTERM needs the main thread (Python delivers signals there). "
            "Create the handler in the main thread, or pass "
            "TerminationConfig(termination_watcher_fn=...) to poll for termination instead."
        ) from err


class PreemptionCheckpointHandler:
    """Save a checkpoint and exit when the job is about to be preempted.

    >>> # handler = PreemptionCheckpointHandler(None, tf.train.Checkpoint(model=m), "/ckpts")
    >>> # for step in range(handler.total_run_calls, 1000): handler.run(train_step, batch)
    """

    def __init__(
        self,
        cluster_resolver: Any,
        checkpoint_or_checkpoint_manager: Checkpoint | CheckpointManager,
        checkpoint_dir: str | None = None,
        termination_config: TerminationConfig | None = None,
    ) -> None:
        if isinstance(checkpoint_or_checkpoint_manager, Checkpoint) and not checkpoint_dir:
            raise errors.InvalidArgumentError(
                None, None, "When a checkpoint is passed, a checkpoint_dir must be passed as well."
            )
        if isinstance(checkpoint_or_checkpoint_manager, CheckpointManager):
            self._manager = checkpoint_or_checkpoint_manager
        elif isinstance(checkpoint_or_checkpoint_manager, Checkpoint):
            self._manager = CheckpointManager(
                checkpoint_or_checkpoint_manager, directory=checkpoint_dir, max_to_keep=1
            )
        else:
            raise TypeError(
                "checkpoint_or_checkpoint_manager must be a tf.train.Checkpoint or a "
                "tf.train.CheckpointManager, got "
                f"{type(checkpoint_or_checkpoint_manager).__name__}."
            )
        spec_fn = getattr(cluster_resolver, "cluster_spec", None)
        spec = spec_fn() if spec_fn is not None else None
        if spec is not None and "ps" in spec.jobs:
            raise NotImplementedError(
                "PreemptionCheckpointHandler does not support usage with "
                "tf.distribute.experimental.ParameterServerStrategy."
            )
        workers = sum(spec.num_tasks(job) for job in spec.jobs) if spec is not None else 1
        if cluster_resolver is not None:
            workers = max(workers, getattr(cluster_resolver, "num_workers", 1))
        if workers > 1:
            raise NotImplementedError(
                "PreemptionCheckpointHandler: agreeing on the checkpoint step across "
                f"{workers} workers is not implemented here; use it in one process "
                "(MirroredStrategy, OneDeviceStrategy, the default strategy)."
            )
        config = termination_config or TerminationConfig()
        self._cluster_resolver = cluster_resolver
        self._exit_fn = config.exit_fn or _default_exit
        self._grace_period = config.grace_period or 0
        self._save_fn = config.save_fn
        self._watcher_fn = config.termination_watcher_fn

        self._manager.restore_or_initialize()
        self._run_counter = self._restored_run_count()
        self._estimated_run_time = 0.0
        self._final_checkpoint_countdown = False
        self._received_own_sigterm = threading.Event()
        self._received_checkpoint_step = threading.Event()
        self._step_to_checkpoint: int | None = None
        self._received_own_sigterm_time = 0.0
        self._target_time_for_termination = 0.0
        self._stop_polling = threading.Event()
        if self._watcher_fn is not None:
            threading.Thread(target=self._poll, name="PreemptionPoller", daemon=True).start()
        else:
            _chain_sigterm(self._on_termination_notice)

    # --- the public API -------------------------------------------------------------------
    @property
    def total_run_calls(self) -> int:
        """How many `run`/`save_checkpoint_if_preempted` calls completed, including those
        before a restart (restored with the checkpoint)."""
        return self._run_counter

    def run(self, distributed_train_function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Check for a pending preemption (saving and exiting if due), then run one step."""
        self._check_preemption_and_maybe_checkpoint()
        start = time.monotonic()
        result = distributed_train_function(*args, **kwargs)
        elapsed = time.monotonic() - start
        self._run_counter += 1
        self._estimated_run_time += (elapsed - self._estimated_run_time) / self._run_counter
        return result

    def save_checkpoint_if_preempted(self, *args: Any, **kwargs: Any) -> None:
        """For loops that do not go through `run`: call once per step; saves (with these
        arguments to `CheckpointManager.save`) and exits when a preemption is due."""
        self._check_preemption_and_maybe_checkpoint(*args, **kwargs)
        self._run_counter += 1
        self._estimated_run_time = 0.0

    @contextlib.contextmanager
    def watch_preemption_scope(self) -> Iterator[None]:
        """The scope training runs in; in one process, errors simply propagate."""
        yield

    # --- notices --------------------------------------------------------------------------
    def _on_termination_notice(self) -> None:
        if not self._received_own_sigterm.is_set():
            _log.info("PreemptionCheckpointHandler: termination notice received.")
            self._received_own_sigterm_time = time.time()
            self._received_own_sigterm.set()

    def _poll(self) -> None:
        while not self._stop_polling.is_set() and not self._final_checkpoint_countdown:
            if self._watcher_fn():
                self._on_termination_notice()
                return
            self._stop_polling.wait(1.0)

    # --- deciding when to save ------------------------------------------------------------
    def _check_preemption_and_maybe_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        if self._received_checkpoint_step.is_set():
            if self._step_to_checkpoint == self._run_counter:
                self._save_checkpoint(*args, **kwargs)
                if self._grace_period <= 0 or self._final_checkpoint_countdown:
                    self._stop_polling.set()
                    _log.info("PreemptionCheckpointHandler: checkpoint saved. Exiting.")
                    self._exit_fn()
                else:
                    _log.info("Continue training for the grace period.")
                    self._final_checkpoint_countdown = True
                    self._received_checkpoint_step.clear()
        elif self._received_own_sigterm.is_set():
            if self._final_checkpoint_countdown and time.time() <= (
                self._target_time_for_termination
            ):
                return
            # Every worker finishes the step it is in, and checkpoints before the next.
            self._step_to_checkpoint = self._run_counter + 1
            self._received_checkpoint_step.set()
            if self._grace_period > 0 and not self._final_checkpoint_countdown:
                self._target_time_for_termination = (
                    self._received_own_sigterm_time
                    + self._grace_period
                    - 3 * self._estimated_run_time * 2
                )

    def _save_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        if self._save_fn is not None:
            self._save_fn(*args, **kwargs)
        else:
            self._manager.save(*args, **kwargs)
        self._write_state(self._manager.latest_checkpoint)
        _log.info("Checkpoint finished at path %s", self._manager.directory)

    # --- the run count beside the checkpoints --------------------------------------------
    def _state_path(self) -> str:
        return os.path.join(self._manager.directory, _STATE_FILE)

    def _write_state(self, checkpoint_path: str | None) -> None:
        if checkpoint_path is None:
            return
        state = {"checkpoint": os.path.basename(checkpoint_path), "runs": int(self._run_counter)}
        os.makedirs(self._manager.directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._manager.directory, prefix=".preemption-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._state_path())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _restored_run_count(self) -> int:
        latest = self._manager.latest_checkpoint
        path = self._state_path()
        if latest is None or not os.path.isfile(path) or os.path.getsize(path) > 4096:
            return 0
        try:
            with open(path) as f:
                state = json.load(f)
        except (OSError, ValueError):
            _log.warning("PreemptionCheckpointHandler: ignoring unreadable %s.", path)
            return 0
        if not isinstance(state, dict):
            return 0
        runs = state.get("runs")
        if (
            state.get("checkpoint") != os.path.basename(latest)
            or not isinstance(runs, int)
            or isinstance(runs, bool)
            or runs < 0
        ):
            # The state describes another checkpoint (or was tampered with): start counting at 0.
            return 0
        return runs

    def __del__(self) -> None:
        stop = getattr(self, "_stop_polling", None)
        if stop is not None:
            stop.set()


class PreemptionWatcher:
    """Records the termination notice (SIGTERM) this process receives.

    `preemption_message` is None until then, and a description of the notice after;
    `block_until_worker_exit()` returns at once, since there are no remote workers to wait
    for here (as in TF outside TPU pods).
    """

    def __init__(self) -> None:
        self._preemption_message: str | None = None
        _chain_sigterm(self._on_sigterm)

    def _on_sigterm(self) -> None:
        self._preemption_message = f"SIGTERM received at {time.strftime('%Y-%m-%d %H:%M:%S')}"

    @property
    def preemption_message(self) -> str | None:
        return self._preemption_message

    def block_until_worker_exit(self) -> None:
        return None
