"""More convolution layers (Keras 2): Conv3D, the transposed convolutions, the separable
convolutions and DepthwiseConv1D, with tf_keras's arguments, weights (names, shapes, order) and
configs. The arithmetic is `tf.nn` (`conv3d`, `conv_transpose`, `separable_conv2d`,
`depthwise_conv2d`); the layers add weights, argument checks and the output-shape rules.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import initializers
from layerflow._src.keras.engine.arg_checks import check_count, check_counts
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.convolutional import (
    Conv1D,
    Conv2D,
    DepthwiseConv2D,
    _Conv,
    _maybe,
)
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, conv3d_ops, conv_ops, conv_transpose_ops, manip_ops
from layerflow._src.ops.math_ops import reshape

__all__ = [
    "Conv1DTranspose",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "DepthwiseConv1D",
    "SeparableConv1D",
    "SeparableConv2D",
    "deconv_output_length",
]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _fmt(layer: _Conv) -> str:
    return _FORMATS[layer.rank][0 if layer.data_format == "channels_last" else 1]


def _causal_pad(layer: _Conv, x: Any) -> Any:
    """Left-pad the steps of a 1-D input by the dilated kernel's extent minus one."""
    left = (layer.kernel_size[0] - 1) * layer.dilation_rate[0]
    if layer.data_format == "channels_last":
        return manip_ops.pad(x, [[0, 0], [left, 0], [0, 0]])
    return manip_ops.pad(x, [[0, 0], [0, 0], [left, 0]])


class Conv3D(_Conv):
    """3-D convolution over `(batch, depth, height, width, channels)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Conv3D(2, 3)(tf.ones((1, 5, 5, 5, 1))).shape
    TensorShape([1, 3, 3, 3, 2])
    """

    rank = 3

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1, 1),
        groups: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         **kwargs)  # fmt: skip

    def _convolve(self, x: Any, kernel: Any) -> Any:
        return conv3d_ops.conv3d(x, kernel, self.strides, self.padding.upper(),
                                 data_format=_fmt(self), dilations=self.dilation_rate)  # fmt: skip


def deconv_output_length(length: int | None, kernel: int, padding: str,
                         output_padding: int | None = None, stride: int = 0,
                         dilation: int = 1) -> int | None:  # fmt: skip
    """Keras' output length of a transposed convolution along one axis.

    >>> deconv_output_length(5, 3, "valid", stride=2), deconv_output_length(5, 3, "same", 1, 2)
    (11, 10)
    """
    if length is None:
        return None
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(kernel - stride, 0)
        return length * stride
    pad = kernel // 2 if padding == "same" else 0
    return (length - 1) * stride + kernel - 2 * pad + output_padding


