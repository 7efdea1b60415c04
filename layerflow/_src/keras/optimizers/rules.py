"""The built-in update rules (Keras 2.11+ formulas).

Each rule computes a step with one gradient-free op of `ops/optimizer_ops.py` (the new slot
values and the variable's increment, from the gradient and the slots read in place) and
writes the results through the Variables (`assign`, `assign_add`, `assign_sub`): every state
change is an op plus a Variable write, and every copy of a mirrored variable changes with it.
A rule written outside this file does the same in `update_step(gradient, variable)`.
"""

from __future__ import annotations

import math
from typing import Any

from layerflow._src.framework.variables import Variable
from layerflow._src.keras.optimizers.optimizer import Optimizer, traced_rule
from layerflow._src.ops import optimizer_ops as K


class SGD(Optimizer):
    """Gradient descent, with optional (Nesterov) momentum.

    `velocity = momentum * velocity - lr * g; w += velocity` (Nesterov:
    `w += momentum * velocity - lr * g`); without momentum `w -= lr * g`.

    >>> import layerflow as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.SGD(learning_rate=0.1).apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 4)
    0.8
    """

    def __init__(
        self,
        learning_rate: Any = 0.01,
        momentum: float = 0.0,
        nesterov: bool = False,
        name: str = "SGD",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}.")
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        if self.momentum:
            for v in var_list:
                self.add_variable_from_reference(v, "m")

    @traced_rule
    def _apply(
        self, clipped: list[Any], grads: list[Any], variables: list[Variable], scalars: Any
    ) -> None:
        mom = self.momentum
        for g, v in zip(clipped, variables):
            if not mom:
                v.assign_sub(K.sgd_delta(g, scalars, self._scratch_for(v), self._LR))
                continue
            m = self._slots[id(v)]["m"]
            new_m, *deltas = K.sgd_momentum(g, m, scalars, mom, self.nesterov, self._LR)
            m.assign(new_m)
            if self.nesterov:
                v.assign_sub(deltas[0])
                v.assign_add(deltas[1])
            else:
                v.assign_add(deltas[0])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam: bias-corrected first and second moment estimates.

    `m += (1 - beta_1) (g - m)`, `v += (1 - beta_2) (g^2 - v)`,
    `w -= lr sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)`.
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        name: str = "Adam",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            self.add_variable_from_reference(v, "m")
        for v in var_list:
            self.add_variable_from_reference(v, "v")
        if self.amsgrad:
            for v in var_list:
                self.add_variable_from_reference(v, "vhat")

    @traced_rule
    def _apply(
        self, clipped: list[Any], grads: list[Any], variables: list[Variable], scalars: Any
    ) -> None:
        b1, b2 = self.beta_1, self.beta_2
        for g, var in zip(clipped, variables):
            slots = self._slots[id(var)]
            m, v = K.adam_moments(g, slots["m"], slots["v"], b1, b2)
            slots["m"].assign(m)
            slots["v"].assign(v)
            if self.amsgrad:
                v = K.running_max(slots["vhat"], v)
                slots["vhat"].assign(v)
            var.assign_sub(K.adam_delta(m, v, scalars, self.epsilon, self._RULE))

    def _rule_scalars(self, lr: float, step: int) -> list[float]:
        # The bias-corrected learning rate, in Python float64 as Keras computes it.
        b1, b2 = self.beta_1, self.beta_2
        return [lr * math.sqrt(1.0 - b2**step) / (1.0 - b1**step)]

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
            "amsgrad": self.amsgrad,
        }


class AdamW(Adam):
    """Adam with decoupled weight decay: `w -= lr * weight_decay * w` before the Adam step."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        weight_decay: float = 0.004,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        name: str = "AdamW",
        **kwargs: Any,
    ) -> None:
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a float (it is the point of AdamW).")
        super().__init__(
            learning_rate=learning_rate,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            amsgrad=amsgrad,
            name=name,
            weight_decay=weight_decay,
            **kwargs,
        )


class RMSprop(Optimizer):
    """RMSprop: divide the gradient by a running root mean square of recent gradients.

    `ms = rho ms + (1 - rho) g^2`; `w -= lr g / sqrt(ms + epsilon)` (centered: subtract the
    squared running mean gradient inside the root; momentum: accumulate the increments).
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-7,
        centered: bool = False,
        name: str = "RMSprop",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            self.add_variable_from_reference(v, "velocity")
        if self.momentum > 0:
            for v in var_list:
                self.add_variable_from_reference(v, "momentum")
        if self.centered:
            for v in var_list:
                self.add_variable_from_reference(v, "average_gradient")

    @traced_rule
    def _apply(
        self, clipped: list[Any], grads: list[Any], variables: list[Variable], scalars: Any
    ) -> None:
        for g, var in zip(clipped, variables):
            slots = self._slots[id(var)]
            avg = slots["average_gradient"] if self.centered else None
            vel, delta, *new_avg = K.rmsprop(
                g, slots["velocity"], avg, scalars, self.rho, self.epsilon, self._LR
            )
            slots["velocity"].assign(vel)
            if new_avg:
                avg.assign(new_avg[0])
            if self.momentum > 0:
                mom = slots["momentum"]
                mom.assign(K.scale_add(mom, self.momentum, delta))
                delta = mom
            var.assign_sub(delta)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "rho": self.rho,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "centered": self.centered,
        }


class Adagrad(Optimizer):
    """Adagrad: `acc += g^2; w -= lr g / sqrt(acc + epsilon)`."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: float = 1e-7,
        name: str = "Adagrad",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError(
                f"Adagrad: initial_accumulator_value must be >= 0, got {initial_accumulator_value}."
            )
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            init = K.slot_like(v, fill=self.initial_accumulator_value)
            self.add_variable_from_reference(v, "accumulator", initial_value=init)

    @traced_rule
    def _apply(
        self, clipped: list[Any], grads: list[Any], variables: list[Variable], scalars: Any
    ) -> None:
        for g, var in zip(clipped, variables):
            acc = self._slots[id(var)]["accumulator"]
            new_acc, delta = K.adagrad(g, acc, scalars, self.epsilon, self._LR)
            acc.assign(new_acc)
            var.assign_sub(delta)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "initial_accumulator_value": self.initial_accumulator_value,
            "epsilon": self.epsilon,
        }
