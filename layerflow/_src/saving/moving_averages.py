"""`tf.train.ExponentialMovingAverage`: shadow variables that follow variables by
`shadow -= (1 - decay) * (shadow - variable)`, as TF 2 does in eager mode.

Each shadow variable starts at its variable's value (TF's rule for variables; TF's
`zero_debias` applies only to moving averages of plain tensors, which eager TF refuses, and so
does layerflow). With `num_updates`, the decay used is min(decay, (1 + n) / (10 + n)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.variables import Variable


def _op_name(var: Variable) -> str:
    name = var.name
    return name[:-2] if name.endswith(":0") else name.split(":")[0]


class ExponentialMovingAverage:
    """Maintain moving averages of variables with exponential decay.

    >>> import layerflow as tf
    >>> v = tf.Variable([1.0, 2.0], name="v")
    >>> ema = tf.train.ExponentialMovingAverage(decay=0.5)
    >>> ema.apply([v])
    >>> _ = v.assign([3.0, 4.0])
    >>> ema.apply([v])
    >>> ema.average(v).numpy(), ema.average_name(v)
    (array([2., 3.], dtype=float32), 'v/ExponentialMovingAverage')
    """

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:  # fmt: skip
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = bool(zero_debias)
        self._ema_name = name
        self._averages: dict[int, tuple[Variable, Variable]] = {}

    @property
    def name(self) -> str:
        return self._ema_name

    @property
    def zero_debias(self) -> bool:
        return self._zero_debias

    def _current_decay(self) -> float:
        decay = float(np.asarray(_host(self._decay)))
        if self._num_updates is not None:
            n = float(np.asarray(_host(self._num_updates)))
            decay = min(decay, (1.0 + n) / (10.0 + n))
        return decay

    def apply(self, var_list: Any = None) -> None:
        """Create shadow variables for new entries of `var_list` (initialized to their value),
        then update every shadow of `var_list` once."""
        if var_list is None:
            raise ValueError(
                "ExponentialMovingAverage.apply needs var_list in eager mode (there is no "
                "global collection of trainable variables); pass the variables to average."
            )
        var_list = list(var_list)
        for var in var_list:
            if not isinstance(var, Variable):
                if isinstance(var, TensorLike):
                    raise TypeError(
                        "tf.train.ExponentialMovingAverage does not support non-Variable tensors "
                        "when eager execution is enabled."
                    )
                raise TypeError(f"ExponentialMovingAverage.apply: expected variables, got {var!r}.")
            if var.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
        for var in var_list:
            if id(var) not in self._averages:
                shadow = Variable(
                    backend.to_host(var._data).copy(),
                    trainable=False,
                    name=self.average_name(var),
                )
                self._averages[id(var)] = (var, shadow)
        decay = self._current_decay()
        for var in var_list:
            shadow = self._averages[id(var)][1]
            shadow.assign_sub((shadow - var) * (1.0 - decay))

    def average(self, var: Any) -> Variable | None:
        """The shadow variable of `var`, or None if `apply` never saw it."""
        entry = self._averages.get(id(var))
        return entry[1] if entry is not None and entry[0] is var else None

    def average_name(self, var: Any) -> str:
        """The name of `var`'s shadow variable: `<var op name>/<this EMA's name>`."""
        if not isinstance(var, Variable):
            raise TypeError(f"average_name: expected a tf.Variable, got {type(var).__name__}.")
        return f"{_op_name(var)}/{self._ema_name}"

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Variable]:
        """{shadow name: variable}, to restore the averages into the variables themselves (by
        default for every variable `apply` has seen; eager mode has no global collections)."""
        if moving_avg_variables is None:
            moving_avg_variables = [v for v, _ in self._averages.values()]
        out = {}
        for var in moving_avg_variables:
            out[self.average_name(var)] = var
        return out


def _host(value: Any) -> Any:
    return backend.to_host(value._data) if isinstance(value, TensorLike) else value


__all__ = ["ExponentialMovingAverage"]