class _ConvTranspose(_Conv):
    """Transposed convolution: the kernel is `[*kernel_size, filters, channels]` and the output
    grows by the strides (Keras's `deconv_output_length`, with `output_padding`)."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 output_padding: Any = None, data_format: str | None = None,
                 dilation_rate: Any = 1, **kwargs: Any) -> None:  # fmt: skip
        if kwargs.get("groups", 1) != 1:
            raise ValueError(
                f"{type(self).__name__}: groups={kwargs['groups']} is not supported by "
                "transposed convolutions (tf_keras); use groups=1."
            )
        super().__init__(
            filters,
            kernel_size,
            strides=strides,
            padding=padding,
            data_format=data_format,
            dilation_rate=dilation_rate,
            **kwargs,
        )
        owner = f"{type(self).__name__} '{self.name}'"
        if self.padding == "causal":
            raise ValueError(f"{owner}: padding must be 'valid' or 'same', got 'causal'.")
        if output_padding is None:
            self.output_padding = None
        else:
            self.output_padding = check_counts(output_padding, self.rank, "output_padding",
                                               owner, minimum=0)  # fmt: skip
            for p, s in zip(self.output_padding, self.strides):
                if p >= s:
                    raise ValueError(
                        f"{owner}: each output_padding must be smaller than its stride; got "
                        f"output_padding={self.output_padding} with strides={self.strides}."
                    )

    def _kernel_shape(self, channels: int) -> list[int]:
        return [*self.kernel_size, self.filters, channels]

    def _spatial(self, shape: list) -> list:
        return shape[1:-1] if self.data_format == "channels_last" else shape[2:]

    def _out_spatial(self, spatial: list) -> list:
        pads = self.output_padding or (None,) * self.rank
        return [deconv_output_length(n, k, self.padding, p, s, d)
                for n, k, p, s, d in zip(spatial, self.kernel_size, pads, self.strides,
                                         self.dilation_rate)]  # fmt: skip

    def _convolve(self, x: Any, kernel: Any) -> Any:
        shape = [int(v) for v in x.shape]
        out = self._out_spatial(self._spatial(shape))
        if self.data_format == "channels_last":
            out_shape = [shape[0], *out, self.filters]
        else:
            out_shape = [shape[0], self.filters, *out]
        return conv_transpose_ops.conv_transpose(
            x, kernel, out_shape, self.strides, self.padding.upper(), data_format=_fmt(self),
            dilations=self.dilation_rate,
        )  # fmt: skip

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        out = self._out_spatial(self._spatial(shape))
        if self.data_format == "channels_last":
            return TensorShape([shape[0], *out, self.filters])
        return TensorShape([shape[0], self.filters, *out])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["output_padding"] = self.output_padding
        return config


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (`(batch, steps, channels)`), kernel `[k, filters, in]`.

    >>> import layerflow as tf
    >>> tf.keras.layers.Conv1DTranspose(4, 3, strides=2)(tf.ones((2, 5, 3))).shape
    TensorShape([2, 11, 4])
    """

    rank = 1


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution, kernel `[kh, kw, filters, in]`.

    >>> import layerflow as tf
    >>> tf.keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same")(
    ...     tf.ones((1, 5, 5, 3))).shape
    TensorShape([1, 10, 10, 4])
    """

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", output_padding: Any = None,
                 data_format: str | None = None, dilation_rate: Any = (1, 1),
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format,
                         dilation_rate, **kwargs)  # fmt: skip


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution, kernel `[kd, kh, kw, filters, in]`.

    >>> import layerflow as tf
    >>> tf.keras.layers.Conv3DTranspose(2, 2, strides=2)(tf.ones((1, 2, 2, 2, 3))).shape
    TensorShape([1, 4, 4, 4, 2])
    """

    rank = 3

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1, 1),
                 padding: str = "valid", output_padding: Any = None,
                 data_format: str | None = None, dilation_rate: Any = (1, 1, 1),
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format,
                         dilation_rate, **kwargs)  # fmt: skip


