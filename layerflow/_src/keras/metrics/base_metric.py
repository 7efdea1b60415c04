"""The metric base classes: `Metric`, the `Sum`/`Mean` reductions, and `MeanMetricWrapper`.

Metrics need no gradients, so `update_state` computes on the backend arrays directly (on the
device the values live on) and accumulates into its variables in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.function.graph import host_method
from layerflow._src.utils import naming


def _arr(x: Any) -> Any:
    """The backend array of a tensor, or a host array for anything else."""
    if isinstance(x, TensorLike):
        return x._data
    return np.asarray(x)


def _xp(a: Any) -> Any:
    return backend.array_device(a).xp if not isinstance(a, np.ndarray) else np


def _float(a: Any, xp: Any) -> Any:
    return a if a.dtype.kind == "f" else a.astype(xp.float32)


class Metric(Trackable):
    """Base class: subclasses create state with `add_weight` and implement `update_state`
    and `result`.

    >>> m = Mean()
    >>> m.update_state([1.0, 2.0, 3.0])
    >>> float(m.result())
    2.0
    >>> m.reset_state(); float(m.result())
    0.0
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Inside a tf.function trace (a compiled `fit` step) `update_state` works on arrays, so
        # it runs eagerly as a host step at every call; `result()` too, its value an output of
        # the step. Metrics whose methods are written with ops and `assign` can drop this.
        super().__init_subclass__(**kwargs)
        for name, outputs in (("update_state", False), ("result", True)):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_lf_host_method", False):
                setattr(cls, name, host_method(method, outputs=outputs))

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        self.name = name or naming.to_snake_case(type(self).__name__)
        self._dtype = np.dtype(str(getattr(dtype, "name", dtype or "float32")))
        self._weights: list[Variable] = []
        self._weight_names: list[str] = []

    @property
    def dtype(self) -> Any:
        from layerflow._src.framework import dtypes

        return dtypes.from_numpy(self._dtype)

    def add_weight(
        self,
        name: str,
        shape: Any = (),
        initializer: str = "zeros",
        dtype: Any = None,
        **kwargs: Any,
    ) -> Variable:
        dt = self._dtype if dtype is None else np.dtype(str(getattr(dtype, "name", dtype)))
        value = np.zeros(tuple(shape), dtype=dt)
        if initializer == "ones":
            value += 1
        with naming.name_scope(None), naming.name_scope(self.name):
            v = Variable(value, trainable=False, name=name)
        self._weights.append(v)
        self._weight_names.append(name)
        return v

    @property
    def variables(self) -> list[Variable]:
        return list(self._weights)

    weights = variables
    non_trainable_weights = variables

    @property
    def trainable_weights(self) -> list[Variable]:
        return []

    def _trackable_children(self) -> dict[str, Any]:
        return dict(zip(self._weight_names, self._weights))

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Metric '{type(self).__name__}' must implement update_state().")

    def result(self) -> Tensor:
        raise NotImplementedError(f"Metric '{type(self).__name__}' must implement result().")

    def reset_state(self) -> None:
        """Zero every state variable (in place)."""
        for v in self._weights:
            v._write(np.zeros(v._data.shape, v._data.dtype))

    reset_states = reset_state

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self._dtype.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        return cls(**config)

    def _scalar(self, value: Any) -> Tensor:
        device = self._weights[0]._device if self._weights else backend.current_device()
        xp = device.xp
        return Tensor(xp.asarray(value, dtype=self._dtype), device)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def _weighted(values: Any, sample_weight: Any, xp: Any) -> tuple[Any, Any]:
    """(sum of weighted values, sum of weights) as Keras' Mean reduces them."""
    values = _float(values, xp)
    if sample_weight is None:
        return values.sum(dtype=np.float64), float(values.size)
    w = xp.asarray(_arr(sample_weight), dtype=values.dtype)
    # Keras squeezes or expands the weight to the values' rank, then broadcasts.
    while w.ndim > values.ndim and w.shape[-1] == 1:
        w = w[..., 0]
    while w.ndim < values.ndim:
        w = w[..., None]
    w = xp.broadcast_to(w, values.shape)
    return (values * w).sum(dtype=np.float64), float(w.sum(dtype=np.float64))


class Reduce(Metric):
    def __init__(self, reduction: str, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction == "mean":
            self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        a = _arr(values)
        xp = _xp(a)
        total, count = _weighted(a, sample_weight, xp)
        self.total._data += self._dtype.type(total)
        if self.reduction == "mean":
            self.count._data += self._dtype.type(count)

    def result(self) -> Tensor:
        if self.reduction == "sum":
            return self._scalar(self.total._data)
        count = float(self.count._data)
        return self._scalar(float(self.total._data) / count if count else 0.0)


class Mean(Reduce):
    """The (weighted) mean of the values seen."""

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__("mean", name=name, dtype=dtype)


class Sum(Reduce):
    """The (weighted) sum of the values seen.

    >>> s = Sum(); s.update_state([1.0, 2.0]); float(s.result())
    3.0
    """

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__("sum", name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred)` over every sample seen."""

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, dtype: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric_wrapper"), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(values, sample_weight)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._fn_kwargs}


def _pair(y_true: Any, y_pred: Any) -> tuple[Any, Any, Any]:
    t, p = _arr(y_true), _arr(y_pred)
    xp = _xp(p)
    if xp is not np and isinstance(t, np.ndarray):
        t = xp.asarray(t)
    return t, p, xp
