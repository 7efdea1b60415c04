"""Convolution layers (channels-last): Conv1D, Conv2D, DepthwiseConv2D, and ZeroPadding2D.

The arithmetic is `tf.nn.conv1d/conv2d/depthwise_conv2d` (im2col + one GEMM, in ops); the layers
own the weights, the argument checking and the output-shape rule.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.arg_checks import check_count, check_counts
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, conv_ops, manip_ops, math_ops

__all__ = ["Conv1D", "Conv2D", "DepthwiseConv2D", "ZeroPadding2D", "conv_output_length"]


def normalize_tuple(value: Any, n: int, name: str, owner: str) -> tuple[int, ...]:
    """`3` -> `(3, 3)`; a tuple of `n` positive integers stays; `2.5` or `"3"` is an error."""
    return check_counts(value, n, name, owner)


def normalize_padding(value: Any, owner: str) -> str:
    padding = str(value).lower()
    if padding not in ("valid", "same", "causal"):
        raise ValueError(f"{owner}: padding must be 'valid' or 'same', got {value!r}.")
    return padding


def normalize_data_format(value: Any, owner: str) -> str:
    """`value`, or when None Keras's global `image_data_format()` (as tf_keras does)."""
    fmt = value or backend_config.image_data_format()
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(
            f"{owner}: data_format must be 'channels_last' or 'channels_first', got {value!r}."
        )
    return fmt


def conv_output_length(
    length: int | None, kernel: int, padding: str, stride: int, dilation: int = 1
) -> int | None:
    """Keras' output length of a convolution or pooling window along one axis.

    >>> conv_output_length(28, 5, "valid", 1), conv_output_length(28, 2, "same", 2)
    (24, 14)
    """
    if length is None:
        return None
    extent = (kernel - 1) * dilation + 1
    if padding in ("same", "causal"):
        out = length
    else:
        out = length - extent + 1
    return max((out + stride - 1) // stride, 0)


class _Conv(Layer):
    _cast_inputs_to_compute_dtype = True  # numeric inputs become floats (tf.keras)
    rank = 2
    _kernel_name = "kernel"  # the weight's name (tf_keras: "depthwise_kernel" for depthwise)

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        groups: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        owner = f"{type(self).__name__} '{self.name}'"
        self.filters = filters = check_count(filters, "filters", owner)
        # tf_keras takes `groups or 1`: None and 0 mean one group (RegNetX080 relies on it)
        groups = check_count(1 if groups is None or groups == 0 else groups, "groups", owner)
        if filters % groups:
            raise ValueError(
                f"{owner}: the number of filters ({filters}) must be divisible by the number of "
                f"groups ({groups})."
            )
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size", owner)
        self.strides = normalize_tuple(strides, self.rank, "strides", owner)
        self.padding = normalize_padding(padding, owner)
        if self.padding == "causal" and self.rank != 1:
            raise ValueError(f"{owner}: 'causal' padding is only for Conv1D.")
        self.data_format = normalize_data_format(data_format, owner)
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate", owner)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(
                f"{owner}: strides > 1 together with dilation_rate > 1 is not supported."
            )
        self.groups = groups
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_options(
            self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint
        )
        set_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.input_spec = InputSpec(min_ndim=self.rank + 2)

    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        channels = shape[self._channel_axis()]
        if channels is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the channel dimension of the inputs must be "
                f"known, got shape {shape}."
            )
        self.kernel = self.add_weight(
            self._kernel_name,
            shape=self._kernel_shape(channels),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                shape=[self._out_channels(channels)],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        else:
            self.bias = None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): channels})

    def _kernel_shape(self, channels: int) -> list[int]:
        if channels % self.groups:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the number of input channels ({channels}) "
                f"must be divisible by the number of groups ({self.groups})."
            )
        return [*self.kernel_size, channels // self.groups, self.filters]

    def _out_channels(self, channels: int) -> int:
        return self.filters

    def _convolve(self, x: Any, kernel: Any) -> Any:
        raise NotImplementedError

    def _grouped(self, x: Any) -> Any:
        """Grouped convolution (Keras 2 `groups=`): group g of the input channels meets group
        g of the filters, one plain convolution per group, outputs joined in group order."""
        if self.groups == 1:
            return self._convolve(x, self.kernel)
        axis = self._channel_axis()
        xs = array_ops.split(x, self.groups, axis=axis)
        ks = array_ops.split(self.kernel, self.groups, axis=-1)
        return array_ops.concat([self._convolve(a, k) for a, k in zip(xs, ks)], axis=axis)

    def call(self, inputs: Any) -> Any:
        out = self._grouped(inputs)
        if self.bias is not None:
            if self.data_format == "channels_last":
                out = out + self.bias
            else:
                out = out + math_ops.reshape(self.bias, (1, -1) + (1,) * self.rank)
        if self.activation is not activations.linear:
            out = self.activation(out)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        spatial = shape[1:-1] if self.data_format == "channels_last" else shape[2:]
        out = [
            conv_output_length(n, k, self.padding, s, d)
            for n, k, s, d in zip(spatial, self.kernel_size, self.strides, self.dilation_rate)
        ]
        channels = shape[self._channel_axis()]
        c = self._out_channels(channels) if channels is not None else None
        if self.data_format == "channels_last":
            return TensorShape([shape[0], *out, c])
        return TensorShape([shape[0], c, *out])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "strides": self.strides,
                "padding": self.padding,
                "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "groups": self.groups,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(regularizers.serialize, self.kernel_regularizer),
                "bias_regularizer": _maybe(regularizers.serialize, self.bias_regularizer),
                "kernel_constraint": _maybe(constraints.serialize, self.kernel_constraint),
                "bias_constraint": _maybe(constraints.serialize, self.bias_constraint),
            }
        )
        return config


