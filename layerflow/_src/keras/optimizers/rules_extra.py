"""More update rules of Keras 2 (tf_keras 2.11+ optimizers): Adamax, Nadam, Adadelta, Ftrl,
Adafactor and Lion.

Each rule is an `update_step(gradient, variable)` written with layerflow ops and `Variable`
methods (`assign`, `assign_add`, `assign_sub`), following tf_keras's source line by line, so the
state changes only through the variable (mirrored copies stay equal) and the rules stay correct
whatever the in-place kernels of `rules.py` become. They are not the hot path the four classic
rules are; a step costs a few small temporaries per variable.
"""

from __future__ import annotations

import math
from typing import Any

from layerflow._src.framework.variables import Variable
from layerflow._src.keras.optimizers.optimizer import Optimizer, traced_rule
from layerflow._src.keras.optimizers.schedules import LearningRateSchedule
from layerflow._src.ops import array_ops, core_ops, elementwise_ops, math_ops
from layerflow._src.ops import optimizer_ops as K


class _OpsRule(Optimizer):
    """Shared helpers of the op-written rules: the step's learning rate and step number."""

    def _lr(self) -> float:
        # apply_gradients reads the learning rate (or the schedule) once per step.
        lr = getattr(self, "_current_lr", None)
        return self._lr_value() if lr is None else lr

    def _step(self) -> int:
        """The 1-based number of the step being applied (`iterations + 1`)."""
        return int(self.iterations.numpy()) + 1

    def _slot(self, variable: Variable, name: str) -> Variable:
        return self._slots[id(variable)][name]

    # The rules marked `traced_rule` read the step's scalars (`_rule_scalars`, computed in
    # Python float64 by a host step at every call) as scalar tensors, so they trace.
    @traced_rule
    def _apply(self, clipped: list[Any], grads: list[Any], variables: list[Variable], lr: Any):
        self._scalars = lr  # the scalars vector for a traced rule, else the float rate
        for g, v in zip(clipped, variables):
            self.update_step(g, v)

    def _scalar(self, index: int, variable: Variable) -> Any:
        """Entry `index` of this step's scalars, as a scalar of `variable`'s dtype."""
        return K.step_scalar(self._scalars, index, variable)


class Adamax(_OpsRule):
    """Adamax: Adam with the infinity norm (Kingma & Ba, section 7).

    `m += (1 - beta_1) (g - m)`, `u = max(beta_2 u, |g|)`,
    `w -= lr m / ((1 - beta_1^t) (u + epsilon))`.

    >>> import layerflow as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.Adamax(learning_rate=0.1).apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 4)
    0.9
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        name: str = "Adamax",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            self.add_variable_from_reference(v, "m")
            self.add_variable_from_reference(v, "u")

    def _rule_scalars(self, lr: float, step: int) -> list[float]:
        return [1.0 - self.beta_1**step]

    @traced_rule
    def update_step(self, gradient: Any, variable: Variable) -> None:
        lr, correction = self._scalar(self._LR, variable), self._scalar(self._RULE, variable)
        m, u = self._slot(variable, "m"), self._slot(variable, "u")
        m.assign_add((gradient - m) * (1.0 - self.beta_1))
        u.assign(math_ops.maximum(u * self.beta_2, math_ops.abs(gradient)))
        variable.assign_sub((m * lr) / ((u + self.epsilon) * correction))

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
        }


class Nadam(_OpsRule):
    """Nadam: Adam with Nesterov momentum (Dozat 2016), with tf_keras's momentum schedule
    `u_t = beta_1 (1 - 0.5 * 0.96^t)` and its running product.

    >>> import layerflow as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.Nadam(learning_rate=0.1).apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 4)
    0.8937
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        name: str = "Nadam",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self._u_product = (0, 1.0)  # (t, prod_{i<=t} u_i)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            self.add_variable_from_reference(v, "m")
            self.add_variable_from_reference(v, "v")

    def _u(self, t: int) -> float:
        return self.beta_1 * (1.0 - 0.5 * 0.96**t)

    def _rule_scalars(self, lr: float, step: int) -> list[float]:
        # prod_{i<=t} u_i advances once per step (this runs once per step, on the host, also
        # in a traced step). tf_keras keeps it in a variable; it is a function of `iterations`
        # alone, so it is recomputed when the step count moved by other means (a restore,
        # `iterations.assign`).
        t = step
        done, product = self._u_product
        if done != t - 1:
            done, product = 0, 1.0
        for i in range(done + 1, t + 1):
            product *= self._u(i)
        self._u_product = (t, product)
        u_t, u_t1 = self._u(t), self._u(t + 1)
        return [u_t1, 1.0 - product * u_t1, 1.0 - u_t, 1.0 - product, 1.0 - self.beta_2**t]

    @traced_rule
    def update_step(self, gradient: Any, variable: Variable) -> None:
        b1, b2 = self.beta_1, self.beta_2
        u_t1, c_t1, one_minus_u_t, c_t, c_v = (
            self._scalar(self._RULE + i, variable) for i in range(5)
        )
        lr = self._scalar(self._LR, variable)
        m, v = self._slot(variable, "m"), self._slot(variable, "v")
        m.assign_add((gradient - m) * (1.0 - b1))
        v.assign_add((math_ops.square(gradient) - v) * (1.0 - b2))
        m_hat = (m * u_t1) / c_t1 + (gradient * one_minus_u_t) / c_t
        v_hat = v / c_v
        variable.assign_sub((m_hat * lr) / (math_ops.sqrt(v_hat) + self.epsilon))

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
        }


