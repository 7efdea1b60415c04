"""Spatial shape layers: UpSampling1D/2D/3D, ZeroPadding1D/3D, Cropping1D/2D/3D (Keras 2).

Each works on the spatial axes of `(batch, *spatial, channels)` inputs (`channels_first` puts the
channels second) and is composed of gather, pad and slice ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.convolutional import normalize_data_format
from layerflow._src.ops import array_ops, gather_ops, manip_ops

__all__ = [
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding1D",
    "ZeroPadding3D",
]

_KERAS_INTERPOLATIONS = (
    "bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic",
)  # fmt: skip


def _ints(value: Any, n: int, name: str, owner: str, minimum: int) -> tuple[int, ...]:
    items = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(items) != n or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= minimum for v in items
    ):
        raise ValueError(
            f"{owner}: `{name}` must be an int >= {minimum} or a tuple of {n} such ints, got "
            f"{value!r}."
        )
    return tuple(int(v) for v in items)


def _pairs(value: Any, n: int, name: str, owner: str) -> tuple[tuple[int, int], ...]:
    """An int, `n` ints (symmetric) or `n` pairs -> `n` (before, after) pairs of ints >= 0."""
    try:
        if isinstance(value, (int, np.integer)):
            pairs = ((value, value),) * n
        elif n == 1 and len(value) == 2 and all(isinstance(v, (int, np.integer)) for v in value):
            pairs = (tuple(value),)
        elif len(value) == n and all(isinstance(v, (int, np.integer)) for v in value):
            pairs = tuple((v, v) for v in value)
        elif len(value) == n and all(len(v) == 2 for v in value):
            pairs = tuple(tuple(v) for v in value)
        else:
            raise TypeError
        if any(isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 0
               for pair in pairs for p in pair):  # fmt: skip
            raise TypeError
    except TypeError:
        what = "a tuple of 2 ints" if n == 1 else f"a tuple of {n} ints or of {n} pairs of ints"
        raise ValueError(
            f"{owner}: `{name}` must be an int >= 0 or {what} (each >= 0), got {value!r}."
        ) from None
    return tuple((int(a), int(b)) for a, b in pairs)


class _Spatial(Layer):
    """Shared: the spatial axes for `rank` spatial dimensions and the data format."""

    rank = 1

    def _init_format(self, data_format: Any) -> None:
        self.data_format = normalize_data_format(data_format, f"{type(self).__name__}")
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _axes(self) -> list[int]:
        first = 2 if getattr(self, "data_format", "channels_last") == "channels_first" else 1
        return list(range(first, first + self.rank))


# --- UpSampling ----------------------------------------------------------------------------------


def _upsample_axis(x: Any, axis: int, factor: int, method: str) -> Any:
    """Nearest: repeat each entry; bilinear: TF 2's half-pixel-centre interpolation."""
    n = x.shape[axis]
    if factor == 1:
        return x
    out = n * factor
    dst = np.arange(out, dtype=np.float64)
    if method == "nearest":
        idx = np.minimum(np.floor((dst + 0.5) / factor), n - 1).astype(np.int64)
        return gather_ops.gather(x, array_ops.constant(idx), axis=axis)
    src = np.maximum((dst + 0.5) / factor - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
    hi = np.minimum(lo + 1, n - 1)
    shape = [1] * x.ndim
    shape[axis] = out
    frac = (src - lo).reshape(shape)
    w1 = array_ops.constant(frac, dtype=x.dtype)
    w0 = array_ops.constant(1.0 - frac, dtype=x.dtype)
    a = gather_ops.gather(x, array_ops.constant(lo), axis=axis)
    b = gather_ops.gather(x, array_ops.constant(hi), axis=axis)
    return a * w0 + b * w1


class _UpSampling(_Spatial):
    def __init__(self, size: Any, data_format: Any = None, interpolation: str = "nearest",
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.size = _ints(size, self.rank, "size", type(self).__name__, 1)
        self._init_format(data_format)
        self.interpolation = interpolation

    def call(self, inputs: Any) -> Any:
        out = inputs
        for axis, factor in zip(self._axes(), self.size):
            out = _upsample_axis(out, axis, factor, self.interpolation)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s = TensorShape(input_shape).as_list()
        for axis, factor in zip(self._axes(), self.size):
            s[axis] = None if s[axis] is None else s[axis] * factor
        return TensorShape(s)


class UpSampling1D(_UpSampling):
    """Repeat each step of `(batch, steps, features)` inputs `size` times.

    >>> import layerflow as tf
    >>> tf.keras.layers.UpSampling1D(2)(tf.constant([[[1.0], [2.0]]]))[0, :, 0].numpy()
    array([1., 1., 2., 2.], dtype=float32)
    """

    rank = 1

    def __init__(self, size: int = 2, **kwargs: Any) -> None:
        super().__init__(size, None, **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "size": self.size[0]}


class UpSampling2D(_UpSampling):
    """Scale rows and columns by `size`, by `interpolation` "nearest" (repeat) or "bilinear".

    >>> import layerflow as tf
    >>> tf.keras.layers.UpSampling2D((2, 3))(tf.ones((1, 2, 2, 1))).shape
    TensorShape([1, 4, 6, 1])
    """

    rank = 2

    def __init__(self, size: Any = (2, 2), data_format: Any = None,
                 interpolation: str = "nearest", **kwargs: Any) -> None:  # fmt: skip
        if interpolation not in _KERAS_INTERPOLATIONS:
            raise NotImplementedError(
                f"UpSampling2D: interpolation {interpolation!r} is not recognized; Keras accepts "
                f"{list(_KERAS_INTERPOLATIONS)}."
            )
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                f"UpSampling2D: interpolation {interpolation!r} is not supported yet; use "
                "'nearest' or 'bilinear'."
            )
        super().__init__(size, data_format, interpolation, **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "size": self.size,
            "data_format": self.data_format,
            "interpolation": self.interpolation,
        }


class UpSampling3D(_UpSampling):
    """Repeat the three spatial axes of 5-D inputs `size` times each.

    >>> import layerflow as tf
    >>> tf.keras.layers.UpSampling3D(2)(tf.ones((1, 1, 2, 3, 1))).shape
    TensorShape([1, 2, 4, 6, 1])
    """

    rank = 3

    def __init__(self, size: Any = (2, 2, 2), data_format: Any = None, **kwargs: Any) -> None:
        super().__init__(size, data_format, **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}


# --- ZeroPadding and Cropping --------------------------------------------------------------------


class _Padding(_Spatial):
    def call(self, inputs: Any) -> Any:
        pads = [[0, 0] for _ in range(inputs.ndim)]
        for axis, pair in zip(self._axes(), self.padding):
            pads[axis] = list(pair)
        return manip_ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s = TensorShape(input_shape).as_list()
        for axis, (a, b) in zip(self._axes(), self.padding):
            s[axis] = None if s[axis] is None else s[axis] + a + b
        return TensorShape(s)


class ZeroPadding1D(_Padding):
    """Pad the steps of `(batch, steps, features)` inputs with zeros: an int or (left, right).

    >>> import layerflow as tf
    >>> tf.keras.layers.ZeroPadding1D((1, 2))(tf.ones((1, 3, 2))).shape
    TensorShape([1, 6, 2])
    """

    rank = 1

    def __init__(self, padding: Any = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.padding = _pairs(padding, 1, "padding", "ZeroPadding1D")
        self.input_spec = InputSpec(ndim=3)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "padding": self.padding[0]}


class ZeroPadding3D(_Padding):
    """Pad the three spatial axes of 5-D inputs with zeros.

    >>> import layerflow as tf
    >>> tf.keras.layers.ZeroPadding3D(1)(tf.ones((1, 1, 2, 3, 1))).shape
    TensorShape([1, 3, 4, 5, 1])
    """

    rank = 3

    def __init__(self, padding: Any = (1, 1, 1), data_format: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.padding = _pairs(padding, 3, "padding", "ZeroPadding3D")
        self._init_format(data_format)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class _Cropping(_Spatial):
    def _check(self, shape: list) -> None:
        for axis, (a, b) in zip(self._axes(), self.cropping):
            if shape[axis] is not None and a + b >= shape[axis]:
                raise ValueError(
                    f"{type(self).__name__} '{self.name}': cropping {self.cropping} leaves "
                    f"nothing of axis {axis} (size {shape[axis]}) of inputs of shape "
                    f"{tuple(shape)}; the crops must sum to less than the size."
                )

    def build(self, input_shape: Any) -> None:
        self._check(TensorShape(input_shape).as_list())

    def call(self, inputs: Any) -> Any:
        self._check(list(inputs.shape))
        key = [slice(None)] * inputs.ndim
        for axis, (a, b) in zip(self._axes(), self.cropping):
            key[axis] = slice(a, inputs.shape[axis] - b)
        return array_ops.getitem(inputs, tuple(key))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s = TensorShape(input_shape).as_list()
        self._check(s)
        for axis, (a, b) in zip(self._axes(), self.cropping):
            s[axis] = None if s[axis] is None else s[axis] - a - b
        return TensorShape(s)


class Cropping1D(_Cropping):
    """Crop `(start, end)` steps off `(batch, steps, features)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Cropping1D((1, 2))(tf.ones((1, 5, 2))).shape
    TensorShape([1, 2, 2])
    """

    rank = 1

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, 1, "cropping", "Cropping1D")
        self.input_spec = InputSpec(ndim=3)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "cropping": self.cropping[0]}


class Cropping2D(_Cropping):
    """Crop rows and columns: an int, (rows, cols), or ((top, bottom), (left, right)).

    >>> import layerflow as tf
    >>> tf.keras.layers.Cropping2D(((1, 0), (0, 2)))(tf.ones((1, 4, 5, 3))).shape
    TensorShape([1, 3, 3, 3])
    """

    rank = 2

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: Any = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, 2, "cropping", "Cropping2D")
        self._init_format(data_format)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}


class Cropping3D(_Cropping):
    """Crop the three spatial axes of 5-D inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Cropping3D(1)(tf.ones((1, 3, 4, 5, 2))).shape
    TensorShape([1, 1, 2, 3, 2])
    """

    rank = 3

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: Any = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, 3, "cropping", "Cropping3D")
        self._init_format(data_format)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}
