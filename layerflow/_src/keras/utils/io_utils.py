"""Interactive logging switch (`tf.keras.utils.enable_interactive_logging` & co.) and `print_msg`.

With interactive logging on (the default), Keras writes progress bars and messages to stdout;
off, it sends them to the `logging` module (logger "layerflow"), which is what servers and
batch jobs want. `Progbar`, `ProgbarLogger` and `get_file` all honour the switch.
"""

from __future__ import annotations

import logging
import sys
import threading

_STATE = threading.local()
_LOGGER = logging.getLogger("layerflow")


def enable_interactive_logging() -> None:
    """Send Keras messages (progress bars, download notes) to stdout."""
    _STATE.enabled = True


def disable_interactive_logging() -> None:
    """Send Keras messages to the `logging` module (logger "layerflow") instead of stdout."""
    _STATE.enabled = False


def is_interactive_logging_enabled() -> bool:
    """Whether Keras messages go to stdout (True, the default) or to `logging`.

    >>> import layerflow as tf
    >>> tf.keras.utils.is_interactive_logging_enabled()
    True
    """
    return getattr(_STATE, "enabled", True)


def print_msg(message: str, line_break: bool = True) -> None:
    """Print to stdout when interactive logging is on, else log at INFO level."""
    if is_interactive_logging_enabled():
        sys.stdout.write(message + ("\n" if line_break else ""))
        sys.stdout.flush()
    else:
        _LOGGER.info(message)
