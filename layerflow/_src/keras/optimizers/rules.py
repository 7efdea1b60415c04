"""The built-in update rules (Keras 2.11+ formulas), each written as in-place array updates.

Every rule computes into `out=` buffers, so one step allocates nothing the size of a parameter
(`Optimizer._buffer` keeps one scratch per variable), and writes each variable and slot through
`Variable._update(fn, *args)` with one of the small kernels below: the state changes where the
variable says (every copy of a mirrored variable), never behind its back.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from layerflow._src.framework.variables import Variable
from layerflow._src.keras.optimizers.optimizer import Optimizer


# --- in-place kernels: `fn(array, *args)` for Variable._update ------------------------------------
def _decay_then_sub(m: Any, mom: float, buf: Any) -> None:
    """Momentum: `m = mom * m - buf`."""
    m *= mom
    m -= buf


def _nesterov(w: Any, buf: Any, m: Any, mom: float, xp: Any) -> None:
    """`w += mom * m - buf`, with `buf` (lr * g) reused as scratch."""
    w -= buf
    xp.multiply(m, mom, out=buf)
    w += buf


def _moving_average(m: Any, g: Any, rate: float, buf: Any, xp: Any) -> None:
    """`m += rate * (g - m)`."""
    xp.subtract(g, m, out=buf)
    buf *= rate
    m += buf


def _moving_average_sq(v: Any, g: Any, rate: float, buf: Any, xp: Any) -> None:
    """`v += rate * (g^2 - v)`."""
    xp.multiply(g, g, out=buf)
    buf -= v
    buf *= rate
    v += buf


def _running_max(vhat: Any, v: Any, xp: Any) -> None:
    xp.maximum(vhat, v, out=vhat)


def _scale_add(acc: Any, scale: float, buf: Any) -> None:
    """`acc = scale * acc + buf`."""
    acc *= scale
    acc += buf


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

    def _apply(
        self, arrays: list[Any], grads: list[Any], variables: list[Variable], lr: float
    ) -> None:
        mom = self.momentum
        for g, v in zip(arrays, variables):
            buf = self._buffer(v)
            xp = v._device.xp
            xp.multiply(g, lr, out=buf)
            if not mom:
                v._update(operator.isub, buf)
                continue
            m = self._slots[id(v)]["m"]
            m._update(_decay_then_sub, mom, buf)
            if self.nesterov:
                v._update(_nesterov, buf, m._data, mom, xp)
            else:
                v._update(operator.iadd, m._data)

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

    def _apply(
        self, arrays: list[Any], grads: list[Any], variables: list[Variable], lr: float
    ) -> None:
        t = int(self._iterations._data) + 1
        b1, b2 = self.beta_1, self.beta_2
        alpha = lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
        for g, var in zip(arrays, variables):
            xp = var._device.xp
            slots = self._slots[id(var)]
            buf = self._buffer(var)
            slots["m"]._update(_moving_average, g, 1.0 - b1, buf, xp)
            slots["v"]._update(_moving_average_sq, g, 1.0 - b2, buf, xp)
            v = slots["v"]._data
            if self.amsgrad:
                v = slots["vhat"]._update(_running_max, v, xp)._data
            xp.sqrt(v, out=buf)
            buf += self.epsilon
            xp.divide(slots["m"]._data, buf, out=buf)
            buf *= alpha
            var._update(operator.isub, buf)

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

    def _apply(
        self, arrays: list[Any], grads: list[Any], variables: list[Variable], lr: float
    ) -> None:
        rho = self.rho
        for g, var in zip(arrays, variables):
            xp = var._device.xp
            slots = self._slots[id(var)]
            buf = self._buffer(var)
            xp.multiply(g, g, out=buf)
            buf *= 1.0 - rho
            vel = slots["velocity"]._update(_scale_add, rho, buf)._data
            if self.centered:
                xp.multiply(g, 1.0 - rho, out=buf)
                avg = slots["average_gradient"]._update(_scale_add, rho, buf)._data
                xp.multiply(avg, avg, out=buf)
                xp.subtract(vel, buf, out=buf)
            else:
                buf[...] = vel
            buf += self.epsilon
            xp.sqrt(buf, out=buf)
            xp.divide(g, buf, out=buf)
            buf *= lr
            if self.momentum > 0:
                mom = slots["momentum"]._update(_scale_add, self.momentum, buf)._data
                var._update(operator.isub, mom)
            else:
                var._update(operator.isub, buf)

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
            init = v._device.xp.full(v._data.shape, self.initial_accumulator_value, v._data.dtype)
            self.add_variable_from_reference(v, "accumulator", initial_value=init)

    def _apply(
        self, arrays: list[Any], grads: list[Any], variables: list[Variable], lr: float
    ) -> None:
        for g, var in zip(arrays, variables):
            xp = var._device.xp
            buf = self._buffer(var)
            xp.multiply(g, g, out=buf)
            acc = self._slots[id(var)]["accumulator"]._update(operator.iadd, buf)._data
            xp.add(acc, self.epsilon, out=buf)
            xp.sqrt(buf, out=buf)
            xp.divide(g, buf, out=buf)
            buf *= lr
            var._update(operator.isub, buf)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "initial_accumulator_value": self.initial_accumulator_value,
            "epsilon": self.epsilon,
        }