def _maybe(fn: Any, value: Any) -> Any:
    return None if value is None else fn(value)


def _nchw(layer: _Conv) -> str:
    return "NHWC" if layer.data_format == "channels_last" else "NCHW"


class Conv2D(_Conv):
    """2-D convolution over `(batch, height, width, channels)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Conv2D(6, 5, padding="same")(tf.ones((2, 28, 28, 1))).shape
    TensorShape([2, 28, 28, 6])
    """

    rank = 2

    def call(self, inputs: Any) -> Any:
        # Bias and relu fused into the convolution op (groups too): one activation kept, not three.
        # Another activation is applied to the fused op's output (the bias added chunk by chunk
        # while the output is in cache, its gradient summed there too).
        relu = self.activation is activations.relu or self.activation is math_ops.relu
        out = conv_ops.fused_conv2d(
            inputs,
            self.kernel,
            self.bias,
            self.strides,
            self.padding.upper(),
            data_format=_nchw(self),
            dilations=self.dilation_rate,
            groups=self.groups,
            activation="relu" if relu else None,
        )
        if relu or self.activation is activations.linear:
            return out
        return self.activation(out)

    def _convolve(self, x: Any, kernel: Any) -> Any:
        return conv_ops.conv2d(
            x,
            kernel,
            self.strides,
            self.padding.upper(),
            data_format=_nchw(self),
            dilations=self.dilation_rate,
        )


class Conv1D(_Conv):
    """1-D convolution over `(batch, steps, channels)` inputs (`padding="causal"` supported).

    >>> import layerflow as tf
    >>> tf.keras.layers.Conv1D(4, 3)(tf.ones((2, 10, 3))).shape
    TensorShape([2, 8, 4])
    """

    rank = 1

    def _convolve(self, x: Any, kernel: Any) -> Any:
        fmt = "NWC" if self.data_format == "channels_last" else "NCW"
        padding: Any = self.padding.upper()
        if self.padding == "causal":
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            pads = [[0, 0], [left, 0], [0, 0]] if fmt == "NWC" else [[0, 0], [0, 0], [left, 0]]
            x = manip_ops.pad(x, pads)
            padding = "VALID"
        return conv_ops.conv1d(
            x,
            kernel,
            self.strides[0],
            padding,
            data_format=fmt,
            dilations=self.dilation_rate[0],
        )


