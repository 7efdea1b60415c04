"""`tf.data.Options` and `tf.data.ThreadingOptions`: settings a dataset carries and merges.

Unset options are None. `Dataset.with_options` merges into what the input has (an option set
differently by the later options wins, with a warning, as in TF) and `Dataset.options()`
returns the merged result of every input. The fields are TF's; layerflow's pipelines run in
the caller's thread, so the threading and optimization settings are recorded, not acted on.
"""

from __future__ import annotations

import warnings
from typing import Any


class _OptionsBase:
    _FIELDS: dict[str, Any] = {}

    def __init__(self) -> None:
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, default() if callable(default) else default)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._FIELDS:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self._FIELDS
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        set_ = {n: getattr(self, n) for n in self._FIELDS if getattr(self, n) is not None}
        return f"{type(self).__name__}({set_})"

    def _merged(self, other: _OptionsBase) -> _OptionsBase:
        out = type(self)()
        for name in self._FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, _OptionsBase):
                object.__setattr__(out, name, mine._merged(theirs))
                continue
            if mine is not None and theirs is not None and mine != theirs:
                warnings.warn(
                    f"Changing the value of option {name} from {mine} to {theirs}.", stacklevel=4
                )
            object.__setattr__(out, name, theirs if theirs is not None else mine)
        return out

    def merge(self, options: _OptionsBase) -> _OptionsBase:
        """These options updated with those set in `options` (a new object)."""
        if type(options) is not type(self):
            raise TypeError(
                f"{type(self).__name__}.merge takes {type(self).__name__}, got "
                f"{type(options).__name__}."
            )
        return self._merged(options)


class ThreadingOptions(_OptionsBase):
    """`tf.data.ThreadingOptions`: `max_intra_op_parallelism`, `private_threadpool_size`."""

    _FIELDS = {"max_intra_op_parallelism": None, "private_threadpool_size": None}


class Options(_OptionsBase):
    """`tf.data.Options`.

    >>> import layerflow as tf
    >>> options = tf.data.Options()
    >>> options.deterministic = False
    >>> tf.data.Dataset.range(3).with_options(options).options().deterministic
    False
    """

    _FIELDS = {
        "autotune": None,
        "deterministic": None,
        "experimental_deterministic": None,
        "experimental_distribute": None,
        "experimental_external_state_policy": None,
        "experimental_optimization": None,
        "experimental_slack": None,
        "experimental_symbolic_checkpoint": None,
        "experimental_warm_start": None,
        "dataset_name": None,
        "framework_type": None,
        "threading": ThreadingOptions,
    }


def options_of(dataset: Any) -> Options:
    """The merged options of `dataset` and its inputs (inputs first, later settings win)."""
    mine = getattr(dataset, "_own_options", None)
    inputs = []
    for attr in ("_input", "_inputs", "_choices"):
        value = dataset.__dict__.get(attr)
        if value is None:
            continue
        inputs.extend(value if isinstance(value, list | tuple) else [value])
    out = Options()
    for d in inputs:
        if hasattr(d, "_elements"):
            out = out._merged(options_of(d))
    return out._merged(mine) if mine is not None else out


__all__ = ["Options", "ThreadingOptions", "options_of"]
