"""Noise and regularization layers active only in training: GaussianNoise, GaussianDropout,
AlphaDropout, SpatialDropout1D/2D/3D; and ActivityRegularization (Keras 2 semantics).

Outside training (`training` falsy, the default for a direct call) each is the identity.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import regularizers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.convolutional import normalize_data_format
from layerflow._src.keras.layers.regularization import Dropout
from layerflow._src.ops import array_ops, math_ops, random_ops

__all__ = [
    "ActivityRegularization",
    "AlphaDropout",
    "GaussianDropout",
    "GaussianNoise",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
]


def _rate(owner: str, rate: Any) -> float:
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate <= 1:
        raise ValueError(f"{owner}: rate must be a number in [0, 1], got {rate!r}.")
    return rate


class _Identity(Layer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)


class GaussianNoise(_Identity):
    """Add zero-mean Gaussian noise of standard deviation `stddev` while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.GaussianNoise(0.5)(tf.ones((1, 2))).numpy()  # not training
    array([[1., 1.]], dtype=float32)
    """

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(stddev, bool) or not isinstance(stddev, numbers.Real) or stddev < 0:
            raise ValueError(f"GaussianNoise: stddev must be a number >= 0, got {stddev!r}.")
        self.stddev = stddev
        self.seed = seed

    def call(self, inputs: Any, training: Any = None) -> Any:
        if not training:
            return inputs
        noise = random_ops.normal(
            tuple(inputs.shape), 0.0, self.stddev, dtype=inputs.dtype, seed=self.seed
        )
        return inputs + noise

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_Identity):
    """Multiply by Gaussian noise of mean 1 and stddev `sqrt(rate / (1 - rate))` while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.GaussianDropout(0.2)(tf.ones((1, 2))).numpy()
    array([[1., 1.]], dtype=float32)
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = _rate("GaussianDropout", rate)
        self.seed = seed

    def call(self, inputs: Any, training: Any = None) -> Any:
        if not training or not 0 < self.rate < 1:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = random_ops.normal(
            tuple(inputs.shape), 1.0, stddev, dtype=inputs.dtype, seed=self.seed
        )
        return inputs * noise

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(_Identity):
    """Dropout that keeps SELU's self-normalization: dropped units become SELU's negative
    saturation value, then an affine map restores the mean and variance (Klambauer et al.).

    >>> import layerflow as tf
    >>> tf.keras.layers.AlphaDropout(0.2)(tf.ones((1, 2))).numpy()
    array([[1., 1.]], dtype=float32)
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.rate = _rate("AlphaDropout", rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed

    def call(self, inputs: Any, training: Any = None) -> Any:
        if not training or not 0 < self.rate < 1:
            return inputs
        dt = inputs.dtype
        shape = tuple(inputs.shape)
        if self.noise_shape is not None:
            shape = tuple(s if n is None else int(n) for n, s in zip(self.noise_shape, shape))
        rate = self.rate
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        u = random_ops.uniform(shape, dtype=dt, seed=self.seed)
        kept = math_ops.cast(math_ops.greater_equal(u, array_ops.constant(rate, dtype=dt)), dt)
        a = ((1 - rate) * (1 + rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * rate
        x = inputs * kept + array_ops.constant(alpha_p, dtype=dt) * (1.0 - kept)
        return array_ops.constant(a, dtype=dt) * x + array_ops.constant(b, dtype=dt)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one keep/drop decision per sample and channel."""

    rank = 1

    def __init__(self, rate: float, data_format: Any = None, noise_shape: Any = None,
                 seed: int | None = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = normalize_data_format(data_format, type(self).__name__)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _noise_shape(self, inputs: Any) -> tuple[int, ...]:
        shape = tuple(inputs.shape)
        ones = (1,) * self.rank
        if self.data_format == "channels_first":
            return (shape[0], shape[1]) + ones
        return (shape[0],) + ones + (shape[-1],)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drop whole channels of `(batch, steps, channels)` inputs while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.SpatialDropout1D(0.5)(tf.ones((1, 2, 3))).shape
    TensorShape([1, 2, 3])
    """

    rank = 1

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(rate, None, noise_shape, seed, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Drop whole 2-D feature maps of 4-D inputs while training."""

    rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Drop whole 3-D feature maps of 5-D inputs while training."""

    rank = 3


class ActivityRegularization(_Identity):
    """The identity, adding `l1 * sum|x| + l2 * sum x^2` (divided by the batch size) to the
    layer's losses.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.ActivityRegularization(l1=0.1)
    >>> _ = layer(tf.constant([[1.0, -3.0]])); float(layer.losses[0])
    0.4000000059604645
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        kwargs.pop("activity_regularizer", None)
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1 = l1
        self.l2 = l2

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
