"""The `Optimizer` base class (Keras 2.11+ API): slots, learning rate, clipping, weight decay,
and the exponential moving average of the variables (`use_ema`, as tf_keras does it).

Subclasses implement `build(var_list)` (create slots with `add_variable_from_reference`) and
`update_step(gradient, variable)`, written with ops and Variable writes (`assign`,
`assign_add`, `assign_sub`). The built-in rules compute each update with one gradient-free op
of `ops/optimizer_ops.py` and write it through the Variable, so every state change is an op
plus a Variable write (what a traced `tf.function` records) and mirrored variables keep every
copy equal. Nothing here touches a backend array.

Inside `strategy.run` (a replica context), `apply_gradients` sums the gradients across replicas
and applies them once, in cross-replica context, as Keras does under a `tf.distribute` strategy.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.distribute import context as distribute_context
from layerflow._src.distribute.values import select_replica
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.function.graph import host_method, suspended
from layerflow._src.keras.optimizers.optimizer_methods import OptimizerMethods
from layerflow._src.keras.optimizers.schedules import LearningRateSchedule
from layerflow._src.ops import optimizer_ops
from layerflow._src.ops.array_ops import constant
from layerflow._src.utils import naming


def traced_rule(method: Any) -> Any:
    """Mark a rule's `_apply` or `update_step` as reading every per-step scalar from the step's
    scalars vector (never a Python float), so `apply_gradients` may be traced into a
    tf.function's program (`Optimizer._traces_as_ops`)."""
    method._lf_traced = True
    return method


class _VariableList(list):
    """A list that may also be called, so both `opt.variables` (Keras 3) and
    `opt.variables()` (TF 2.10's OptimizerV2) work."""

    def __call__(self) -> list[Any]:
        return list(self)


def _check_ema_args(name: str, momentum: Any, frequency: Any) -> None:
    if not 0 <= momentum <= 1:
        raise ValueError(
            f"{name}: ema_momentum must be in the range [0, 1], got ema_momentum={momentum}."
        )
    if frequency and (not isinstance(frequency, int) or frequency < 1):
        raise ValueError(
            f"{name}: ema_overwrite_frequency must be an integer >= 1 or None, got "
            f"ema_overwrite_frequency={frequency!r}."
        )


