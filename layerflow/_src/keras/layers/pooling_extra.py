"""3-D pooling layers (Keras 2): MaxPooling3D, AveragePooling3D and their global forms, on
`tf.nn.max_pool3d`/`avg_pool3d` and reductions."""

from __future__ import annotations

from typing import Any

from layerflow._src.keras.layers.pooling import _GlobalPool, _Pool
from layerflow._src.ops import conv3d_ops, math_ops

__all__ = [
    "AveragePooling3D",
    "AvgPool3D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool3D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling3D",
    "MaxPool3D",
    "MaxPooling3D",
]


class _Pool3D(_Pool):
    rank = 3

    def __init__(self, pool_size: Any = (2, 2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(pool_size, strides, padding, data_format, **kwargs)

    def call(self, inputs: Any) -> Any:
        fmt = "NDHWC" if self.data_format == "channels_last" else "NCDHW"
        return type(self)._fn(inputs, self.pool_size, self.strides, self.padding.upper(),
                              data_format=fmt)  # fmt: skip


class MaxPooling3D(_Pool3D):
    """The maximum over each `pool_size` window of `(batch, d, h, w, channels)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.MaxPool3D()(tf.ones((1, 4, 4, 4, 3))).shape
    TensorShape([1, 2, 2, 2, 3])
    """

    _fn = staticmethod(conv3d_ops.max_pool3d)


class AveragePooling3D(_Pool3D):
    """The mean over each `pool_size` window (with SAME padding, of the real inputs only).

    >>> import layerflow as tf
    >>> tf.keras.layers.AvgPool3D(2, padding="same")(tf.ones((1, 3, 3, 3, 1))).shape
    TensorShape([1, 2, 2, 2, 1])
    """

    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)
    _fn = staticmethod(conv3d_ops.avg_pool3d)


class GlobalAveragePooling3D(_GlobalPool):
    """The mean over depth, height and width: `(batch, d, h, w, c)` -> `(batch, c)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.GlobalAveragePooling3D()(tf.ones((2, 3, 3, 3, 4))).shape
    TensorShape([2, 4])
    """

    rank = 3
    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling3D(_GlobalPool):
    """The maximum over depth, height and width: `(batch, d, h, w, c)` -> `(batch, c)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.GlobalMaxPool3D(keepdims=True)(tf.ones((2, 3, 3, 3, 4))).shape
    TensorShape([2, 1, 1, 1, 4])
    """

    rank = 3
    _reduce = staticmethod(math_ops.reduce_max)


MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D
GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
