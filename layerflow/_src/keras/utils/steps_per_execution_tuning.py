"""`tf.keras.utils.StepsPerExecutionTuner`: tune a `steps_per_execution` variable by throughput.

tf_keras's algorithm: a daemon thread measures, every `interval` seconds, the global steps per
second (`optimizer.iterations` over wall time); every `change_spe_interval` measurements it
compares the average of the recent ones with the previous average: more than `change_threshold`
faster repeats the last change (x1.5 after an increase, x0.5 after a decrease), more than
`change_threshold` slower does the opposite, otherwise nothing changes.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

_log = logging.getLogger("layerflow")


class StepsPerExecutionTuner:
    """Tune `spe_variable` (an integer `tf.Variable`) from `optimizer.iterations` throughput.

    `start()` begins measuring in a daemon thread every `interval` seconds, `stop()` ends it;
    a custom loop reads the variable to decide how many steps to run per call.

    >>> import layerflow as tf
    >>> spe = tf.Variable(1, dtype="int64")
    >>> tuner = StepsPerExecutionTuner(tf.keras.optimizers.SGD(), spe, interval=0.01)
    >>> thread = tuner.start(); tuner.stop(); thread.join()
    """

    def __init__(self, optimizer: Any, spe_variable: Any, interval: float = 5,
                 change_spe_interval: int = 10, change_threshold: float = 0.1) -> None:  # fmt: skip
        if not hasattr(spe_variable, "assign") or not getattr(spe_variable.dtype, "is_integer", 0):
            raise TypeError(
                "StepsPerExecutionTuner: spe_variable must be an integer tf.Variable (e.g. "
                f"tf.Variable(1, dtype='int64')), got {spe_variable!r}."
            )
        self.optimizer = optimizer
        self._steps_per_execution = spe_variable
        self.interval = interval
        self.change_spe_interval = change_spe_interval
        self.spe_change_threshold = change_threshold
        self.steps_per_execution_stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> threading.Thread:
        """Start the tuning thread (the running one, if already started)."""
        if self.thread and self.thread.is_alive():
            return self.thread
        self._begin_tuning()
        self.steps_per_execution_stop_event.clear()
        self.thread = threading.Thread(target=self._steps_per_execution_interval_call, daemon=True)
        self.thread.start()
        return self.thread

    @property
    def steps_per_execution(self) -> Any:
        """The tuned variable; setting it assigns the variable and makes it the initial value."""
        return self._steps_per_execution

    @steps_per_execution.setter
    def steps_per_execution(self, value: Any) -> None:
        self._steps_per_execution.assign(value)
        self.init_spe = value

    def stop(self) -> None:
        """Stop the tuning thread."""
        self.steps_per_execution_stop_event.set()

    def _steps_per_execution_interval_call(self) -> None:
        while not self.steps_per_execution_stop_event.is_set():
            self._measure_and_tune()
            self.steps_per_execution_stop_event.wait(self.interval)

    def _begin_tuning(self) -> None:
        self.start_time = time.time()
        self.init_iterations = int(self.optimizer.iterations.numpy())
        self.init_spe = int(self._steps_per_execution.numpy())
        self.spe_last_logged = {"iteration": self.init_iterations, "time_secs": self.start_time}
        self.rgsps: list[float] = []  # recent global steps per second
        self.avg_rgsps = 0.0
        self.prev_avg_rgsps = 0.0
        self.spe_tune_last_action_add = True
        self.spe_measurement_count = 0

    def _should_tune(self) -> bool:
        epoch_boundary = self.rgsps[-1] == 0
        return (
            self.spe_measurement_count % self.change_spe_interval == 0
            and bool(self.rgsps)
            and not epoch_boundary
        )

    def _tune(self) -> None:
        self.avg_rgsps = sum(self.rgsps) / len(self.rgsps)
        fast_threshold = (1 + self.spe_change_threshold) * self.prev_avg_rgsps
        slow_threshold = (1 - self.spe_change_threshold) * self.prev_avg_rgsps
        repeat, opposite = (1.5, 0.5) if self.spe_tune_last_action_add else (0.5, 1.5)
        spe_limit = self._steps_per_execution.dtype.max / 1.5
        current = int(self._steps_per_execution.numpy())
        if self.avg_rgsps > fast_threshold:
            new = current * repeat
        elif self.avg_rgsps < slow_threshold:
            new = current * opposite
            self.spe_tune_last_action_add = not self.spe_tune_last_action_add
        else:
            new = current
        if current >= spe_limit:
            new = current
        elif current <= 0:
            new = self.init_spe
        self._steps_per_execution.assign(int(np.round(new)))
        self.prev_avg_rgsps = self.avg_rgsps

    def _measure_and_tune(self) -> None:
        self.spe_measurement_count += 1
        cur_iteration = int(self.optimizer.iterations.numpy())
        cur_time = time.time()
        elapsed = max(cur_time - self.spe_last_logged["time_secs"], 1e-9)
        self.rgsps.append((cur_iteration - self.spe_last_logged["iteration"]) / elapsed)
        if len(self.rgsps) > self.change_spe_interval:
            self.rgsps.pop(0)
        if cur_iteration == 0:  # nothing measured yet
            self.start_time = cur_time
            return
        self.spe_last_logged["iteration"] = cur_iteration
        self.spe_last_logged["time_secs"] = cur_time
        try:
            if self._should_tune():
                self._tune()
        except RuntimeError:
            _log.exception("Steps per execution autotuner failed to run.")
