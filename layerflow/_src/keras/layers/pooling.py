"""Pooling layers (channels-last): max/average over windows, and global pooling."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.convolutional import (
    conv_output_length,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
)
from layerflow._src.ops import array_ops, conv_ops, math_ops

__all__ = [
    "MaxPool2D",
    "MaxPooling2D",
    "AvgPool2D",
    "AveragePooling2D",
    "MaxPool1D",
    "MaxPooling1D",
    "AvgPool1D",
    "AveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAvgPool2D",
    "GlobalMaxPooling2D",
    "GlobalMaxPool2D",
    "GlobalAveragePooling1D",
    "GlobalMaxPooling1D",
]


class _Pool(Layer):
    rank = 2
    _fn: Any = None

    def __init__(
        self,
        pool_size: Any = 2,
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        owner = f"{type(self).__name__} '{self.name}'"
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size", owner)
        self.strides = normalize_tuple(
            self.pool_size if strides is None else strides, self.rank, "strides", owner
        )
        self.padding = normalize_padding(padding, owner)
        self.data_format = normalize_data_format(data_format, owner)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs: Any) -> Any:
        if self.rank == 2:
            fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        else:
            fmt = "NWC" if self.data_format == "channels_last" else "NCW"
        return type(self)._fn(
            inputs, self.pool_size, self.strides, self.padding.upper(), data_format=fmt
        )

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s = TensorShape(input_shape).as_list()
        lo = 1 if self.data_format == "channels_last" else 2
        for i, (k, st) in enumerate(zip(self.pool_size, self.strides)):
            s[lo + i] = conv_output_length(s[lo + i], k, self.padding, st)
        return TensorShape(s)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "pool_size": self.pool_size,
                "strides": self.strides,
                "padding": self.padding,
                "data_format": self.data_format,
            }
        )
        return config


class MaxPooling2D(_Pool):
    """The maximum over each `pool_size` window (stride = `pool_size` unless given).

    >>> import layerflow as tf
    >>> tf.keras.layers.MaxPool2D(2)(tf.ones((1, 4, 4, 3))).shape
    TensorShape([1, 2, 2, 3])
    """

    rank = 2
    _fn = staticmethod(conv_ops.max_pool2d)


class AveragePooling2D(_Pool):
    """The mean over each `pool_size` window (with SAME padding, of the real inputs only).

    >>> import layerflow as tf
    >>> tf.keras.layers.AvgPool2D(pool_size=2, strides=2)(tf.ones((1, 5, 5, 1))).shape
    TensorShape([1, 2, 2, 1])
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)
    rank = 2
    _fn = staticmethod(conv_ops.avg_pool2d)


class MaxPooling1D(_Pool):
    """The maximum over each window of `pool_size` steps.

    >>> import layerflow as tf
    >>> tf.keras.layers.MaxPool1D(2)(tf.ones((1, 6, 3))).shape
    TensorShape([1, 3, 3])
    """

    rank = 1
    _fn = staticmethod(conv_ops.max_pool)


class AveragePooling1D(_Pool):
    """The mean over each window of `pool_size` steps.

    >>> import layerflow as tf
    >>> tf.keras.layers.AvgPool1D(3, strides=1)(tf.ones((1, 6, 3))).shape
    TensorShape([1, 4, 3])
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)
    rank = 1
    _fn = staticmethod(conv_ops.avg_pool)


class _GlobalPool(Layer):
    rank = 2
    _reduce: Any = None

    def __init__(
        self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format, f"{type(self).__name__}")
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _axes(self) -> list[int]:
        lo = 1 if self.data_format == "channels_last" else 2
        return list(range(lo, lo + self.rank))

    def call(self, inputs: Any) -> Any:
        return type(self)._reduce(inputs, axis=self._axes(), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s = TensorShape(input_shape).as_list()
        axes = self._axes()
        if self.keepdims:
            return TensorShape([1 if i in axes else d for i, d in enumerate(s)])
        return TensorShape([d for i, d in enumerate(s) if i not in axes])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


class GlobalAveragePooling2D(_GlobalPool):
    """The mean over height and width: `(batch, h, w, c)` -> `(batch, c)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.GlobalAveragePooling2D()(tf.ones((2, 4, 4, 3))).shape
    TensorShape([2, 3])
    """

    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling2D(_GlobalPool):
    """The maximum over height and width: `(batch, h, w, c)` -> `(batch, c)`."""

    _reduce = staticmethod(math_ops.reduce_max)


class GlobalAveragePooling1D(_GlobalPool):
    """The mean over time, `(batch, steps, c)` -> `(batch, c)`; with a mask (Keras 2), the
    mean of the unmasked steps only.

    >>> import layerflow as tf
    >>> x = tf.constant([[[1.0], [3.0], [9.0]]])
    >>> tf.keras.layers.GlobalAveragePooling1D()(x, mask=tf.constant([[True, True, False]]))
    <tf.Tensor: shape=(1, 1), dtype=float32, numpy=array([[2.]], dtype=float32)>
    """

    rank = 1
    _reduce = staticmethod(math_ops.reduce_mean)

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.supports_masking = True

    def call(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None:
            return super().call(inputs)
        axis = 1 if self.data_format == "channels_last" else 2
        weights = array_ops.expand_dims(math_ops.cast(mask, inputs.dtype), 3 - axis)
        total = math_ops.reduce_sum(inputs * weights, axis=axis, keepdims=self.keepdims)
        return total / math_ops.reduce_sum(weights, axis=axis, keepdims=self.keepdims)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None


class GlobalMaxPooling1D(_GlobalPool):
    rank = 1
    _reduce = staticmethod(math_ops.reduce_max)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