class Adadelta(_OpsRule):
    """Adadelta: per-dimension step sizes from running averages of squared gradients and
    squared updates (Zeiler 2012), scaled by `learning_rate` as in Keras.

    `a = rho a + (1 - rho) g^2`, `d = -sqrt(ad + eps) g / sqrt(a + eps)`,
    `ad = rho ad + (1 - rho) d^2`, `w += lr d`.
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: float = 0.95,
        epsilon: float = 1e-7,
        name: str = "Adadelta",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.rho = float(rho)
        self.epsilon = float(epsilon)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            self.add_variable_from_reference(v, "accumulated_grad")
            self.add_variable_from_reference(v, "accumulated_delta_var")

    @traced_rule
    def update_step(self, gradient: Any, variable: Variable) -> None:
        lr, rho, eps = self._scalar(self._LR, variable), self.rho, self.epsilon
        acc_g = self._slot(variable, "accumulated_grad")
        acc_d = self._slot(variable, "accumulated_delta_var")
        acc_g.assign(acc_g * rho + gradient * gradient * (1.0 - rho))
        delta = -math_ops.sqrt(acc_d + eps) * gradient / math_ops.sqrt(acc_g + eps)
        acc_d.assign(acc_d * rho + delta * delta * (1.0 - rho))
        variable.assign_add(delta * lr)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


class Ftrl(_OpsRule):
    """FTRL-Proximal (McMahan et al. 2013), with L1, L2 and L2-shrinkage regularization and
    `beta`, as tf_keras implements it."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        l2_shrinkage_regularization_strength: float = 0.0,
        beta: float = 0.0,
        name: str = "Ftrl",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        checks = (
            ("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
            ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
            ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
            (
                "l2_shrinkage_regularization_strength",
                l2_shrinkage_regularization_strength,
                "positive or zero",
            ),
            ("learning_rate_power", -learning_rate_power, "negative or zero"),
        )
        for arg, value, need in checks:
            if value < 0.0:
                shown = -value if arg == "learning_rate_power" else value
                raise ValueError(f"Ftrl: `{arg}` needs to be {need}. Received: {arg}={shown}.")
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            init = array_ops.fill(v.shape, array_ops.constant(self.initial_accumulator_value))
            self.add_variable_from_reference(
                v, "accumulator", initial_value=math_ops.cast(init, v.dtype)
            )
            self.add_variable_from_reference(v, "linear")

    def _rule_scalars(self, lr: float, step: int) -> list[float]:
        return [2.0 * (self.l2_regularization_strength + self.beta / (2.0 * lr))]

    @traced_rule
    def update_step(self, gradient: Any, variable: Variable) -> None:
        lr = self._scalar(self._LR, variable)
        power = -self.learning_rate_power
        accum, linear = self._slot(variable, "accumulator"), self._slot(variable, "linear")
        l1 = self.l1_regularization_strength
        two_l2 = self._scalar(self._RULE, variable)
        grad_to_use = gradient + variable * (2.0 * self.l2_shrinkage_regularization_strength)
        new_accum = accum + math_ops.square(gradient)
        new_pow = math_ops.pow(new_accum, power)
        linear.assign_add(grad_to_use - (new_pow - math_ops.pow(accum, power)) / lr * variable)
        quadratic = new_pow / lr + two_l2
        clipped = elementwise_ops.clip_by_value(linear, -l1, l1)
        variable.assign((clipped - linear) / quadratic)
        accum.assign(new_accum)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "learning_rate_power": self.learning_rate_power,
            "initial_accumulator_value": self.initial_accumulator_value,
            "l1_regularization_strength": self.l1_regularization_strength,
            "l2_regularization_strength": self.l2_regularization_strength,
            "l2_shrinkage_regularization_strength": self.l2_shrinkage_regularization_strength,
            "beta": self.beta,
        }


