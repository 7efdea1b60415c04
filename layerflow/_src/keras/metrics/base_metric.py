"""The metric base classes: `Metric` (a Layer, as in Keras 2), the `Sum`/`Mean` reductions, and
`MeanMetricWrapper`.

A metric's state is its non-trainable weights (`add_weight`); `update_state` computes a batch's
statistics with the gradient-free ops of `ops/metric_ops.py` and adds them to the weights with
`assign_add`, and `result` computes the value from the weights with ops, so every state change
is an op plus a Variable write and nothing here touches a backend array.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.variables import Variable
from layerflow._src.function.graph import host_method
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.ops import array_ops, metric_ops
from layerflow._src.utils import naming


class Metric(Layer):
    """Base class: subclasses create state with `add_weight` in `__init__` and implement
    `update_state` and `result` (Keras 2's `tf.keras.metrics.Metric`, a Layer).

    Calling a metric updates its state and returns the result; its weights are
    non-trainable; `reset_state` zeroes them; `merge_state` adds other metrics' state.

    >>> m = Mean()
    >>> m.update_state([1.0, 2.0, 3.0])
    >>> float(m.result())
    2.0
    >>> m.reset_state(); float(m.result())
    0.0
    """

    _is_metric = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Inside a tf.function trace (a compiled `fit` step) `update_state` and `result()` are
        # traced: written with ops and `assign`, they become steps of the program. A metric
        # that computes on values or keeps Python state (NumPy, `.numpy()`, a PyMetric) runs
        # eagerly as a host step at every call instead, `result()`'s value an output of the
        # step (`host_method(trace=True)` tells the two apart).
        super().__init_subclass__(**kwargs)
        for name, outputs in (("update_state", False), ("result", True)):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_lf_host_method", False):
                setattr(cls, name, host_method(method, outputs=outputs, trace=True))

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        # Keras names a metric after its class without a uniquifying suffix ('mean').
        name = name or naming.to_snake_case(type(self).__name__)
        super().__init__(name=name, dtype=dtype or "float32", **kwargs)
        self.built = True

    @property
    def name(self) -> str:
        return self.__dict__["_name"]

    @name.setter
    def name(self, value: str) -> None:
        # `compile` names the metrics it makes from strings ('mae', 'out1_accuracy').
        self.__dict__["_name"] = str(value)

    @property
    def stateful(self) -> bool:
        """Always True: a metric keeps state across batches."""
        return True

    def add_weight(self, name: Any = None, shape: Any = (), aggregation: Any = None,
                   synchronization: Any = None, initializer: Any = None, dtype: Any = None,
                   **kwargs: Any) -> Variable:  # fmt: skip
        """A state variable of this metric: non-trainable, zeros unless `initializer` says."""
        kwargs.pop("trainable", None)
        return super().add_weight(name=name, shape=() if shape is None else shape,
                                  dtype=dtype or self.dtype, initializer=initializer or "zeros",
                                  trainable=False, **kwargs)  # fmt: skip

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Metric '{type(self).__name__}' must implement update_state().")

    def result(self) -> Tensor:
        raise NotImplementedError(f"Metric '{type(self).__name__}' must implement result().")

    def reset_state(self) -> None:
        """Zero every state variable."""
        for v in self.variables:
            v.assign(array_ops.zeros(tuple(v.shape), v.dtype))

    def reset_states(self) -> None:
        """The former name of `reset_state`."""
        self.reset_state()

    def merge_state(self, metrics: Iterable[Metric]) -> None:
        """Add the state of each of `metrics` (instances of a compatible metric) to this one's,
        as Keras 2 does: weight by weight, in order.

        >>> a, b = Mean(), Mean()
        >>> a.update_state([1.0, 2.0]); b.update_state([6.0])
        >>> b.merge_state([a]); float(b.result())
        3.0
        """
        metrics = list(metrics)
        for metric in metrics:
            mine, theirs = self.weights, metric.weights
            if len(mine) != len(theirs) or any(
                tuple(a.shape) != tuple(b.shape) for a, b in zip(mine, theirs)
            ):
                raise ValueError(
                    f"Metric {metric.name!r} ({type(metric).__name__}, weight shapes "
                    f"{[tuple(w.shape) for w in theirs]}) is not compatible with "
                    f"{self.name!r} ({type(self).__name__}, weight shapes "
                    f"{[tuple(w.shape) for w in mine]}); merge metrics of the same kind."
                )
        for metric in metrics:
            for weight, other in zip(self.weights, metric.weights):
                weight.assign_add(other)

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        """Update the state with one batch, then return the result."""
        with stop_recording_all():
            self.update_state(*args, **kwargs)
            return self.result()

    def __deepcopy__(self, memo: dict) -> Metric:
        """A new metric from this one's config, holding copies of its state (Keras 2)."""
        new = type(self).from_config(self.get_config())
        if self.weights:
            new.set_weights(self.get_weights())
        memo[id(self)] = new
        return new

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        return cls(**config)

    def _scalar(self, value: float) -> Tensor:
        return array_ops.constant(value, dtype=self.dtype)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


class Reduce(Metric):
    def __init__(self, reduction: str, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction == "mean":
            self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        total, count = metric_ops.sum_and_count(values, sample_weight, self.dtype)
        self.total.assign_add(total)
        if self.reduction == "mean":
            self.count.assign_add(count)

    def result(self) -> Tensor:
        if self.reduction == "sum":
            return self.total.read_value()
        return metric_ops.ratio(self.total, self.count, wide=True)


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
