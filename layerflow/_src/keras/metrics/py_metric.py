"""`tf.keras.metrics.experimental.PyMetric`: a metric whose state is Python data.

Its `update_state` and `result` run Python/NumPy code on the host, on concrete tensors: tf_keras
wraps them in `tf.py_function`; layerflow's compiled `fit` step makes them host steps (every
`Metric`'s `update_state` and `result` are, see `base_metric.Metric.__init_subclass__`), so
they run at every step of the compiled program with the step's real values. `reset_state` is
also called by `__init__`, to set the Python state up; `result()` is one scalar, returned as a
tensor of the metric's dtype (as `tf.py_function(..., Tout=dtype)` gives).
"""

from __future__ import annotations

import functools
from typing import Any

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.metrics.base_metric import Metric


def _as_result(method: Any) -> Any:
    @functools.wraps(method)
    def result(self: PyMetric) -> Tensor:
        value = method(self)
        if isinstance(value, dict):
            raise TypeError(
                f"PyMetric '{self.name}': result() must return a single scalar, got a dict; "
                "a PyMetric cannot return several results (use one metric per value)."
            )
        out = convert_to_tensor(value, self.dtype)
        if out.shape.rank not in (0, None):
            raise ValueError(
                f"PyMetric '{self.name}': result() must return a scalar, got shape {out.shape}."
            )
        return out

    return result


class PyMetric(Metric):
    """A metric whose `update_state`/`result` run Python code on the host.

    Subclasses implement `update_state(y_true, y_pred, sample_weight=None)` (its inputs are
    concrete tensors, also inside a compiled `fit`), `reset_state()` (called by `__init__` too,
    to create the Python state) and `result()` (one scalar).

    >>> import numpy as np
    >>> class MaxError(PyMetric):
    ...     def update_state(self, y_true, y_pred, sample_weight=None):
    ...         self.worst = max(self.worst, float(np.max(np.abs(y_true - y_pred))))
    ...     def reset_state(self):
    ...         self.worst = 0.0
    ...     def result(self):
    ...         return self.worst
    >>> m = MaxError()
    >>> m.update_state(np.array([1.0, 2.0]), np.array([1.5, 0.0]))
    >>> float(m.result())
    2.0
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        method = cls.__dict__.get("result")
        if callable(method) and not getattr(method, "_lf_host_method", False):
            type.__setattr__(cls, "result", _as_result(method))
        super().__init_subclass__(**kwargs)

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.reset_state()

    def reset_state(self) -> None:
        raise NotImplementedError(
            f"PyMetric '{type(self).__name__}' must implement reset_state(), which creates and "
            "resets its Python state (it is called by __init__)."
        )

    def merge_state(self, metrics: Any) -> None:
        raise NotImplementedError(
            f"PyMetric '{type(self).__name__}' keeps Python state: merge_state is not "
            "supported, as in tf_keras."
        )
