"""`tf.debugging.enable_traceback_filtering` / `disable_traceback_filtering`.

TF hides its own frames from the tracebacks of errors raised in its API, so that what is shown
ends at the user's line. layerflow does the same for errors that reach the top level: enabling
installs a `sys.excepthook` that drops the frames inside the layerflow package (and does so
along `__cause__`/`__context__` chains) before the previous hook prints them; disabling puts the
previous hook back. A traceback made only of layerflow frames is shown whole.

Unlike TF, filtering is off by default: layerflow's frames are Python, short, and often the
best explanation of an error, and a library should not replace `sys.excepthook` on import.

>>> from layerflow._src.utils import traceback_filter
>>> traceback_filter.is_enabled()
False
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_previous: list[Any] = []  # the hook that was in place when filtering was enabled


def _internal(tb: types.TracebackType) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE + os.sep)


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without its layerflow frames (unchanged when every frame is layerflow's)."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [f for f in frames if not _internal(f)]
    if not kept:
        return frames[0] if frames else None
    out = None
    for f in reversed(kept):
        out = types.TracebackType(out, f.tb_frame, f.tb_lasti, f.tb_lineno)
    return out


def _filter_chain(err: BaseException, seen: set[int]) -> None:
    if id(err) in seen:
        return
    seen.add(id(err))
    err.__traceback__ = filter_traceback(err.__traceback__)
    for linked in (err.__cause__, err.__context__):
        if linked is not None:
            _filter_chain(linked, seen)


def _hook(kind: type, err: BaseException, tb: types.TracebackType | None) -> None:
    err.__traceback__ = tb
    _filter_chain(err, set())
    previous = _previous[0] if _previous else sys.__excepthook__
    previous(kind, err, err.__traceback__)


def is_enabled() -> bool:
    return bool(_previous) and sys.excepthook is _hook


def enable() -> None:
    """Filter layerflow's frames from uncaught errors' tracebacks."""
    if is_enabled():
        return
    _previous[:] = [sys.excepthook]
    sys.excepthook = _hook


def disable() -> None:
    """Show every frame again (restore the hook that was in place)."""
    if is_enabled():
        sys.excepthook = _previous[0]
    _previous.clear()
