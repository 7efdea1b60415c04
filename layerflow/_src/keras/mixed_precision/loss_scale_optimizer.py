"""`tf.keras.mixed_precision.LossScaleOptimizer`: dynamic loss scaling around an optimizer.

As tf_keras (LossScaleOptimizerV3): `minimize`/`compute_gradients` multiply the loss by the
loss scale (so small float16 gradients do not flush to zero) and divide the gradients by it;
custom loops call `get_scaled_loss` and `get_unscaled_gradients` themselves. With
`dynamic=True` (the default: initial scale 2**15, growth every 2000 steps), `apply_gradients`
skips a step whose gradients hold an Inf or NaN and halves the scale (never below 1); after
`dynamic_growth_steps` finite steps in a row it doubles the scale. A skipped step still counts
in `iterations`. The inner optimizer's state (slots, iterations, learning rate) is its own.

An import cycle, on purpose: `optimizers` (whose `deserialize` resolves "LossScaleOptimizer")
and this module (whose get_config/from_config (de)serialize the inner optimizer with
`optimizers`) import each other, each inside a function, when first used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.indexed_slices import IndexedSlices
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.function.graph import host_method
from layerflow._src.keras.optimizers.optimizer import Optimizer
from layerflow._src.ops import math_ops
from layerflow._src.utils import naming

_DEFAULT_INITIAL_SCALE = 2**15
_DEFAULT_GROWTH_STEPS = 2000


class _DynamicLossScaleState(Trackable):
    """The loss scale and the count of finite steps since it last changed."""

    def __init__(self, initial_loss_scale: float, growth_steps: int, multiplier: float) -> None:
        self.initial_loss_scale = float(initial_loss_scale)
        self.growth_steps = int(growth_steps)
        self.multiplier = float(multiplier)
        with naming.name_scope(None):
            self.current_loss_scale = Variable(
                np.float32(initial_loss_scale), trainable=False, name="current_loss_scale"
            )
            self.counter = Variable(np.int64(0), trainable=False, name="good_steps")

    def _trackable_children(self) -> dict[str, Any]:
        return {"current_loss_scale": self.current_loss_scale, "good_steps": self.counter}

    def update(self, finite: bool) -> None:
        scale = float(self.current_loss_scale)
        if finite:
            if int(self.counter) + 1 >= self.growth_steps:
                grown = scale * self.multiplier
                if np.isfinite(np.float32(grown)):
                    self.current_loss_scale.assign(np.float32(grown))
                self.counter.assign(np.int64(0))
            else:
                self.counter.assign_add(np.int64(1))
        else:
            self.counter.assign(np.int64(0))
            self.current_loss_scale.assign(np.float32(max(scale / self.multiplier, 1.0)))


def _all_finite(grads: list[Any]) -> bool:
    for g in grads:
        if g is None:
            continue
        values = g.values if isinstance(g, IndexedSlices) else g
        if not np.isfinite(np.asarray(values)).all():
            return False
    return True


def _multiply(g: Any, factor: Any) -> Any:
    if isinstance(g, IndexedSlices):
        return IndexedSlices(g.values * math_ops.cast(factor, g.values.dtype), g.indices,
                             g.dense_shape)  # fmt: skip
    return g * math_ops.cast(factor, g.dtype)


class LossScaleOptimizer(Optimizer):
    """An optimizer that scales the loss to keep float16 gradients from underflowing.

    >>> import layerflow as tf
    >>> opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1))
    >>> float(opt.loss_scale), opt.dynamic_growth_steps
    (32768.0, 2000)
    >>> v = tf.Variable(1.0)
    >>> with tf.GradientTape() as tape:
    ...     loss = opt.get_scaled_loss(v * v)
    >>> grads = opt.get_unscaled_gradients(tape.gradient(loss, [v]))
    >>> float(grads[0])
    2.0
    """

    def __init__(self, inner_optimizer: Any, dynamic: bool = True,
                 initial_scale: float | None = None,
                 dynamic_growth_steps: int | None = None) -> None:  # fmt: skip
        # Optimizer.__init__ is not called: the state is the inner optimizer's, read through
        # __getattr__, and the methods that change it are delegated below.
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(
                f'"inner_optimizer" must be an instance of Optimizer, but got: {inner_optimizer}.'
            )
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError(
                f"LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: "
                f"{inner_optimizer}"
            )
        if not isinstance(dynamic, bool):
            raise TypeError(
                '"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, but got: '
                f"{dynamic!r}"
            )
        if getattr(inner_optimizer, "_is_wrapped_by_loss_scale_optimizer", False):
            raise ValueError(
                '"inner_optimizer" is already wrapped by a LossScaleOptimizer. An optimizer can '
                "only be wrapped by a single LossScaleOptimizer"
            )
        d = self.__dict__
        if dynamic:
            initial_scale = _DEFAULT_INITIAL_SCALE if initial_scale is None else initial_scale
            if dynamic_growth_steps is None:
                dynamic_growth_steps = _DEFAULT_GROWTH_STEPS
            if initial_scale <= 0 or int(dynamic_growth_steps) < 1:
                raise ValueError(
                    "LossScaleOptimizer: initial_scale must be > 0 and dynamic_growth_steps >= "
                    f"1, got {initial_scale} and {dynamic_growth_steps}."
                )
            d["_loss_scale"] = _DynamicLossScaleState(initial_scale, dynamic_growth_steps, 2)
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError(
                    '"dynamic_growth_steps" must be None if "dynamic" is False, but got: '
                    f"{dynamic_growth_steps}"
                )
            d["_loss_scale"] = float(initial_scale)
        d["_optimizer"] = inner_optimizer
        inner_optimizer._is_wrapped_by_loss_scale_optimizer = True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "_optimizer" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["_optimizer"], name)

    # --- the loss scale -----------------------------------------------------------------------
    @property
    def dynamic(self) -> bool:
        return isinstance(self._loss_scale, _DynamicLossScaleState)

    @property
    def loss_scale(self) -> Any:
        """The current loss scale, a float32 scalar tensor."""
        if self.dynamic:
            return convert_to_tensor(self._loss_scale.current_loss_scale)
        return convert_to_tensor(np.float32(self._loss_scale))

    @property
    def dynamic_counter(self) -> Any:
        """The number of finite steps since the scale last changed (None when not dynamic)."""
        return self._loss_scale.counter if self.dynamic else None

    @property
    def initial_scale(self) -> float:
        return self._loss_scale.initial_loss_scale if self.dynamic else self._loss_scale

    @property
    def dynamic_growth_steps(self) -> int | None:
        return self._loss_scale.growth_steps if self.dynamic else None

    @property
    def inner_optimizer(self) -> Optimizer:
        return self._optimizer

    def get_scaled_loss(self, loss: Any) -> Any:
        """`loss` times the loss scale (a callable returning it, for a callable)."""
        if callable(loss) and not isinstance(loss, TensorLike):

            def new_loss() -> Any:
                value = loss()
                return value * math_ops.cast(self.loss_scale, value.dtype)

            return new_loss
        loss = convert_to_tensor(loss)
        return loss * math_ops.cast(self.loss_scale, loss.dtype)

    def get_unscaled_gradients(self, grads: Any) -> list[Any]:
        """`grads` divided by the loss scale (None stays None)."""
        reciprocal = 1.0 / self.loss_scale
        return [None if g is None else _multiply(g, reciprocal) for g in grads]

    # --- steps ----------------------------------------------------------------------------------
    def compute_gradients(self, loss: Any, var_list: Any, tape: GradientTape | None = None):
        """The inner optimizer's gradients of the scaled loss, unscaled."""
        if callable(loss) and not isinstance(loss, TensorLike):
            scaled = self.get_scaled_loss(loss)
        else:
            if tape is None:
                raise ValueError(
                    "LossScaleOptimizer.compute_gradients: `tape` is required when a tensor "
                    "loss is passed; pass the GradientTape that recorded it, or pass `loss` as "
                    "a callable."
                )
            with tape:
                scaled = self.get_scaled_loss(loss)
        pairs = self._optimizer.compute_gradients(scaled, var_list, tape=tape)
        grads = self.get_unscaled_gradients([g for g, _ in pairs])
        return list(zip(grads, [v for _, v in pairs]))

    def minimize(self, loss: Any, var_list: Any, tape: GradientTape | None = None) -> Variable:
        return self.apply_gradients(self.compute_gradients(loss, var_list, tape=tape))

    # Reads gradient values: a host step inside tf.function traces, as the inner one.
    @host_method(result=lambda self, *args, **kwargs: self.iterations)
    def apply_gradients(
        self,
        grads_and_vars: Any,
        name: str | None = None,
        skip_gradients_aggregation: bool = False,
        **kwargs: Any,
    ) -> Variable:
        """Apply the (unscaled) gradients unless one is not finite; update the loss scale."""
        pairs = list(grads_and_vars)
        if self.dynamic:
            finite = _all_finite([g for g, _ in pairs])
            self._loss_scale.update(finite)
            if not finite:
                self._optimizer.iterations.assign_add(np.int64(1))
                return self._optimizer.iterations
        return self._optimizer.apply_gradients(
            pairs, name=name, skip_gradients_aggregation=skip_gradients_aggregation, **kwargs
        )

    # --- the inner optimizer's state --------------------------------------------------------
    @property
    def iterations(self) -> Variable:
        return self._optimizer.iterations

    @iterations.setter
    def iterations(self, value: Any) -> None:
        self._optimizer.iterations = value

    @property
    def learning_rate(self) -> Any:
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._optimizer.learning_rate = value

    lr = learning_rate

    @property
    def variables(self) -> Any:
        return self._optimizer.variables

    @property
    def name(self) -> str:
        return self._optimizer.name

    def _trackable_children(self) -> dict[str, Any]:
        children = dict(self._optimizer._trackable_children())
        if self.dynamic:
            children["loss_scale"] = self._loss_scale
        return children

    def get_config(self) -> dict[str, Any]:
        from layerflow._src.keras import optimizers

        return {
            "inner_optimizer": optimizers.serialize(self._optimizer),
            "dynamic": self.dynamic,
            "initial_scale": self.initial_scale,
            "dynamic_growth_steps": self.dynamic_growth_steps,
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> LossScaleOptimizer:
        from layerflow._src.keras import optimizers

        config = dict(config)
        config.pop("is_legacy_optimizer", None)  # (Keras 2's HDF5 files mark optimizers)
        inner = config.pop("inner_optimizer")
        if not isinstance(inner, Optimizer):
            inner = optimizers.deserialize(inner, custom_objects)
        return cls(inner, **config)

    def __repr__(self) -> str:
        return f"<LossScaleOptimizer inner={self._optimizer!r} loss_scale={float(self.loss_scale)}>"


def _delegate(name: str) -> Any:
    def method(self: LossScaleOptimizer, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._optimizer, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"The inner optimizer's `{name}`."
    return method


for _name in ("build", "finalize_variable_values", "set_weights", "get_weights",
              "save_own_variables", "load_own_variables", "add_variable",
              "add_variable_from_reference", "get_slot", "exclude_from_weight_decay",
              "aggregate_gradients", "_run_after_build", "_call_after_build",
              "_restore_on_create"):  # fmt: skip
    if hasattr(Optimizer, _name):
        setattr(LossScaleOptimizer, _name, _delegate(_name))
del _name