class DepthwiseConv2D(_Conv):
    """Per-channel 2-D convolution: each input channel gets `depth_multiplier` filters.

    >>> import layerflow as tf
    >>> tf.keras.layers.DepthwiseConv2D(3, depth_multiplier=2)(tf.ones((1, 5, 5, 3))).shape
    TensorShape([1, 3, 3, 6])
    """

    rank = 2
    _kernel_name = "depthwise_kernel"  # tf_keras's weight name

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            1,
            kernel_size,
            strides=strides,
            padding=padding,
            data_format=data_format,
            dilation_rate=dilation_rate,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=depthwise_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=depthwise_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=depthwise_constraint,
            bias_constraint=bias_constraint,
            **kwargs,
        )
        self.depth_multiplier = check_count(
            depth_multiplier, "depth_multiplier", f"DepthwiseConv2D '{self.name}'"
        )

    def _kernel_shape(self, channels: int) -> list[int]:
        return [*self.kernel_size, channels, self.depth_multiplier]

    def _out_channels(self, channels: int) -> int:
        return channels * self.depth_multiplier

    @property
    def depthwise_kernel(self) -> Any:
        return self.kernel

    def _convolve(self, x: Any, kernel: Any) -> Any:
        return conv_ops.depthwise_conv2d(
            x,
            kernel,
            self.strides,
            self.padding.upper(),
            data_format=_nchw(self),
            dilations=self.dilation_rate,
        )

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        for key in ("filters", "groups"):
            config.pop(key)
        config["depth_multiplier"] = self.depth_multiplier
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["depthwise_regularizer"] = config.pop("kernel_regularizer")
        config["depthwise_constraint"] = config.pop("kernel_constraint")
        return config


class ZeroPadding2D(Layer):
    """Pad the rows and columns of `(batch, height, width, channels)` inputs with zeros.

    `padding` is an int, `(rows, cols)`, or `((top, bottom), (left, right))`.

    >>> import layerflow as tf
    >>> tf.keras.layers.ZeroPadding2D(1)(tf.ones((1, 2, 2, 1))).shape
    TensorShape([1, 4, 4, 1])
    """

    def __init__(
        self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        owner = f"ZeroPadding2D '{self.name}'"
        problem = ValueError(
            f"{owner}: padding must be an int, a tuple of 2 ints or a tuple of 2 tuples of 2 "
            f"ints, got {padding!r}."
        )
        if not isinstance(padding, list | tuple):
            rows = cols = check_counts(padding, 2, "padding", owner, minimum=0)
        elif len(padding) != 2:
            raise problem
        elif all(isinstance(p, list | tuple) for p in padding):
            if any(len(p) != 2 for p in padding):
                raise problem
            rows = check_counts(padding[0], 2, "padding", owner, minimum=0)
            cols = check_counts(padding[1], 2, "padding", owner, minimum=0)
        else:
            sym = check_counts(padding, 2, "padding", owner, minimum=0)
            rows, cols = (sym[0],) * 2, (sym[1],) * 2
        self.padding = (rows, cols)
        self.data_format = normalize_data_format(data_format, owner)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs: Any) -> Any:
        (t, b), (l, r) = self.padding
        if self.data_format == "channels_last":
            pads = [[0, 0], [t, b], [l, r], [0, 0]]
        else:
            pads = [[0, 0], [0, 0], [t, b], [l, r]]
        return manip_ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s = TensorShape(input_shape).as_list()
        (t, b), (l, r) = self.padding
        hi, wi = (1, 2) if self.data_format == "channels_last" else (2, 3)
        s[hi] = None if s[hi] is None else s[hi] + t + b
        s[wi] = None if s[wi] is None else s[wi] + l + r
        return TensorShape(s)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"padding": self.padding, "data_format": self.data_format})
        return config