class Optimizer(OptimizerMethods, Trackable):
    """Base class of optimizers; subclass it with `build` and `update_step`.

    >>> import layerflow as tf
    >>> class PlainSGD(tf.keras.optimizers.Optimizer):
    ...     def __init__(self, learning_rate=0.1, name="PlainSGD", **kwargs):
    ...         super().__init__(name=name, **kwargs)
    ...         self._learning_rate = self._build_learning_rate(learning_rate)
    ...     def update_step(self, gradient, variable):
    ...         variable.assign_sub(gradient * self.learning_rate)
    >>> v = tf.Variable(1.0)
    >>> PlainSGD().apply_gradients([(tf.constant(2.0), v)]) is not None
    True
    >>> round(float(v), 4)
    0.8
    """

    def __init__(
        self,
        name: str,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        jit_compile: bool = True,
        **kwargs: Any,
    ) -> None:
        for legacy in ("lr", "decay"):
            if legacy in kwargs:
                if legacy == "lr":
                    kwargs.setdefault("learning_rate", kwargs.pop("lr"))
                elif kwargs.pop("decay"):
                    raise ValueError(
                        f"{name}: `decay` is deprecated; use a learning rate schedule such as "
                        "tf.keras.optimizers.schedules.InverseTimeDecay instead."
                    )
        kwargs.pop("learning_rate", None)
        unknown = sorted(k for k in kwargs if k not in ("is_legacy_optimizer",))
        if unknown:
            raise TypeError(f"{name}: unexpected keyword arguments {unknown}.")
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                f"{name}: at most one of clipnorm, clipvalue and global_clipnorm may be set, got "
                f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}."
            )
        for arg, val in (("clipnorm", clipnorm), ("global_clipnorm", global_clipnorm)):
            if val is not None and val <= 0:
                raise ValueError(f"{name}: {arg} must be > 0, got {val}.")
        self.name = name
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        if use_ema:
            _check_ema_args(name, ema_momentum, ema_overwrite_frequency)
        self.use_ema = use_ema
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.jit_compile = jit_compile
        with naming.name_scope(None):
            self._iterations = Variable(np.int64(0), trainable=False, name="iteration")
        self._variables: list[Variable] = [self._iterations]
        self._slots: dict[int, dict[str, Variable]] = {}
        self._scratch: dict[int, optimizer_ops.Scratch] = {}
        self._built = False
        self._known: set[int] = set()
        self._exclude_ids: set[int] = set()
        self._exclude_names: tuple[str, ...] = ()
        self._learning_rate: Any = None

    # --- learning rate --------------------------------------------------------------------
    def _build_learning_rate(self, learning_rate: Any) -> Any:
        if isinstance(learning_rate, LearningRateSchedule):
            return learning_rate
        if callable(learning_rate) and not isinstance(learning_rate, TensorLike):
            return learning_rate
        try:
            value = float(learning_rate)
        except (TypeError, ValueError):
            raise TypeError(
                f"{self.name}: learning_rate must be a float, a tensor or a "
                f"LearningRateSchedule, got {type(learning_rate).__name__}."
            ) from None
        with naming.name_scope(None):
            return Variable(np.float32(value), trainable=False, name="learning_rate")

    @property
    def learning_rate(self) -> Any:
        """The current learning rate: a float32 variable, or the schedule's value now."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return lr
        if isinstance(lr, LearningRateSchedule):
            return lr(self._iterations.read_value())
        return constant(np.asarray(lr(), dtype=np.float32))

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if isinstance(value, LearningRateSchedule) or isinstance(
            self._learning_rate, LearningRateSchedule
        ):
            if not isinstance(value, LearningRateSchedule):
                raise TypeError(
                    f"{self.name} was created with a learning rate schedule, so its learning "
                    "rate cannot be set to a number. Create the optimizer with a float to "
                    "change it by hand (or from a callback)."
                )
            self._learning_rate = value
            return
        self._learning_rate.assign(np.float32(float(value)))

    lr = learning_rate

    def _lr_value(self) -> float:
        """The learning rate as a Python float for this step (read once per step)."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return float(lr)
        if isinstance(lr, LearningRateSchedule):
            return float(np.asarray(lr(int(self._iterations))))
        return float(np.asarray(lr()))

    @property
    def iterations(self) -> Variable:
        """The number of steps applied (an int64 variable)."""
        return self._iterations

    @iterations.setter
    def iterations(self, value: Any) -> None:
        self._iterations.assign(np.int64(int(value)))

    @property
    def variables(self) -> _VariableList:
        """The optimizer's state: `iterations` then every slot, in creation order."""
        return _VariableList(self._variables)

    def _trackable_children(self) -> dict[str, Any]:
        children: dict[str, Any] = {"iterations": self._iterations}
        if isinstance(self._learning_rate, Variable):
            children["learning_rate"] = self._learning_rate
        children["slots"] = list(self._variables[1:])
        return children

    # --- slots ------------------------------------------------------------------------------
    def build(self, var_list: list[Variable]) -> None:
        """Create slots for `var_list`; subclasses call super().build(var_list) first.

        Calling it before training (e.g. before restoring a checkpoint) is fine: variables
        already built are not built again by `apply_gradients`.
        """
        self._built = True
        self._known.update(id(v) for v in var_list)
        if self.use_ema:
            for v in var_list:
                if "average" not in self._slots.get(id(v), {}):
                    self.add_variable_from_reference(v, "average", initial_value=v)

    def add_variable_from_reference(
        self,
        model_variable: Variable,
        variable_name: str,
        shape: Any = None,
        initial_value: Any = None,
    ) -> Variable:
        """A slot variable shaped like `model_variable` (zeros unless `initial_value`)."""
        ref = model_variable
        init = optimizer_ops.slot_like(ref, initial_value, shape)
        base = ref.name[:-2] if ref.name.endswith(":0") else ref.name
        with naming.name_scope(None):
            slot = Variable(
                init,
                trainable=False,
                name=f"{self.name}/{variable_name}/{base}",
            )
        self._slots.setdefault(id(ref), {})[variable_name] = slot
        self._variables.append(slot)
        return slot

    def add_variable(
        self, shape: Any, dtype: Any = None, initializer: str = "zeros", name: str | None = None
    ) -> Variable:
        value = np.zeros(
            tuple(shape), dtype=np.dtype(str(getattr(dtype, "name", dtype or "float32")))
        )
        if initializer == "ones":
            value += 1
        with naming.name_scope(None):
            v = Variable(value, trainable=False, name=name or "Variable")
        self._variables.append(v)
        return v

    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        try:
            return self._slots[id(var)][slot_name]
        except KeyError:
            have = sorted(self._slots.get(id(var), {}))
            raise KeyError(
                f"{self.name} has no slot {slot_name!r} for variable '{var.name}'; its slots "
                f"for that variable are {have}."
            ) from None

    def _build_for(self, variables: list[Variable]) -> None:
        """Build the slots of the variables never seen (the first step, or a model that grew)
        and write the checkpoint values waiting for them: once, eagerly, also when a trace
        runs this (`suspended`), never as steps of the traced program. A compiled `fit` calls
        it before its first trace, so that trace creates no variable (which, as in TF, would
        trace the function a second time)."""
        known = self._known
        with suspended():
            if len(known) < len(variables) or any(id(v) not in known for v in variables):
                new = [v for v in variables if id(v) not in known]
                self.build(new)
                self._built = True
                known.update(id(v) for v in new)
            self._run_after_build()  # checkpoint values waiting for the slots

    def _scratch_for(self, var: Variable) -> optimizer_ops.Scratch:
        """The reusable temporary of `var`'s updates (see `optimizer_ops.Scratch`)."""
        scratch = self._scratch.get(id(var))
        if scratch is None:
            scratch = self._scratch[id(var)] = optimizer_ops.Scratch()
        return scratch

    # --- applying gradients -------------------------------------------------------------------
    def exclude_from_weight_decay(
        self, var_list: Iterable[Variable] | None = None, var_names: Iterable[str] | None = None
    ) -> None:
        """Variables (or name substrings) that `weight_decay` leaves alone."""
        self._exclude_ids |= {id(v) for v in var_list or ()}
        self._exclude_names = tuple(var_names or ())

    def _clip(self, grads: list[Any]) -> list[Any]:
        """The gradients clipped as `clipvalue`, `clipnorm` or `global_clipnorm` say."""
        return optimizer_ops.clip_gradients(
            grads, self.clipvalue, self.clipnorm, self.global_clipnorm
        )

    def _decay_weights(self, variables: list[Variable], scalars: Any) -> None:
        if not self.weight_decay:
            return
        for v in variables:
            if id(v) in self._exclude_ids or any(n in v.name for n in self._exclude_names):
                continue
            v.assign(optimizer_ops.scale_by(v, scalars, self._DECAY))

    # --- the step's scalars -------------------------------------------------------------------
    # Entries of the `_step_scalars` vector; a rule's own scalars (`_rule_scalars`) follow.
    _LR, _DECAY, _EMA_OVERWRITE, _RULE = 0, 1, 2, 3

    def _rule_scalars(self, lr: float, step: int) -> list[float]:
        """A rule's per-step scalars (Adam's bias-corrected learning rate), from the learning
        rate and the 1-based number of the step being applied."""
        return []

    def _step_scalar_values(self) -> list[float]:
        lr = self._lr_value()
        step = int(self._iterations) + 1
        wd, freq = self.weight_decay, self.ema_overwrite_frequency
        overwrite = bool(self.use_ema and freq and step % freq == 0)
        decay = 1.0 - lr * wd if wd else 1.0
        return [lr, decay, float(overwrite), *self._rule_scalars(lr, step)]

    # Inside a tf.function trace this is a host step run at every call of the program, so the
    # learning rate (a callback may change it), the schedule's value at the current
    # `iterations` and the bias corrections are read each step, never frozen by the trace.
    @host_method(outputs=True)
    def _step_scalars(self) -> Any:
        """The step's scalars as one float64 vector (`optimizer_ops.step_scalars`)."""
        return optimizer_ops.step_scalars(self._step_scalar_values(), self._iterations)

    def _traces_as_ops(self) -> bool:
        """Whether `apply_gradients` may be traced into a tf.function's program: a built-in
        rule (its `_apply`, and `update_step` when it has one, marked by `traced_rule`: they
        read every per-step scalar from the `_step_scalars` tensor) whose other steps are this
        class's. Any other optimizer (a
        Python `update_step`, the op-written rules of rules_extra) runs as a host step."""
        cls = type(self)
        return (
            getattr(cls._apply, "_lf_traced", False)
            and getattr(cls.update_step, "_lf_traced", cls.update_step is Optimizer.update_step)
            and cls._clip is Optimizer._clip
            and cls._decay_weights is Optimizer._decay_weights
            and cls._ema_step is Optimizer._ema_step
            and cls._step_scalar_values is Optimizer._step_scalar_values
        )

    def apply_gradients(
        self,
        grads_and_vars: Iterable[tuple[Any, Variable]],
        name: str | None = None,
        skip_gradients_aggregation: bool = False,
        **kwargs: Any,
    ) -> Variable:
        """Apply one step of gradients; pairs whose gradient is None are skipped.

        Returns `iterations` (after the increment), as Keras does. Called inside
        `strategy.run`, the gradients are first summed across replicas (unless
        `skip_gradients_aggregation`, for gradients already all-reduced) and the update is
        applied once, in cross-replica context, so every copy of a mirrored variable agrees.

        Inside a `tf.function` trace (a compiled `fit` step) the built-in rules are traced:
        their kernels and variable writes become steps of the program, reading the step's
        scalars from a host step at every call. Other optimizers run as one host step.
        """
        if backend.flags.tracer is None:
            return self._apply_gradients(grads_and_vars, skip_gradients_aggregation)
        pairs = list(grads_and_vars)
        entry = distribute_context.top()
        # In a replica context the update meets the other replicas in an all-reduce and a
        # merge_call across threads, and a variable with several copies (MirroredVariable)
        # writes each itself: those run as a host step.
        if (
            (entry is not None and entry.replica_context is not None)
            or any(getattr(type(v), "assign", None) is not Variable.assign for _, v in pairs)
            or not self._traces_as_ops()
        ):
            return self._host_apply_gradients(pairs, name, skip_gradients_aggregation, **kwargs)
        return self._apply_gradients(pairs, skip_gradients_aggregation)

    # Updates arrays with Python values: a host step inside tf.function traces.
    @host_method(result=lambda self, *args, **kwargs: self.iterations)
    def _host_apply_gradients(
        self, grads_and_vars: Any, name: Any, skip_gradients_aggregation: bool, **kwargs: Any
    ) -> Variable:
        return self._apply_gradients(grads_and_vars, skip_gradients_aggregation)

    def _apply_gradients(self, grads_and_vars: Any, skip_gradients_aggregation: bool) -> Variable:
        pairs = list(grads_and_vars)
        entry = distribute_context.top()
        if entry is not None and entry.replica_context is not None:
            return self._apply_from_replica(
                entry.replica_context, pairs, skip_gradients_aggregation
            )
        kept_g: list[Any] = []
        kept_v: list[Variable] = []
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(
                    f"{self.name}.apply_gradients expects (gradient, tf.Variable) pairs, got a "
                    f"{type(v).__name__} in the variable position."
                )
            if g is None:
                continue
            g = optimizer_ops.as_gradient(g, v)
            if g.shape != v.shape:
                raise ValueError(
                    f"{self.name}: the gradient for variable '{v.name}' has shape "
                    f"{tuple(g.shape)} but the variable has shape {tuple(v.shape)}."
                )
            kept_g.append(g)
            kept_v.append(v)
        if not kept_v:
            names = [v.name for _, v in pairs]
            raise ValueError(
                f"No gradients provided for any variable: {names}. Check that the loss is "
                "computed from the variables inside the GradientTape."
            )
        self._build_for(kept_v)
        clipped = self._clip(kept_g)
        if backend.flags.tracer is not None:
            scalars = self._step_scalars()  # a host step: read at every call of the program
            lr: Any = scalars
        else:
            values = self._step_scalar_values()
            scalars = optimizer_ops.step_scalars(values, self._iterations)
            lr = values[self._LR]
            self._current_lr = lr
        self._decay_weights(kept_v, scalars)
        # A built-in rule reads its scalars from the vector; any other `_apply` gets the
        # learning rate as a float.
        self._apply(clipped, kept_g, kept_v, scalars if self._traces_as_ops() else lr)
        if self.use_ema:
            self._ema_step(kept_v, scalars)
        if backend.flags.tracer is not None:
            self._iterations.assign_add(1)  # a variable write of the program, not a host step
        else:
            self._iterations._update(operator.iadd, 1)
        for v in kept_v:
            if v.constraint is not None:
                v.assign(v.constraint(v))
        return self._iterations

    def _apply_from_replica(
        self, ctx: Any, pairs: list[tuple[Any, Any]], skip_aggregation: bool
    ) -> Variable:
        grads = [g for g, _ in pairs]
        variables = [v for _, v in pairs]
        if not skip_aggregation:
            grads = ctx.all_reduce("SUM", grads)

        def apply(strategy: Any, grouped: Any) -> Variable:
            # After the all-reduce every replica holds the same sum: apply the first's, once.
            return self.apply_gradients(zip(select_replica(0, grouped), variables))

        return ctx.merge_call(apply, args=(list(grads),))

    def _apply(
        self, clipped: list[Any], grads: list[Any], variables: list[Variable], lr: Any
    ) -> None:
        """Update every variable from its clipped gradient (`clipped[i]`, a tensor; `grads`
        holds the gradients before clipping). The default calls `update_step` per variable;
        the built-in rules override it (marked `_lf_traced`) and get the step's scalars
        vector as `lr`; any other override gets the learning rate as a float."""
        for g, v in zip(clipped, variables):
            self.update_step(g, v)

    # --- exponential moving average of the variables (use_ema=True) ----------------------------
    def _ema_step(self, variables: list[Variable], scalars: Any) -> None:
        """After a step: average = m * average + (1 - m) * variable, for every variable; and
        every `ema_overwrite_frequency` steps, each variable takes its average (tf_keras;
        whether this step is one is an entry of the step's scalars, read at every call)."""
        m = float(self.ema_momentum)
        averages = [self.get_slot(v, "average") for v in variables]
        for average, v in zip(averages, variables):
            average.assign(average * m + v * (1.0 - m))
        if self.ema_overwrite_frequency:
            for average, v in zip(averages, variables):
                v.assign(optimizer_ops.select_by(v, average, scalars, self._EMA_OVERWRITE))

    def finalize_variable_values(self, var_list: Iterable[Variable]) -> None:
        """Set the final values of the model's variables: with `use_ema=True`, each variable
        this optimizer has updated takes its moving average (`fit` calls this at its end; a
        custom training loop calls it itself). Without EMA it does nothing.

        >>> import layerflow as tf
        >>> opt = tf.keras.optimizers.SGD(1.0, use_ema=True, ema_momentum=0.5)
        >>> v = tf.Variable(2.0)
        >>> _ = opt.apply_gradients([(tf.constant(1.0), v)])  # v = 1.0, its average 1.5
        >>> opt.finalize_variable_values([v])
        >>> float(v)
        1.5
        """
        if not self.use_ema:
            return
        var_list = list(var_list)
        pairs = [(v, self._slots.get(id(v), {}).get("average")) for v in var_list]
        if var_list and all(average is None for _, average in pairs):
            raise ValueError(
                f"{self.name}.finalize_variable_values: none of the {len(var_list)} variables "
                f"({[v.name for v in var_list][:5]}) has a moving average in this optimizer. "
                "Call it after apply_gradients has updated them."
            )
        # A variable never updated by this optimizer has no average: its average is itself.
        for v, average in pairs:
            if average is not None:
                v.assign(average)

    def update_step(self, gradient: Any, variable: Variable) -> None:
        raise NotImplementedError(
            f"Optimizer '{type(self).__name__}' must implement update_step(gradient, variable)."
        )

    def minimize(self, loss: Any, var_list: Any, tape: GradientTape | None = None) -> Variable:
        """Compute gradients of `loss` for `var_list` and apply them.

        `loss` is a tensor (then `tape` must be the tape that recorded it) or a zero-argument
        callable; `var_list` is a list of variables or a callable returning one.
        """
        if callable(loss) and not isinstance(loss, TensorLike):
            with GradientTape() as tape:
                value = loss()
        else:
            if tape is None:
                raise ValueError(
                    f"{self.name}.minimize: `tape` is required when `loss` is a tensor; pass the "
                    "GradientTape that recorded it, or pass `loss` as a callable."
                )
            value = loss
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    # --- config ---------------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        lr = self._learning_rate
        if isinstance(lr, Variable):
            lr_conf: Any = float(lr)
        elif isinstance(lr, LearningRateSchedule):
            lr_conf = {"class_name": type(lr).__name__, "config": lr.get_config()}
        else:
            lr_conf = lr
        return {
            "name": self.name,
            "learning_rate": lr_conf,
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "clipvalue": self.clipvalue,
            "global_clipnorm": self.global_clipnorm,
            "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
            "jit_compile": self.jit_compile,
            "is_legacy_optimizer": False,
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Optimizer:
        config = dict(config)
        config.pop("is_legacy_optimizer", None)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            from layerflow._src.keras.optimizers import schedules

            config["learning_rate"] = schedules.deserialize(lr, custom_objects)
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} iterations={int(self._iterations)}>"
