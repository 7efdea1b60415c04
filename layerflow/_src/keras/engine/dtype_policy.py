"""Keras 2's dtype policies (`tf.keras.mixed_precision.Policy`) and the global policy.

A policy names a layer's variable dtype and compute dtype: `"float32"` (both float32),
`"mixed_float16"` (variables float32, computations float16), `"mixed_bfloat16"`. A layer made
with a mixed policy casts its floating inputs to the compute dtype and reads its floating
variables in it while `call` runs (`autodiff/op.py`'s autocast: the variables stay float32 and
receive float32 gradients), as tf_keras's AutoCastVariable does.
"""

from __future__ import annotations

from typing import Any

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.keras.engine.backend_config import floatx

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
_global: list[Policy | None] = [None]


class Policy:
    """A dtype policy: the dtype of a layer's variables and of its computations.

    >>> p = Policy("mixed_float16")
    >>> p.compute_dtype, p.variable_dtype
    ('float16', 'float32')
    >>> Policy("float32")
    <Policy "float32">
    """

    def __init__(self, name: str) -> None:
        if isinstance(name, dtypes.DType):
            raise TypeError(
                f"'name' must be a string, not a DType. Instead, pass DType.name. Got: {name.name}"
            )
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, but got: {name!r}")
        self._name = name
        if name in _MIXED:
            self._compute, self._variable = _MIXED[name], "float32"
        elif name == "_infer":
            self._compute = self._variable = None
        else:
            try:
                dt = dtypes.as_dtype(name).name
            except (TypeError, ValueError):
                raise ValueError(
                    f"Cannot convert value {name} to a mixed precision Policy. Valid policies "
                    "include 'mixed_float16', 'mixed_bfloat16', and the name of any dtype such "
                    "as 'float32'."
                ) from None
            self._compute = self._variable = dt

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str | None:
        """The dtype of the layer's computations (float16 for "mixed_float16")."""
        return self._compute

    @property
    def variable_dtype(self) -> str | None:
        """The dtype of the layer's variables (float32 for the mixed policies)."""
        return self._variable

    def get_config(self) -> dict[str, Any]:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> Policy:
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f'<Policy "{self._name}">'


def global_policy() -> Policy:
    """The policy of layers made with `dtype=None`: the one `set_global_policy` set, else
    `Policy(floatx())`.

    >>> global_policy()
    <Policy "float32">
    """
    policy = _global[0]
    return Policy(floatx()) if policy is None else policy


def set_global_policy(policy: Any) -> None:
    """Set the policy of the layers made from now on with `dtype=None` (None: back to floatx).

    >>> set_global_policy("mixed_float16"); global_policy().compute_dtype
    'float16'
    >>> set_global_policy(None)
    """
    if policy is not None and not isinstance(policy, Policy):
        policy = Policy(policy)
    if policy is not None and policy.variable_dtype is not None:
        if not dtypes.as_dtype(policy.variable_dtype).is_floating:
            raise ValueError(
                "set_global_policy can only be used to set the global policy to floating-point "
                "policies, such as 'float32' and 'mixed_float16', but got policy: "
                f"{policy.name}"
            )
    _global[0] = policy


def policy_of(dtype: Any) -> Policy | None:
    """The policy a layer's `dtype` argument names (a dtype, a name, a Policy, or its
    serialized dict); None for `dtype=None` without a global policy (the layer follows
    floatx)."""
    if dtype is None:
        return _global[0]
    if isinstance(dtype, Policy):
        return dtype
    if isinstance(dtype, dict):
        if dtype.get("class_name") != "Policy":
            raise ValueError(f"Unknown dtype policy config: {dtype!r}.")
        return Policy.from_config(dtype.get("config", {}))
    if isinstance(dtype, str) and dtype in _MIXED:
        return Policy(dtype)
    return Policy(dtypes.as_dtype(getattr(dtype, "name", dtype)).name)


def serialize(policy: Policy | None, dtype: str) -> Any:
    """A layer's `dtype` config: the dtype name, or the Policy's dict for a mixed policy."""
    if policy is None or policy.compute_dtype == policy.variable_dtype:
        return dtype
    return {"class_name": "Policy", "config": policy.get_config()}


def run_autocast(compute: str | None, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` with autocast variables read in `compute` (None: as they are);
    a layer's call under its policy."""
    flags = backend.flags
    target = None if compute is None else dtypes.as_dtype(compute).np
    prev = flags.autocast
    if prev == target:
        return fn(*args, **kwargs)
    flags.autocast = target
    try:
        return fn(*args, **kwargs)
    finally:
        flags.autocast = prev
