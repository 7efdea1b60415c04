"""Random image augmentation layers, active only in training (tf_keras 2 semantics): RandomFlip,
RandomRotation, RandomZoom, RandomTranslation, RandomCrop, RandomContrast, RandomBrightness,
RandomHeight, RandomWidth. Called directly, `training` defaults to True as in tf_keras;
`predict`/`evaluate` and `training=False` give the identity (RandomCrop: a centre crop).

Random parameters are drawn on the host: from the layer's own generator when `seed` is set
(two layers with one seed augment alike), else from the global stream (`tf.random.set_seed`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.layers.preprocessing.image_preprocessing import (
    check_image,
    check_interpolation,
    check_size,
    smart_resize,
)
from layerflow._src.ops import array_ops, image_ops, manip_ops, math_ops, random_ops
from layerflow._src.ops.elementwise_ops import clip_by_value
from layerflow._src.ops.image_transform_ops import FILL_MODES, transform

__all__ = [
    "RandomBrightness",
    "RandomContrast",
    "RandomCrop",
    "RandomFlip",
    "RandomHeight",
    "RandomRotation",
    "RandomTranslation",
    "RandomWidth",
    "RandomZoom",
]


def _bounds(owner: str, what: str, factor: Any, symmetric: bool = True) -> tuple[float, float]:
    if isinstance(factor, tuple | list):
        if len(factor) != 2:
            raise ValueError(f"{owner}: `{what}` must be a number or a pair, got {factor!r}.")
        lower, upper = float(factor[0]), float(factor[1])
    elif isinstance(factor, int | float) and not isinstance(factor, bool):
        lower, upper = (-float(factor), float(factor)) if symmetric else (float(factor),) * 2
    else:
        raise ValueError(f"{owner}: `{what}` must be a number or a pair, got {factor!r}.")
    if upper < lower:
        raise ValueError(
            f"{owner}: `{what}` cannot have upper bound less than lower bound, got {factor!r}."
        )
    return lower, upper


class _RandomLayer(Layer):
    """The seed and the generator of a random augmentation layer."""

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        kwargs.pop("force_generator", None)  # tf_keras's generator switch: one generator here
        super().__init__(**kwargs)
        self.seed = seed
        self.__dict__["_rng"] = None if seed is None else np.random.default_rng(seed)

    def _generator(self) -> np.random.Generator:
        return self._rng if self._rng is not None else random_ops.generator(None)

    def _images(self, inputs: Any) -> tuple[Any, bool]:
        check_image(self, inputs)
        x = math_ops.cast(inputs, self.compute_dtype)
        if len(x.shape) == 3:
            return array_ops.expand_dims(x, 0), True
        return x, False

    @staticmethod
    def _restore(x: Any, unbatched: bool) -> Any:
        return array_ops.squeeze(x, [0]) if unbatched else x

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "seed": self.seed}


class _AffineLayer(_RandomLayer):
    def __init__(self, fill_mode: str, interpolation: str, fill_value: float, seed: Any,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(seed=seed, **kwargs)
        name = type(self).__name__
        if fill_mode not in FILL_MODES:
            raise NotImplementedError(
                f"{name}: unknown `fill_mode` {fill_mode}. Only `reflect`, `wrap`, `constant` "
                "and `nearest` are supported."
            )
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                f"{name}: unknown `interpolation` {interpolation}. Only `nearest` and "
                "`bilinear` are supported."
            )
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value

    def _transforms(self, n: int, h: int, w: int) -> np.ndarray:
        raise NotImplementedError

    def call(self, inputs: Any, training: Any = True) -> Any:
        if not training:
            return inputs
        x, unbatched = self._images(inputs)
        n, h, w = (int(d) for d in x.shape[:3])
        out = transform(x, self._transforms(n, h, w), self.interpolation, self.fill_mode,
                        self.fill_value)  # fmt: skip
        return self._restore(out, unbatched)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "fill_mode": self.fill_mode,
            "fill_value": self.fill_value,
            "interpolation": self.interpolation,
        }


class RandomFlip(_RandomLayer):
    """Flip each image horizontally and/or vertically with probability 1/2 while training.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.RandomFlip("horizontal", seed=1)
    >>> layer(tf.ones((2, 3, 3, 1)), training=False).shape
    TensorShape([2, 3, 3, 1])
    """

    def __init__(self, mode: str = "horizontal_and_vertical", seed: int | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(seed=seed, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(
                f"RandomFlip layer {self.name} received an unknown mode argument {mode}; "
                "expected 'horizontal', 'vertical' or 'horizontal_and_vertical'."
            )
        self.mode = mode
        self.horizontal = mode != "vertical"
        self.vertical = mode != "horizontal"
        self.auto_vectorize = False

    def call(self, inputs: Any, training: Any = True) -> Any:
        if not training:
            return inputs
        x, unbatched = self._images(inputs)
        n = int(x.shape[0])
        rng = self._generator()
        if self.horizontal:
            x = self._flip(x, rng.uniform(size=n) < 0.5, 2)
        if self.vertical:
            x = self._flip(x, rng.uniform(size=n) < 0.5, 1)
        return self._restore(x, unbatched)

    @staticmethod
    def _flip(x: Any, which: np.ndarray, axis: int) -> Any:
        if not which.any():
            return x
        flipped = manip_ops.reverse(x, [axis])
        mask = array_ops.constant(which.reshape(-1, 1, 1, 1))
        return math_ops.where(mask, flipped, x)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "mode": self.mode}


class RandomTranslation(_AffineLayer):
    """Translate each image by a random fraction of its height and width while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomTranslation(0.2, 0.2)(tf.ones((1, 4, 4, 1))).shape
    TensorShape([1, 4, 4, 1])
    """

    def __init__(self, height_factor: Any, width_factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(fill_mode, interpolation, fill_value, seed, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self.height_lower, self.height_upper = _bounds("RandomTranslation", "height_factor",
                                                       height_factor)  # fmt: skip
        self.width_lower, self.width_upper = _bounds("RandomTranslation", "width_factor",
                                                     width_factor)  # fmt: skip
        for v in (self.height_lower, self.height_upper, self.width_lower, self.width_upper):
            if abs(v) > 1.0:
                raise ValueError(
                    "RandomTranslation: `height_factor` and `width_factor` must have values "
                    f"between [-1, 1], got {height_factor} and {width_factor}."
                )

    def _transforms(self, n: int, h: int, w: int) -> np.ndarray:
        rng = self._generator()
        dy = rng.uniform(self.height_lower, self.height_upper, n) * h
        dx = rng.uniform(self.width_lower, self.width_upper, n) * w
        t = np.zeros((n, 8), np.float32)
        t[:, 0] = t[:, 4] = 1
        t[:, 2], t[:, 5] = -dx, -dy
        return t

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}  # fmt: skip


class RandomRotation(_AffineLayer):
    """Rotate each image by a random angle, `factor` in fractions of 2 pi, while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomRotation(0.1)(tf.ones((1, 4, 4, 1))).shape
    TensorShape([1, 4, 4, 1])
    """

    def __init__(self, factor: Any, fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(fill_mode, interpolation, fill_value, seed, **kwargs)
        self.factor = factor
        self.lower, self.upper = _bounds("RandomRotation", "factor", factor)

    def _transforms(self, n: int, h: int, w: int) -> np.ndarray:
        angles = self._generator().uniform(self.lower * 2 * math.pi, self.upper * 2 * math.pi, n)
        cos, sin = np.cos(angles), np.sin(angles)
        x_off = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
        y_off = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
        zero = np.zeros(n)
        return np.stack([cos, -sin, x_off, sin, cos, y_off, zero, zero], 1).astype(np.float32)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_AffineLayer):
    """Zoom each image by a random factor while training (`height_factor=-0.2`: zoom in up to
    20%; positive values zoom out).

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomZoom(0.2)(tf.ones((1, 4, 4, 1))).shape
    TensorShape([1, 4, 4, 1])
    """

    def __init__(self, height_factor: Any, width_factor: Any = None, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(fill_mode, interpolation, fill_value, seed, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self.height_lower, self.height_upper = _bounds("RandomZoom", "height_factor",
                                                       height_factor)  # fmt: skip
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError(
                "RandomZoom: `height_factor` must have values between [-1, 1], got "
                f"{height_factor}."
            )
        if width_factor is not None:
            self.width_lower, self.width_upper = _bounds("RandomZoom", "width_factor",
                                                         width_factor)  # fmt: skip
            if self.width_lower < -1.0 or self.width_upper < -1.0:
                raise ValueError(
                    f"RandomZoom: `width_factor` must have values larger than -1, got "
                    f"{width_factor}."
                )

    def _transforms(self, n: int, h: int, w: int) -> np.ndarray:
        rng = self._generator()
        hz = rng.uniform(1.0 + self.height_lower, 1.0 + self.height_upper, n)
        if self.width_factor is not None:
            wz = rng.uniform(1.0 + self.width_lower, 1.0 + self.width_upper, n)
        else:
            wz = hz
        x_off = ((w - 1.0) / 2.0) * (1.0 - wz)
        y_off = ((h - 1.0) / 2.0) * (1.0 - hz)
        zero = np.zeros(n)
        return np.stack([wz, zero, x_off, zero, hz, y_off, zero, zero], 1).astype(np.float32)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}  # fmt: skip


class RandomCrop(_RandomLayer):
    """Crop a random (height, width) window (one offset per batch) while training; at
    inference, crop the centre at the target aspect ratio and resize (tf_keras's rule).

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomCrop(2, 3)(tf.ones((1, 4, 4, 1))).shape
    TensorShape([1, 2, 3, 1])
    """

    def __init__(self, height: int, width: int, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.height = check_size("RandomCrop", "height", height)
        self.width = check_size("RandomCrop", "width", width)

    def call(self, inputs: Any, training: Any = True) -> Any:
        check_image(self, inputs)
        x = math_ops.cast(inputs, self.compute_dtype)
        h_diff = int(x.shape[-3]) - self.height
        w_diff = int(x.shape[-2]) - self.width
        if training and h_diff >= 0 and w_diff >= 0:
            top, left = (int(v) for v in self._generator().integers(0, [h_diff + 1, w_diff + 1]))
            return x[..., top : top + self.height, left : left + self.width, :]
        return math_ops.cast(smart_resize(x, (self.height, self.width)), self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        shape[-3], shape[-2] = self.height, self.width
        return TensorShape(shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "height": self.height, "width": self.width}


class RandomContrast(_RandomLayer):
    """Scale each channel's deviation from its mean by a random factor in
    [1 - lower, 1 + upper] (one per batch) while training, then clip to [0, 255].

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomContrast(0.5)(tf.ones((1, 2, 2, 1)), training=False).shape
    TensorShape([1, 2, 2, 1])
    """

    def __init__(self, factor: Any, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        self.lower, self.upper = _bounds("RandomContrast", "factor", factor, symmetric=False)
        if self.lower < 0.0 or self.upper < 0.0 or self.lower > 1.0:
            raise ValueError(
                "RandomContrast: factor cannot have negative values or greater than 1.0, got "
                f"{factor}."
            )

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = math_ops.cast(inputs, self.compute_dtype)
        if not training:
            return x
        check_image(self, inputs)
        f = self._generator().uniform(1.0 - self.lower, 1.0 + self.upper)
        mean = math_ops.reduce_mean(x, axis=[-3, -2], keepdims=True)
        out = (x - mean) * math_ops.cast(f, x.dtype) + mean
        return clip_by_value(out, 0.0, 255.0)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "factor": self.factor}


class RandomBrightness(_RandomLayer):
    """Add a random delta (`factor` times the value range's width, one per image) while
    training, clipped to `value_range`.

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomBrightness(0.2)(tf.ones((1, 2, 2, 3)), training=False).shape
    TensorShape([1, 2, 2, 3])
    """

    def __init__(self, factor: Any, value_range: Any = (0, 255), seed: int | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(seed=seed, **kwargs)
        lower, upper = _bounds("RandomBrightness", "factor", factor)
        if abs(lower) > 1 or abs(upper) > 1:
            raise ValueError(
                f"RandomBrightness: factor argument should be a number (or a list of two "
                f"numbers) in the range [-1.0, 1.0]. Received: factor={factor}."
            )
        if not isinstance(value_range, tuple | list) or len(value_range) != 2:
            raise ValueError(
                "RandomBrightness: the value_range argument should be a list of two numbers. "
                f"Received: value_range={value_range}."
            )
        self._factor = (min(lower, upper), max(lower, upper))
        self._value_range = sorted(value_range)

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = math_ops.cast(inputs, self.compute_dtype)
        if not training:
            return x
        rank = len(x.shape)
        if rank not in (3, 4):
            raise ValueError(
                f"RandomBrightness '{self.name}': expected the input image to be rank 3 or 4. "
                f"Got inputs.shape = {tuple(x.shape)}."
            )
        shape = (1, 1, 1) if rank == 3 else (int(x.shape[0]), 1, 1, 1)
        delta = self._generator().uniform(self._factor[0], self._factor[1], shape)
        delta = delta * (self._value_range[1] - self._value_range[0])
        out = x + array_ops.constant(delta.astype(x.dtype.np))
        return clip_by_value(out, self._value_range[0], self._value_range[1])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "factor": list(self._factor),
                "value_range": list(self._value_range)}  # fmt: skip


class _RandomSize(_RandomLayer):
    _axis = -3
    _what = "height_factor"

    def __init__(self, factor: Any, interpolation: str = "bilinear", seed: int | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        name = type(self).__name__
        self.lower, self.upper = _bounds(name, "factor", factor)
        if self.lower < -1.0 or self.upper < -1.0:
            raise ValueError(f"{name}: `factor` must have values larger than -1, got {factor}.")
        self.interpolation = check_interpolation(name, interpolation)

    def call(self, inputs: Any, training: Any = True) -> Any:
        if not training:
            return inputs
        check_image(self, inputs)
        size = [int(inputs.shape[-3]), int(inputs.shape[-2])]
        f = self._generator().uniform(1.0 + self.lower, 1.0 + self.upper)
        i = 0 if self._axis == -3 else 1
        size[i] = max(int(np.float32(f) * np.float32(size[i])), 1)
        out = image_ops.resize(inputs, size, method=self.interpolation)
        return math_ops.cast(out, self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        shape[self._axis] = None
        return TensorShape(shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "factor": self.factor,
                "interpolation": self.interpolation}  # fmt: skip


class RandomHeight(_RandomSize):
    """Resize the batch to a random height (factor of the current one) while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomHeight(0.5)(tf.ones((1, 4, 4, 1)), training=False).shape
    TensorShape([1, 4, 4, 1])
    """


class RandomWidth(_RandomSize):
    """Resize the batch to a random width (factor of the current one) while training.

    >>> import layerflow as tf
    >>> tf.keras.layers.RandomWidth(0.5)(tf.ones((1, 4, 4, 1)), training=False).shape
    TensorShape([1, 4, 4, 1])
    """

    _axis = -2
    _what = "width_factor"
