"""`ProgbarLogger`: Keras-style progress for fit, evaluate and predict (tqdm when installed)."""

from __future__ import annotations

import sys
import time
from typing import Any

from layerflow._src.keras.training.callback_base import Callback, _float
from layerflow._src.keras.utils import io_utils


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
    if not io_utils.is_interactive_logging_enabled():
        return False
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

    def _print(self, text: str) -> None:
        # `disable_interactive_logging()` sends the lines to `logging` instead of stdout.
        if self.stream is None and not io_utils.is_interactive_logging_enabled():
            io_utils.print_msg(text)
        else:
            print(text, file=self._out())

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
            self._print(f"{total}/{total} [{'=' * 30}] - {self._postfix(logs)}")
        elif self.verbose == 2 and epoch_line:
            secs = time.perf_counter() - self._start
            steps = self.params.get("steps") if self._mode == "train" else None
            total = steps or self._seen
            text = _format_logs(logs or {})
            self._print(
                f"{self._seen}/{total} - {secs:.0f}s - {text + ' - ' if text else ''}"
                f"{_step_time(secs / max(self._seen, 1))}"
            )

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose:
            self._print(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}")
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
