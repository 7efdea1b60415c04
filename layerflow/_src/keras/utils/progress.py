"""`tf.keras.utils.Progbar`: Keras 2's text progress bar, same output format."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from layerflow._src.keras.utils import io_utils


def _format_time(seconds: float, unit: str) -> str:
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"


def _value(v: Any) -> Any:
    if hasattr(v, "numpy"):
        v = v.numpy()
    return v


class Progbar:
    """Displays a progress bar, as Keras 2 does.

    Args:
        target: total number of steps expected, None if unknown.
        width: bar width in characters.
        verbose: 0 (silent), 1 (live bar), 2 (one line when finished).
        interval: minimum seconds between two redraws.
        stateful_metrics: names of metrics shown as they are (others are averaged).
        unit_name: display name for a step ("step", "sample").

    >>> import layerflow as tf
    >>> bar = tf.keras.utils.Progbar(2, verbose=0)
    >>> bar.update(1, values=[("loss", 0.5)]); bar.add(1, values=[("loss", 1.5)])
    >>> bar._values["loss"]
    [2.0, 2]
    """

    def __init__(self, target: int | None, width: int = 30, verbose: int = 1,
                 interval: float = 0.05, stateful_metrics: Iterable[str] | None = None,
                 unit_name: str = "step") -> None:  # fmt: skip
        if target is not None and (not isinstance(target, int | np.integer) or target < 0):
            raise ValueError(
                f"Progbar target must be a non-negative integer or None, got {target!r}."
            )
        self.target = None if target is None else int(target)
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._dynamic_display = (
            (hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
            or "ipykernel" in sys.modules
            or "posix" in sys.modules
            or "PYCHARM_HOSTED" in os.environ
        )
        self._total_width = 0
        self._seen_so_far = 0
        self._values: dict[str, Any] = {}
        self._values_order: list[str] = []
        self._start = time.time()
        self._last_update = 0.0
        self._time_at_epoch_start = self._start
        self._time_at_epoch_end: float | None = None
        self._time_after_first_step: float | None = None

    def update(self, current: int, values: Iterable[tuple[str, Any]] | None = None,
               finalize: bool | None = None) -> None:  # fmt: skip
        """Move the bar to step `current`; `values` are `(name, value_for_last_step)` pairs."""
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        for k, v in values or []:
            v = _value(v)
            if k not in self._values_order:
                self._values_order.append(k)
            if k not in self.stateful_metrics:
                # Weighted by the steps since the last update (at least 1), as Keras does.
                base = max(current - self._seen_so_far, 1)
                if k not in self._values:
                    self._values[k] = [v * base, base]
                else:
                    self._values[k][0] += v * base
                    self._values[k][1] += base
            else:
                self._values[k] = [v, 1]
        self._seen_so_far = current
        now = time.time()
        info = f" - {now - self._start:.0f}s"
        if current == self.target:
            self._time_at_epoch_end = now
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            io_utils.print_msg(self._live_line(current, now, finalize), line_break=False)
        elif self.verbose == 2 and finalize:
            io_utils.print_msg(self._final_line(current, now, info), line_break=False)
        self._last_update = now

    def _metrics_text(self, abs_small: bool) -> str:
        text = ""
        for k in self._values_order:
            text += f" - {k}:"
            total, count = self._values[k]
            avg = np.mean(total / max(1, count))
            small = abs(avg) <= 1e-3 if abs_small else avg <= 1e-3
            text += f" {avg:.4e}" if small else f" {avg:.4f}"
        return text

    def _live_line(self, current: int, now: float, finalize: bool) -> str:
        prev_total_width = self._total_width
        message = "\b" * prev_total_width + "\r" if self._dynamic_display else "\n"
        if self.target is not None:
            digits = int(math.log10(self.target)) + 1 if self.target > 0 else 1
            bar = f"{current:{digits}d}/{self.target} ["
            prog_width = int(self.width * (current / self.target if self.target else 1.0))
            if prog_width > 0:
                bar += "=" * (prog_width - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - prog_width) + "]"
        else:
            bar = f"{current:7d}/Unknown"
        self._total_width = len(bar)
        message += bar
        per_unit = self._step_duration(current, now)
        if self.target is None or finalize:
            info = f" - {now - self._start:.0f}s" + _format_time(per_unit, self.unit_name)
        else:
            eta = per_unit * (self.target - current)
            if eta > 3600:
                eta_text = f"{int(eta // 3600)}:{int((eta % 3600) // 60):02d}:{int(eta % 60):02d}"
            elif eta > 60:
                eta_text = f"{int(eta // 60)}:{int(eta % 60):02d}"
            else:
                eta_text = f"{int(eta)}s"
            info = f" - ETA: {eta_text}"
        info += self._metrics_text(abs_small=True)
        self._total_width += len(info)
        if prev_total_width > self._total_width:
            info += " " * (prev_total_width - self._total_width)
        if finalize:
            info += "\n"
        return message + info

    def _final_line(self, current: int, now: float, info: str) -> str:
        target = self.target or current
        digits = int(math.log10(target)) + 1 if target > 0 else 1
        info = f"{current:{digits}d}/{target}" + info + self._metrics_text(abs_small=False)
        if self._time_at_epoch_end:
            per_epoch = self._time_at_epoch_end - self._time_at_epoch_start
            self._time_at_epoch_start = now
            self._time_at_epoch_end = None
            info += " -" + _format_time(per_epoch, "epoch")
            info += " -" + _format_time(per_epoch / max(target, 1), self.unit_name)
            info += "\n"
        return info

    def add(self, n: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        """Advance the bar by `n` steps."""
        self.update(self._seen_so_far + n, values)

    def _step_duration(self, current: int, now: float) -> float:
        # The first step (compilation, warm-up) is left out of the estimate once there are more.
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            return (now - self._time_after_first_step) / (current - 1)
        if current == 1:
            self._time_after_first_step = now
        return (now - self._start) / current
