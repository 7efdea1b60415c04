"""`tf.keras.optimizers.schedules`: learning rates that change with the optimizer's step.

A schedule is called with the step (the optimizer's `iterations`) and returns a float32 scalar
tensor. The optimizer reads it once per `apply_gradients`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.keras import serialization
from layerflow._src.ops.array_ops import constant


def _step(step: Any) -> float:
    return float(np.asarray(step))


class LearningRateSchedule:
    """Base class: subclasses implement `__call__(step)` and `get_config()`.

    >>> class Halving(LearningRateSchedule):
    ...     def __call__(self, step):
    ...         return 0.1 * 0.5 ** (step // 10)
    ...     def get_config(self):
    ...         return {}
    >>> Halving()(20)
    0.025
    """

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError(
            f"Learning rate schedule '{type(self).__name__}' must override __call__(self, step)."
        )

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(
            f"Learning rate schedule '{type(self).__name__}' must override get_config()."
        )

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LearningRateSchedule:
        return cls(**config)


class _StepDecay(LearningRateSchedule):
    """What ExponentialDecay and InverseTimeDecay share: their arguments and `step / decay_steps`
    (floored when `staircase`); subclasses give the rate for that progress."""

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str | None = None,
    ) -> None:
        if decay_steps <= 0:
            raise ValueError(f"{type(self).__name__}: decay_steps must be > 0, got {decay_steps}.")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step: Any) -> Any:
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return constant(self._rate(p), "float32")

    def _rate(self, progress: float) -> float:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
            "staircase": self.staircase,
            "name": self.name,
        }


class ExponentialDecay(_StepDecay):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)` (floored when `staircase`).

    >>> round(float(ExponentialDecay(0.1, 10, 0.5)(20)), 6)
    0.025
    """

    def _rate(self, progress: float) -> float:
        return float(self.initial_learning_rate) * float(self.decay_rate) ** progress


class InverseTimeDecay(_StepDecay):
    """`initial_learning_rate / (1 + decay_rate * step / decay_steps)`.

    >>> round(float(InverseTimeDecay(0.1, 10, 1.0)(10)), 6)
    0.05
    """

    def _rate(self, progress: float) -> float:
        return self.initial_learning_rate / (1.0 + self.decay_rate * progress)


class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[i]` while `boundaries[i-1] < step <= boundaries[i]` (Keras' boundary rule).

    >>> s = PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    >>> [round(float(s(k)), 3) for k in (0, 10, 11, 21)]
    [1.0, 1.0, 0.5, 0.1]
    """

    def __init__(self, boundaries: list[Any], values: list[Any], name: str | None = None) -> None:
        if len(values) != len(boundaries) + 1:
            raise ValueError(
                f"PiecewiseConstantDecay needs one more value than boundaries, got "
                f"{len(boundaries)} boundaries and {len(values)} values."
            )
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step: Any) -> Any:
        s = _step(step)
        for b, v in zip(self.boundaries, self.values):
            if s <= float(np.asarray(b)):
                return constant(float(np.asarray(v)), "float32")
        return constant(float(np.asarray(self.values[-1])), "float32")

    def get_config(self) -> dict[str, Any]:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """Polynomial decay from `initial_learning_rate` to `end_learning_rate` over `decay_steps`."""

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        end_learning_rate: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        name: str | None = None,
    ) -> None:
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step: Any) -> Any:
        s = _step(step)
        steps = float(self.decay_steps)
        if self.cycle:
            steps = steps * max(1.0, math.ceil(s / steps)) if s > 0 else steps
        else:
            s = min(s, steps)
        frac = (1.0 - s / steps) ** self.power
        lr = (self.initial_learning_rate - self.end_learning_rate) * frac + self.end_learning_rate
        return constant(lr, "float32")

    def get_config(self) -> dict[str, Any]:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "cycle": self.cycle,
            "name": self.name,
        }


class CosineDecay(LearningRateSchedule):
    """Cosine decay from `initial_learning_rate` to `alpha * initial_learning_rate`.

    >>> round(float(CosineDecay(1.0, 100)(50)), 4)
    0.5
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        alpha: float = 0.0,
        name: str | None = None,
    ) -> None:
        if decay_steps <= 0:
            raise ValueError(f"CosineDecay: decay_steps must be > 0, got {decay_steps}.")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name

    def __call__(self, step: Any) -> Any:
        s = min(_step(step), float(self.decay_steps))
        cosine = 0.5 * (1.0 + math.cos(math.pi * s / self.decay_steps))
        decayed = (1.0 - self.alpha) * cosine + self.alpha
        return constant(self.initial_learning_rate * decayed, "float32")

    def get_config(self) -> dict[str, Any]:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "alpha": self.alpha,
            "name": self.name,
        }


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter 2016): period i lasts
    `first_decay_steps * t_mul**i` steps and starts at `initial_learning_rate * m_mul**i`.

    >>> s = CosineDecayRestarts(1.0, 10)
    >>> [round(float(s(k)), 4) for k in (0, 5, 10, 20)]
    [1.0, 0.5, 1.0, 0.5]
    """

    def __init__(
        self,
        initial_learning_rate: float,
        first_decay_steps: int,
        t_mul: float = 2.0,
        m_mul: float = 1.0,
        alpha: float = 0.0,
        name: str | None = None,
    ) -> None:
        if first_decay_steps <= 0:
            raise ValueError(
                f"CosineDecayRestarts: first_decay_steps must be > 0, got {first_decay_steps}."
            )
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step: Any) -> Any:
        fraction = _step(step) / float(self.first_decay_steps)
        t_mul = float(self._t_mul)
        if t_mul == 1.0:
            i_restart = math.floor(fraction)
            fraction -= i_restart
        else:
            i_restart = math.floor(math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            sum_r = (1.0 - t_mul**i_restart) / (1.0 - t_mul)
            fraction = (fraction - sum_r) / t_mul**i_restart
        cosine = 0.5 * float(self._m_mul) ** i_restart * (1.0 + math.cos(math.pi * fraction))
        decayed = (1.0 - self.alpha) * cosine + self.alpha
        return constant(self.initial_learning_rate * decayed, "float32")

    def get_config(self) -> dict[str, Any]:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "first_decay_steps": self.first_decay_steps,
            "t_mul": self._t_mul,
            "m_mul": self._m_mul,
            "alpha": self.alpha,
            "name": self.name,
        }


_ALL = {
    c.__name__: c
    for c in (
        ExponentialDecay,
        InverseTimeDecay,
        PiecewiseConstantDecay,
        PolynomialDecay,
        CosineDecay,
        CosineDecayRestarts,
    )
}


def serialize(schedule: LearningRateSchedule) -> dict[str, Any]:
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
    """A schedule from `serialize`'s output; its class must be built in, registered, or in
    `custom_objects` (nothing else is looked up).

    >>> deserialize({"class_name": "CosineDecay",
    ...              "config": {"initial_learning_rate": 0.1, "decay_steps": 10}}).decay_steps
    10
    """
    return serialization.deserialize_keras_object(
        config, _ALL, custom_objects, printable_module_name="learning rate schedule"
    )
