"""`tf.data.Options` and `tf.data.ThreadingOptions`: settings a dataset carries and merges.

Unset options are None. `Dataset.with_options` merges into what the input has (an option set
differently by the later options wins, with a warning, as in TF) and `Dataset.options()`
returns the merged result of every input. The fields are TF's; layerflow's pipelines run in
the caller's thread, so the threading and optimization settings are recorded, not acted on.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any


class _OptionsBase:
    _FIELDS: dict[str, Any] = {}
    _TYPES: dict[str, Any] = {}  # field -> the type a value must have (None is always allowed)

    def __init__(self) -> None:
        object.__setattr__(self, "_explicit", set())
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, default() if callable(default) else default)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._FIELDS:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        kind = self._TYPES.get(name)
        nested = self._FIELDS[name]
        if isinstance(nested, type) and issubclass(nested, _OptionsBase):
            kind = nested
        if (
            value is not None
            and kind is not None
            and not (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
        ):
            raise TypeError(
                f'Property "{name}" of {type(self).__name__} must be of type '
                f"{getattr(kind, '__name__', kind)}, got: {value!r} "
                f"(type: {type(value).__name__})."
            )
        object.__setattr__(self, name, value)
        self._explicit.add(name)

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

    def _is_set(self, name: str) -> bool:
        """Set by the user (a default, such as AutoShardPolicy.AUTO, is not)."""
        return name in self._explicit

    def _merged(self, other: _OptionsBase) -> _OptionsBase:
        out = type(self)()
        for name in self._FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, _OptionsBase):
                object.__setattr__(out, name, mine._merged(theirs))
                continue
            if not other._is_set(name):
                object.__setattr__(out, name, mine)
                if self._is_set(name):
                    out._explicit.add(name)
                continue
            if self._is_set(name) and mine != theirs:
                warnings.warn(
                    f"Changing the value of option {name} from {mine} to {theirs}.", stacklevel=4
                )
            object.__setattr__(out, name, theirs)
            out._explicit.add(name)
        return out

    def merge(self, options: _OptionsBase) -> _OptionsBase:
        """These options updated with those set in `options` (a new object)."""
        if type(options) is not type(self):
            raise TypeError(
                f"{type(self).__name__}.merge takes {type(self).__name__}, got "
                f"{type(options).__name__}."
            )
        return self._merged(options)


class AutoShardPolicy(enum.IntEnum):
    """How a distributed dataset is split among workers (`tf.data.experimental.AutoShardPolicy`)."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class AutotuneAlgorithm(enum.Enum):
    """`tf.data.experimental.AutotuneAlgorithm` (recorded; layerflow does not autotune)."""

    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


class ExternalStatePolicy(enum.Enum):
    """What saving an iterator does with external state
    (`tf.data.experimental.ExternalStatePolicy`)."""

    WARN = 0
    IGNORE = 1
    FAIL = 2


class AutotuneOptions(_OptionsBase):
    """`tf.data.experimental.AutotuneOptions` (`tf.data.Options().autotune`)."""

    _FIELDS = dict.fromkeys(("autotune_algorithm", "cpu_budget", "enabled",
                             "initial_parallelism", "min_parallelism", "ram_budget"))  # fmt: skip
    _TYPES = {"autotune_algorithm": AutotuneAlgorithm, "cpu_budget": int, "enabled": bool,
              "initial_parallelism": int, "min_parallelism": int, "ram_budget": int}  # fmt: skip


class DistributeOptions(_OptionsBase):
    """`tf.data.experimental.DistributeOptions` (`tf.data.Options().experimental_distribute`)."""

    _FIELDS = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}
    _TYPES = {"auto_shard_policy": AutoShardPolicy, "num_devices": int}


_OPTIMIZATIONS = (
    "apply_default_optimizations", "filter_fusion", "filter_parallelization", "inject_prefetch",
    "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion", "map_parallelization",
    "noop_elimination", "parallel_batch", "seq_interleave_prefetch", "shuffle_and_repeat_fusion",
)  # fmt: skip


class OptimizationOptions(_OptionsBase):
    """`tf.data.experimental.OptimizationOptions` (`tf.data.Options().experimental_optimization`):
    TF's graph rewrites, recorded; layerflow's pipelines have no graph to rewrite."""

    _FIELDS = dict.fromkeys(_OPTIMIZATIONS)
    _TYPES = dict.fromkeys(_OPTIMIZATIONS, bool)


class ServiceOptions(_OptionsBase):
    """`tf.data.experimental.ServiceOptions` (`tf.data.Options().experimental_service`)."""

    _FIELDS = {"pinned": None}
    _TYPES = {"pinned": bool}


class ThreadingOptions(_OptionsBase):
    """`tf.data.ThreadingOptions`: `max_intra_op_parallelism`, `private_threadpool_size`."""

    _FIELDS = {"max_intra_op_parallelism": None, "private_threadpool_size": None}
    _TYPES = {"max_intra_op_parallelism": int, "private_threadpool_size": int}


class Options(_OptionsBase):
    """`tf.data.Options`.

    >>> import layerflow as tf
    >>> options = tf.data.Options()
    >>> options.deterministic = False
    >>> tf.data.Dataset.range(3).with_options(options).options().deterministic
    False
    """

    _FIELDS = {
        "autotune": AutotuneOptions,
        "deterministic": None,
        "experimental_deterministic": None,
        "experimental_distribute": DistributeOptions,
        "experimental_external_state_policy": None,
        "experimental_optimization": OptimizationOptions,
        "experimental_service": ServiceOptions,
        "experimental_slack": None,
        "experimental_symbolic_checkpoint": None,
        "experimental_warm_start": None,
        "dataset_name": None,
        "framework_type": None,
        "threading": ThreadingOptions,
    }
    _TYPES = {"experimental_external_state_policy": ExternalStatePolicy}


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


__all__ = [
    "AutoShardPolicy", "AutotuneAlgorithm", "AutotuneOptions", "DistributeOptions",
    "ExternalStatePolicy", "OptimizationOptions", "Options", "ServiceOptions", "ThreadingOptions",
    "options_of",
]  # fmt: skip
