"""`tf.train.experimental.PythonState`: Python state saved in checkpoints.

A subclass implements `serialize()` (a str or bytes) and `deserialize(bytes)`. Wherever such an
object is reachable from what is saved (a checkpoint's child, a module's attribute), the save
stores its serialized bytes under `<path>/py_state` (a uint8 array in the safetensors file,
listed by `tf.train.list_variables`), and a restore hands them back to `deserialize`, as TF does.

>>> import os, tempfile, layerflow as tf
>>> class Counter(tf.train.experimental.PythonState):
...     def __init__(self):
...         self.n = 0
...     def serialize(self):
...         return str(self.n)
...     def deserialize(self, string_value):
...         self.n = int(string_value)
>>> c = Counter(); c.n = 7
>>> ckpt = tf.train.Checkpoint(counter=c)
>>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ck"))
>>> c.n = 0
>>> _ = ckpt.restore(path)
>>> c.n
7
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from layerflow._src.framework.trackable import Trackable

KEY = "py_state"


class PythonState(Trackable, abc.ABC):
    """A mixin for Python state in checkpoints (see the module docstring)."""

    @abc.abstractmethod
    def serialize(self) -> Any:
        """The object's state as a string (str or bytes)."""

    @abc.abstractmethod
    def deserialize(self, string_value: bytes) -> None:
        """Set the object's state from what `serialize` returned (as bytes)."""


def state_key(path: str) -> str:
    return f"{path}/{KEY}" if path else KEY


def encode(obj: PythonState, path: str) -> np.ndarray:
    """The serialized state as a uint8 array, for the weights file."""
    value = obj.serialize()
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes | bytearray):
        raise TypeError(
            f"{type(obj).__name__}.serialize() (saved at '{path or '/'}') must return str or "
            f"bytes, got {type(value).__name__}."
        )
    return np.frombuffer(bytes(value), dtype=np.uint8).copy()


def decode(obj: PythonState, array: np.ndarray) -> None:
    obj.deserialize(np.asarray(array, dtype=np.uint8).tobytes())
