"""`Normalization`: feature-wise `(x - mean) / sqrt(var)` with the statistics given or computed
by `adapt` (tf_keras 2 semantics: per-batch moments combined exactly, batches of 32 by default).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.engine.backend_config import epsilon
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer, host, listify
from layerflow._src.ops import array_ops, math_ops

__all__ = ["Normalization"]


class Normalization(PreprocessingLayer):
    """Shift and scale inputs to mean 0 and variance 1 along `axis` (the axes kept).

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.Normalization(mean=3.0, variance=2.0)
    >>> layer([[1.0], [3.0]]).numpy().round(4)
    array([[-1.4142],
           [ 0.    ]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True

    def __init__(self, axis: Any = -1, mean: Any = None, variance: Any = None,
                 invert: bool = False, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        else:
            axis = tuple(axis)
        if any(isinstance(a, bool) or not isinstance(a, int | np.integer) for a in axis):
            raise TypeError(f"Normalization: axis must be an int, a tuple of ints or None, got "
                            f"{axis!r}.")  # fmt: skip
        self.axis = tuple(int(a) for a in axis)
        for what, value in (("mean", mean), ("variance", variance)):
            if isinstance(value, Variable):
                raise ValueError(
                    f"Normalization does not support passing a Variable for the `{what}` init "
                    "arg; pass its value (`v.numpy()`)."
                )
        if (mean is not None) != (variance is not None):
            raise ValueError(
                "Normalization: when setting values directly, both `mean` and `variance` must "
                f"be set. Got mean: {mean} and variance: {variance}."
            )
        self.input_mean = mean
        self.input_variance = variance
        self.invert = bool(invert)

    # --- state ---------------------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        if (
            isinstance(input_shape, list | tuple)
            and input_shape
            and all(isinstance(s, TensorShape) for s in input_shape)
        ):
            raise ValueError(
                f"Normalization '{self.name}' only accepts a single input. If you are passing a "
                "Python list or tuple as a single input, convert it to a NumPy array or tensor."
            )
        shape = TensorShape(input_shape).as_list()
        ndim = len(shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(
                f"Normalization '{self.name}': all `axis` values must be in the range "
                f"[-ndim, ndim). Found ndim: {ndim}, axis: {self.axis}."
            )
        keep = sorted(a if a >= 0 else a + ndim for a in self.axis)
        for d in keep:
            if shape[d] is None:
                raise ValueError(
                    f"Normalization '{self.name}': all `axis` values to be kept must have known "
                    f"shape. Got axis: {self.axis}, input shape: {shape}, with unknown axis at "
                    f"index: {d}."
                )
        self._keep_axis = keep
        self._reduce_axis = [d for d in range(ndim) if d not in keep]
        self._broadcast_shape = [shape[d] if d in keep else 1 for d in range(ndim)]
        mv_shape = tuple(shape[d] for d in keep)
        np_dtype = dtypes.as_dtype(self.compute_dtype).np
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(
                name="mean", shape=mv_shape, dtype=self.compute_dtype, initializer="zeros",
                trainable=False,
            )  # fmt: skip
            self.adapt_variance = self.add_weight(
                name="variance", shape=mv_shape, dtype=self.compute_dtype, initializer="ones",
                trainable=False,
            )  # fmt: skip
            self.count = self.add_weight(
                name="count", shape=(), dtype="int64", initializer="zeros", trainable=False
            )
        else:
            try:
                mean = np.asarray(host(self.input_mean), np.float64) * np.ones(mv_shape)
                var = np.asarray(host(self.input_variance), np.float64) * np.ones(mv_shape)
            except ValueError as err:
                raise ValueError(
                    f"Normalization '{self.name}': mean and variance must broadcast to the "
                    f"kept axes' shape {mv_shape}, got mean {self.input_mean!r} and variance "
                    f"{self.input_variance!r}."
                ) from err
            self._const_mean = array_ops.constant(
                mean.reshape(self._broadcast_shape).astype(np_dtype)
            )
            self._const_variance = array_ops.constant(
                var.reshape(self._broadcast_shape).astype(np_dtype)
            )
        self.built = True

    @property
    def mean(self) -> Any:
        """The mean, broadcastable against the input (after build)."""
        if self.input_mean is not None:
            return self._const_mean
        return array_ops.reshape(self.adapt_mean, self._broadcast_shape)

    @property
    def variance(self) -> Any:
        """The variance, broadcastable against the input (after build)."""
        if self.input_mean is not None:
            return self._const_variance
        return array_ops.reshape(self.adapt_variance, self._broadcast_shape)

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Compute the mean and variance of `data` along the kept axes (see the class doc)."""
        if self.input_mean is not None:
            raise ValueError(
                f"Cannot `adapt` a Normalization layer ('{self.name}') that is initialized with "
                f"static `mean` and `variance`, you passed mean {self.input_mean} and variance "
                f"{self.input_variance}."
            )
        super().adapt(data, batch_size=batch_size, steps=steps)

    def reset_state(self) -> None:
        if self.input_mean is not None or not self.built:
            return
        self.adapt_mean.assign(np.zeros(self.adapt_mean.shape, self.adapt_mean.dtype.np))
        self.adapt_variance.assign(np.ones(self.adapt_variance.shape, self.adapt_mean.dtype.np))
        self.count.assign(np.int64(0))

    def update_state(self, data: Any) -> None:
        if self.input_mean is not None:
            raise ValueError(
                f"Cannot `adapt` a Normalization layer ('{self.name}') that is initialized with "
                "static `mean` and `variance`."
            )
        if not self.built:
            raise RuntimeError(f"Normalization '{self.name}': build before `update_state`.")
        np_dtype = self.adapt_mean.dtype.np
        x = np.asarray(host(data)).astype(np_dtype)
        if x.ndim != len(self._broadcast_shape) or any(
            x.shape[d] != self._broadcast_shape[d] for d in self._keep_axis
        ):
            raise ValueError(
                f"Normalization '{self.name}' was built for inputs of shape "
                f"{self._build_shape_text()} but adapt got a batch of shape {x.shape}."
            )
        red = tuple(self._reduce_axis)
        # tf.nn.moments: the mean, then the mean squared difference from it.
        b_mean = x.mean(axis=red, dtype=np_dtype) if red else x
        b_var = (
            np.square(x - b_mean.reshape(self._broadcast_shape)).mean(axis=red, dtype=np_dtype)
            if red
            else np.zeros_like(x)
        )
        b_count = int(np.prod([x.shape[d] for d in red])) if red else 1
        total = b_count + int(self.count.numpy())
        w_b = np_dtype.type(np_dtype.type(b_count) / np_dtype.type(total))
        w_e = np_dtype.type(1.0) - w_b
        old_mean = np.asarray(self.adapt_mean.numpy())
        old_var = np.asarray(self.adapt_variance.numpy())
        t_mean = old_mean * w_e + b_mean * w_b
        t_var = (old_var + (old_mean - t_mean) ** 2) * w_e + (b_var + (b_mean - t_mean) ** 2) * w_b
        self.adapt_mean.assign(t_mean.astype(np_dtype))
        self.adapt_variance.assign(t_var.astype(np_dtype))
        self.count.assign(np.int64(total))

    def _build_shape_text(self) -> str:
        return str([d if d in self._keep_axis else None for d in range(len(self._broadcast_shape))])

    # --- computing -------------------------------------------------------------------------------
    def call(self, inputs: Any) -> Any:
        x = math_ops.cast(inputs, self.compute_dtype)
        scale = math_ops.maximum(math_ops.sqrt(self.variance), epsilon())
        if self.invert:
            return self.mean + x * scale
        return (x - self.mean) / scale

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "axis": self.axis,
            "invert": self.invert,
            "mean": listify(self.input_mean),
            "variance": listify(self.input_variance),
        }
