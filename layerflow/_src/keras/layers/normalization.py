"""BatchNormalization: normalize with batch statistics in training, moving ones in inference."""

from __future__ import annotations

import logging
import math
from typing import Any

from layerflow._src.autodiff.custom_gradient import custom_gradient
from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.distribute import distribute_lib
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import VariableAggregation
from layerflow._src.keras import constraints, initializers, regularizers
from layerflow._src.keras.engine import dtype_policy
from layerflow._src.keras.engine.arg_checks import check_axis
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, math_ops, nn_ops

__all__ = ["BatchNormalization"]

_log = logging.getLogger("layerflow")


class BatchNormalization(Layer):
    """`gamma * (x - mean) / sqrt(var + epsilon) + beta` over every axis but `axis`.

    With `training=True` (as `fit` calls it) the batch's mean and (biased) variance are used and
    the moving statistics, non-trainable weights, move towards them:
    `moving = moving * momentum + batch * (1 - momentum)`. Otherwise (inference, or a frozen
    layer with `trainable=False`, as in Keras 2) the moving statistics are used.

    `synchronized=True`: inside `strategy.run` the batch statistics are those of the global
    batch, all-reduced across the replicas (differentiably: the gradient is all-reduced too), so
    every replica normalizes as one device would over the whole batch. `adjustment(shape)`
    returns `(scale, bias)` applied to the normalized values before gamma and beta, in training
    only (tf_keras).

    >>> import layerflow as tf
    >>> bn = tf.keras.layers.BatchNormalization()
    >>> y = bn(tf.constant([[1.0], [3.0]]), training=True)
    >>> [round(float(v), 4) for v in y[:, 0]]  # (x - 2) / sqrt(1 + epsilon), epsilon = 0.001
    [-0.9995, 0.9995]
    >>> [w.name for w in bn.non_trainable_weights]
    ['batch_normalization/moving_mean:0', 'batch_normalization/moving_variance:0']
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)

    def __init__(
        self,
        axis: Any = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        moving_mean_initializer: Any = "zeros",
        moving_variance_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        synchronized: bool = False,
        adjustment: Any = None,
        **kwargs: Any,
    ) -> None:
        # Performance and renormalization flags of tf_keras; fused only picks a kernel.
        fused = kwargs.pop("fused", None)
        if synchronized and fused:
            raise ValueError(
                "BatchNormalization: fused=True is not supported when synchronized=True; "
                "leave fused unset."
            )
        for legacy in ("renorm", "renorm_clipping", "renorm_momentum", "virtual_batch_size"):
            value = kwargs.pop(legacy, None)
            if legacy == "renorm" and value:
                raise ValueError("BatchNormalization: renorm=True is not supported.")
            if legacy == "virtual_batch_size" and value:
                raise ValueError("BatchNormalization: virtual_batch_size is not supported.")
        if adjustment is not None and not callable(adjustment):
            raise TypeError(
                "BatchNormalization: adjustment must be a function of the input shape returning "
                f"(scale, bias), got {type(adjustment).__name__}."
            )
        super().__init__(**kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNormalization: momentum must be in [0, 1], got {momentum}.")
        if epsilon <= 0:
            raise ValueError(f"BatchNormalization: epsilon must be > 0, got {epsilon}.")
        self.axis = check_axis(axis, "axis", f"BatchNormalization '{self.name}'")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        set_weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        set_weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.synchronized = synchronized
        self.adjustment = adjustment
        self.supports_masking = True

    def _axes(self, ndim: int) -> list[int]:
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        out = []
        for a in axes:
            if not -ndim <= a < ndim:
                raise ValueError(
                    f"BatchNormalization '{self.name}': axis {a} is out of range for inputs of "
                    f"rank {ndim}."
                )
            out.append(a % ndim)
        return sorted(out)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.rank is None:
            raise ValueError(f"BatchNormalization '{self.name}' needs inputs of known rank.")
        axes = self._axes(shape.rank)
        dims = [shape[a] for a in axes]
        if any(d is None for d in dims):
            raise ValueError(
                f"BatchNormalization '{self.name}': the normalized axis {self.axis} of the inputs "
                f"must have a known size, got shape {shape}."
            )
        param = dims if len(dims) > 1 else [dims[0]]
        self._param_axes = axes
        self.gamma = (
            self.add_weight(
                "gamma",
                shape=param,
                initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer,
                constraint=self.gamma_constraint,
            )
            if self.scale
            else None
        )
        self.beta = (
            self.add_weight(
                "beta",
                shape=param,
                initializer=self.beta_initializer,
                regularizer=self.beta_regularizer,
                constraint=self.beta_constraint,
            )
            if self.center
            else None
        )
        # Under a strategy each replica's update is averaged into every copy (Keras's
        # aggregation=MEAN for the moving statistics), so the copies never drift apart.
        self.moving_mean = self.add_weight(
            "moving_mean",
            shape=param,
            trainable=False,
            initializer=self.moving_mean_initializer,
            aggregation=VariableAggregation.MEAN,
        )
        self.moving_variance = self.add_weight(
            "moving_variance",
            shape=param,
            trainable=False,
            initializer=self.moving_variance_initializer,
            aggregation=VariableAggregation.MEAN,
        )
        self.input_spec = InputSpec(ndim=shape.rank, axes={a: shape[a] for a in axes})

    def _broadcast_shape(self, ndim: int, shape: tuple[int, ...]) -> tuple[int, ...] | None:
        axes = self._param_axes
        if axes == [ndim - 1]:
            return None  # a trailing channel axis broadcasts as it is
        out = [1] * ndim
        for a, d in zip(axes, shape if len(axes) > 1 else (shape[0],)):
            out[a] = d
        return tuple(out)

    def call(self, inputs: Any, training: Any = None) -> Any:
        if inputs.dtype.name in ("float16", "bfloat16"):
            # As tf_keras: 16-bit inputs (a mixed policy) are normalized in float32, with the
            # float32 variables as they are, and the result cast back.
            out = dtype_policy.run_autocast(
                None, self.call, math_ops.cast(inputs, "float32"), training
            )
            return math_ops.cast(out, inputs.dtype)
        ndim = inputs.ndim
        reduce_axes = [i for i in range(ndim) if i not in self._param_axes]
        bshape = self._broadcast_shape(ndim, tuple(self.moving_mean.shape))

        def shaped(v: Any) -> Any:
            return v if bshape is None else math_ops.reshape(v, bshape)

        scale = None if self.gamma is None else shaped(self.gamma)
        offset = None if self.beta is None else shaped(self.beta)
        if bool(training) and self.trainable:
            mean, var = self._moments(inputs, reduce_axes, keepdims=bshape is not None)
            self._update_moving(mean, var)
            if self.adjustment is not None:
                # (x_hat * adj_scale + adj_bias) * gamma + beta, composed as tf_keras does.
                adj_scale, adj_bias = self.adjustment(array_ops.shape(inputs))
                gamma = scale
                scale = adj_scale if gamma is None else adj_scale * gamma
                shift = adj_bias if gamma is None else adj_bias * gamma
                offset = shift if offset is None else shift + offset
        else:
            mean, var = shaped(self.moving_mean), shaped(self.moving_variance)
        out = (inputs - mean) / math_ops.sqrt(var + self.epsilon)
        if scale is not None:
            out = out * scale
        if offset is not None:
            out = out + offset
        return out

    def _moments(self, inputs: Any, axes: list[int], keepdims: bool) -> tuple[Any, Any]:
        ctx = distribute_lib.get_replica_context() if self.synchronized else None
        if ctx is None or ctx.num_replicas_in_sync == 1:
            return nn_ops.moments(inputs, axes, keepdims=keepdims)
        return _global_moments(ctx, inputs, axes, keepdims)

    def _update_moving(self, mean: Any, var: Any) -> None:
        # Moving statistics are state, not part of the differentiated computation: ops with
        # recording paused, written through the Variable (every copy of a mirrored one).
        m = self.momentum
        with stop_recording_all():
            for moving, batch in ((self.moving_mean, mean), (self.moving_variance, var)):
                batch = math_ops.reshape(batch, tuple(moving.shape))
                moving.assign(moving * m + (1.0 - m) * batch)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "axis": self.axis,
                "momentum": self.momentum,
                "epsilon": self.epsilon,
                "center": self.center,
                "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(
                    self.moving_variance_initializer
                ),
                "beta_regularizer": _maybe(regularizers.serialize, self.beta_regularizer),
                "gamma_regularizer": _maybe(regularizers.serialize, self.gamma_regularizer),
                "beta_constraint": _maybe(constraints.serialize, self.beta_constraint),
                "gamma_constraint": _maybe(constraints.serialize, self.gamma_constraint),
                "synchronized": self.synchronized,
            }
        )
        if self.adjustment is not None:
            _log.warning(
                "The adjustment function of BatchNormalization '%s' cannot be serialized and "
                "is left out of its config (as tf_keras does).",
                self.name,
            )
        return config


def _replica_sum(ctx: Any, value: Any) -> Any:
    """`ctx.all_reduce("SUM", value)` whose gradient is the all-reduced gradient (as in TF):
    every replica's loss depends on every replica's inputs through the global statistics."""

    @custom_gradient
    def all_sum(x: Any) -> Any:
        return ctx.all_reduce("SUM", x), lambda dy: ctx.all_reduce("SUM", dy)

    return all_sum(value)


def _global_moments(ctx: Any, x: Any, axes: list[int], keepdims: bool) -> tuple[Any, Any]:
    """Mean and variance over `axes` of the batch of all replicas. Two all-reduces (sum, then
    the sum of squared deviations from the global mean) keep the variance as accurate as one
    device's, where tf_keras's one-pass E[x^2] - E[x]^2 loses digits."""
    work = x if x.dtype.name != "float16" else math_ops.cast(x, "float32")
    local_count = math.prod(int(work.shape[a]) for a in axes)
    count = ctx.all_reduce("SUM", array_ops.constant(float(local_count), work.dtype))
    mean = _replica_sum(ctx, math_ops.reduce_sum(work, axes, keepdims=True)) / count
    deviations = math_ops.square(work - array_ops.stop_gradient(mean))
    var = _replica_sum(ctx, math_ops.reduce_sum(deviations, axes, keepdims=True)) / count
    if not keepdims:
        kept = [d for i, d in enumerate(work.shape) if i not in axes]
        mean, var = math_ops.reshape(mean, kept), math_ops.reshape(var, kept)
    if work is not x:
        mean, var = math_ops.cast(mean, "float16"), math_ops.cast(var, "float16")
    return mean, var


def _maybe(fn: Any, value: Any) -> Any:
    return None if value is None else fn(value)
