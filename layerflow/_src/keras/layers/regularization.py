"""Dropout: zero a random fraction of inputs while training, scale the rest to keep the sum."""

from __future__ import annotations

import numbers
from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.arg_checks import check_shape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.ops import array_ops, math_ops, random_ops


class Dropout(Layer):
    """Set inputs to 0 with probability `rate` when training; scale the rest by 1 / (1 - rate).

    Outside training (`training` falsy, the default for a direct call) it is the identity.

    >>> import layerflow as tf
    >>> tf.keras.layers.Dropout(0.5)(tf.ones((1, 4))).numpy()
    array([[1., 1., 1., 1.]], dtype=float32)
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if not isinstance(rate, numbers.Real) or not 0 <= rate <= 1:
            raise ValueError(
                f"Dropout: rate must be a number in [0, 1] (the fraction of inputs to drop), "
                f"got {rate!r}."
            )
        self.supports_masking = True
        self.rate = rate
        self.noise_shape = (
            None
            if noise_shape is None
            else check_shape(noise_shape, "noise_shape", f"Dropout '{self.name}'", minimum=1)
        )
        self.seed = seed

    def _noise_shape(self, inputs: Any) -> tuple[int, ...]:
        shape = tuple(inputs.shape)
        if self.noise_shape is None:
            return shape
        if len(self.noise_shape) != len(shape):
            raise ValueError(
                f"Dropout '{self.name}': noise_shape {self.noise_shape} must have one entry per "
                f"input dimension; the input has shape {shape}."
            )
        out = []
        for want, got in zip(self.noise_shape, shape):
            d = got if want is None else int(want)
            if d not in (1, got):
                raise ValueError(
                    f"Dropout '{self.name}': noise_shape {self.noise_shape} does not broadcast to "
                    f"the input shape {shape}; each entry must be 1, None or the input's size."
                )
            out.append(d)
        return tuple(out)

    def call(self, inputs: Any, training: Any = None) -> Any:
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return math_ops.zeros_like(inputs)
        dt = inputs.dtype
        u = random_ops.uniform(self._noise_shape(inputs), dtype=dt, seed=self.seed)
        keep = math_ops.cast(math_ops.greater_equal(u, array_ops.constant(self.rate, dtype=dt)), dt)
        return inputs * (keep * array_ops.constant(1.0 / (1.0 - self.rate), dtype=dt))

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        noise = None if self.noise_shape is None else list(self.noise_shape)
        return {**super().get_config(), "rate": self.rate, "noise_shape": noise, "seed": self.seed}