class _SeparableConv(_Conv):
    """A depthwise convolution (`depth_multiplier` filters per channel) then a pointwise 1x1
    convolution to `filters` channels; weights `depthwise_kernel`, `pointwise_kernel`, `bias`."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: Any = 1,
                 depth_multiplier: int = 1, activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, pointwise_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 depthwise_constraint: Any = None, pointwise_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:  # fmt: skip
        # tf_keras's configs also carry the plain Conv's kernel_* keys: accept and ignore them.
        for key in ("kernel_initializer", "kernel_regularizer", "kernel_constraint", "groups"):
            kwargs.pop(key, None)
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)  # fmt: skip
        owner = f"{type(self).__name__} '{self.name}'"
        self.depth_multiplier = check_count(depth_multiplier, "depth_multiplier", owner)
        set_weight_options(self, "depthwise", depthwise_initializer, depthwise_regularizer,
                           depthwise_constraint)  # fmt: skip
        set_weight_options(self, "pointwise", pointwise_initializer, pointwise_regularizer,
                           pointwise_constraint)  # fmt: skip

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        channels = shape[self._channel_axis()]
        if channels is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the channel dimension of the inputs must be "
                f"known, got shape {shape}."
            )
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", shape=[*self.kernel_size, channels, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
        )  # fmt: skip
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", shape=[*(1,) * self.rank, channels * self.depth_multiplier,
                                       self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint,
        )  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", shape=[self.filters], initializer=self.bias_initializer,
                regularizer=self.bias_regularizer, constraint=self.bias_constraint,
            )  # fmt: skip
        else:
            self.bias = None
        self.kernel = None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): channels})

    def _grouped(self, x: Any) -> Any:
        return self._convolve(x, None)

    def get_config(self) -> dict[str, Any]:
        from layerflow._src.keras import constraints, regularizers

        config = super().get_config()
        config["depth_multiplier"] = self.depth_multiplier
        for w in ("depthwise", "pointwise"):
            config[f"{w}_initializer"] = initializers.serialize(getattr(self, f"{w}_initializer"))
            config[f"{w}_regularizer"] = _maybe(regularizers.serialize,
                                                getattr(self, f"{w}_regularizer"))  # fmt: skip
            config[f"{w}_constraint"] = _maybe(constraints.serialize,
                                               getattr(self, f"{w}_constraint"))  # fmt: skip
        return config


class SeparableConv2D(_SeparableConv):
    """Depthwise separable 2-D convolution.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.SeparableConv2D(4, 3, depth_multiplier=2)
    >>> layer(tf.ones((1, 5, 5, 3))).shape, [tuple(w.shape) for w in layer.weights]
    (TensorShape([1, 3, 3, 4]), [(3, 3, 3, 2), (1, 1, 6, 4), (4,)])
    """

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = (1, 1), **kwargs: Any) -> None:  # fmt: skip
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)  # fmt: skip

    def _convolve(self, x: Any, kernel: Any) -> Any:
        return conv_transpose_ops.separable_conv2d(
            x, self.depthwise_kernel, self.pointwise_kernel, self.strides,
            self.padding.upper(), data_format=_fmt(self), dilations=self.dilation_rate,
        )  # fmt: skip


class SeparableConv1D(_SeparableConv):
    """Depthwise separable 1-D convolution (`padding="causal"` supported).

    >>> import layerflow as tf
    >>> tf.keras.layers.SeparableConv1D(4, 3)(tf.ones((2, 6, 3))).shape
    TensorShape([2, 4, 4])
    """

    rank = 1

    def _convolve(self, x: Any, kernel: Any) -> Any:
        padding = self.padding.upper()
        if self.padding == "causal":
            x, padding = _causal_pad(self, x), "VALID"
        first = self.data_format == "channels_first"
        axis = 2 if first else 1
        x4 = array_ops.expand_dims(x, axis)
        dk = array_ops.expand_dims(self.depthwise_kernel, 0)
        pk = array_ops.expand_dims(self.pointwise_kernel, 0)
        y = conv_transpose_ops.separable_conv2d(
            x4, dk, pk, (1, self.strides[0]), padding, data_format="NCHW" if first else "NHWC",
            dilations=(1, self.dilation_rate[0]),
        )  # fmt: skip
        return array_ops.squeeze(y, [axis])


class DepthwiseConv1D(DepthwiseConv2D):
    """Per-channel 1-D convolution: each input channel gets `depth_multiplier` filters
    (`depthwise_kernel` `[k, channels, depth_multiplier]`).

    >>> import layerflow as tf
    >>> tf.keras.layers.DepthwiseConv1D(3, depth_multiplier=2)(tf.ones((1, 6, 3))).shape
    TensorShape([1, 4, 6])
    """

    rank = 1

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 depth_multiplier: int = 1, data_format: str | None = None,
                 dilation_rate: Any = 1, **kwargs: Any) -> None:  # fmt: skip
        kwargs.pop("groups", None)  # in tf_keras's config, always 1
        if str(padding).lower() == "causal":
            raise ValueError(
                "DepthwiseConv1D: causal padding is only supported for Conv1D and "
                "SeparableConv1D (as in tf_keras); pad the input on the left and use 'valid'."
            )
        super().__init__(kernel_size, strides=strides, padding=padding,
                         depth_multiplier=depth_multiplier, data_format=data_format,
                         dilation_rate=dilation_rate, **kwargs)  # fmt: skip

    _kernel_name = "depthwise_kernel"  # tf_keras's weight name

    def _convolve(self, x: Any, kernel: Any) -> Any:
        first = self.data_format == "channels_first"
        axis = 2 if first else 1
        y = conv_ops.depthwise_conv2d(
            array_ops.expand_dims(x, axis), reshape(kernel, (1, *(int(v) for v in kernel.shape))),
            (1, self.strides[0]), self.padding.upper(), data_format="NCHW" if first else "NHWC",
            dilations=(1, self.dilation_rate[0]),
        )  # fmt: skip
        return array_ops.squeeze(y, [axis])


Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