def _rms(x: Any) -> Any:
    return math_ops.sqrt(core_ops.reduce_mean(math_ops.square(x)))


class Adafactor(_OpsRule):
    """Adafactor (Shazeer & Stern 2018): second moments kept factored (one row and one column
    vector per matrix) for variables of rank >= 2, relative step sizes, update clipping.
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_2_decay: float = -0.8,
        epsilon_1: float = 1e-30,
        epsilon_2: float = 1e-3,
        clip_threshold: float = 1.0,
        relative_step: bool = True,
        name: str = "Adafactor",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1 = float(epsilon_1)
        self.epsilon_2 = float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            shape = tuple(v.shape)
            if len(shape) >= 2:
                self.add_variable_from_reference(v, "r", shape=shape[:-1])
                self.add_variable_from_reference(v, "c", shape=shape[:-2] + shape[-1:])
            self.add_variable_from_reference(v, "v")

    def update_step(self, gradient: Any, variable: Variable) -> None:
        lr, t = self._lr(), self._step()
        if self.relative_step and not isinstance(self._learning_rate, LearningRateSchedule):
            lr = min(lr, 1.0 / math.sqrt(t))
        rho_t = min(lr, 1.0 / math.sqrt(t))
        alpha_t = math_ops.maximum(_rms(variable), self.epsilon_2) * rho_t
        sq = math_ops.square(gradient) + self.epsilon_1
        beta_2_t = 1.0 - t**self.beta_2_decay
        v = self._slot(variable, "v")
        if len(variable.shape) >= 2:
            r, c = self._slot(variable, "r"), self._slot(variable, "c")
            r.assign(r * beta_2_t + core_ops.reduce_mean(sq, axis=-1) * (1.0 - beta_2_t))
            c.assign(c * beta_2_t + core_ops.reduce_mean(sq, axis=-2) * (1.0 - beta_2_t))
            row = array_ops.expand_dims(r / core_ops.reduce_mean(r, axis=-1, keepdims=True), -1)
            v.assign(row * array_ops.expand_dims(c, -2))
        else:
            v.assign(v * beta_2_t + sq * (1.0 - beta_2_t))
        u_t = gradient * elementwise_ops.rsqrt(v)
        u_t_hat = u_t / math_ops.maximum(_rms(u_t) / self.clip_threshold, 1.0)
        variable.assign_sub(alpha_t * u_t_hat)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "beta_2_decay": self.beta_2_decay,
            "epsilon_1": self.epsilon_1,
            "epsilon_2": self.epsilon_2,
            "clip_threshold": self.clip_threshold,
            "relative_step": self.relative_step,
        }


class Lion(_OpsRule):
    """Lion (Chen et al. 2023, "EvoLved Sign Momentum"): the sign of an interpolated momentum.

    `w -= lr sign(beta_1 m + (1 - beta_1) g)`, then `m = beta_2 m + (1 - beta_2) g`.

    >>> import layerflow as tf
    >>> v = tf.Variable(1.0)
    >>> _ = tf.keras.optimizers.Lion(learning_rate=0.1).apply_gradients([(tf.constant(2.0), v)])
    >>> round(float(v), 4)
    0.9
    """

    def __init__(
        self,
        learning_rate: Any = 0.0001,
        beta_1: float = 0.9,
        beta_2: float = 0.99,
        name: str = "Lion",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError(
                f"Lion: `beta_1`={beta_1} must be between ]0, 1]. Otherwise, the optimizer "
                "degenerates to SignSGD."
            )
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)

    def build(self, var_list: list[Variable]) -> None:
        super().build(var_list)
        for v in var_list:
            self.add_variable_from_reference(v, "m")

    @traced_rule
    def update_step(self, gradient: Any, variable: Variable) -> None:
        lr, b1, b2 = self._scalar(self._LR, variable), self.beta_1, self.beta_2
        m = self._slot(variable, "m")
        variable.assign_sub(math_ops.sign(m * b1 + gradient * (1.0 - b1)) * lr)
        m.assign(m * b2 + gradient * (1.0 - b2))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}
