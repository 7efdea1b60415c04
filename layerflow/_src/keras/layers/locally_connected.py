"""LocallyConnected1D/2D (Keras 2): a convolution whose weights are not shared between output
positions. tf_keras's three `implementation`s store the same weights in three layouts, and each
is kept here with its tf_keras shape so that `set_weights` of a tf_keras layer reproduces it:

1. `kernel` [positions, prod(kernel_size) * channels, filters]: one dense map per output
   position, applied to that position's patch (patches gathered by slicing, as tf_keras does).
2. `kernel` [*input_spatial, channels, *output_spatial, filters] (channels first:
   [channels, *input_spatial, filters, *output_spatial]), multiplied by the 0/1 connectivity mask
   and applied as one dense matmul of the flattened input.
3. `kernel` [number of connections]: the mask's non-zero entries in tf_keras's sorted
   (output index, input index) order, scattered into the same dense matrix.

Only "valid" padding, as tf_keras documents.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine.arg_checks import check_count
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.convolutional import (
    _maybe,
    conv_output_length,
    normalize_data_format,
    normalize_tuple,
)
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, gather_ops, math_ops

__all__ = ["LocallyConnected1D", "LocallyConnected2D"]


def _connections(in_sp: tuple, out_sp: tuple, k: tuple, s: tuple, c_in: int, c_out: int,
                 first: bool) -> list[tuple[int, int]]:  # fmt: skip
    """(output flat index, input flat index) of every weight, sorted (tf_keras's order)."""

    def dims(sp: tuple, c: int) -> tuple:
        return (c, *sp) if first else (*sp, c)

    def at(pos: tuple, c: int) -> tuple:
        return (c, *pos) if first else (*pos, c)

    pairs = []
    for out_pos in itertools.product(*(range(o) for o in out_sp)):
        ranges = [range(p * st, p * st + kk) for p, st, kk in zip(out_pos, s, k)]
        for in_pos in itertools.product(*ranges):
            for fi in range(c_in):
                i = int(np.ravel_multi_index(at(in_pos, fi), dims(in_sp, c_in)))
                for fo in range(c_out):
                    o = int(np.ravel_multi_index(at(out_pos, fo), dims(out_sp, c_out)))
                    pairs.append((o, i))
    return sorted(pairs)


class _LocallyConnected(Layer):
    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        implementation: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        owner = f"{type(self).__name__} '{self.name}'"
        self.filters = check_count(filters, "filters", owner)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size", owner)
        self.strides = normalize_tuple(strides, self.rank, "strides", owner)
        if str(padding).lower() != "valid":
            raise ValueError(
                f"{owner}: only padding='valid' is supported (as in tf_keras), got {padding!r}."
            )
        self.padding = "valid"
        self.data_format = normalize_data_format(data_format, owner)
        if implementation not in (1, 2, 3):
            raise ValueError(f"{owner}: implementation must be 1, 2 or 3, got {implementation!r}.")
        self.implementation = implementation
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                           kernel_constraint)  # fmt: skip
        set_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _split(self, shape: list) -> tuple[list, Any]:
        if self.data_format == "channels_last":
            return shape[1:-1], shape[-1]
        return shape[2:], shape[1]

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape).as_list()
        spatial, channels = self._split(shape)
        owner = f"{type(self).__name__} '{self.name}'"
        if channels is None or any(n is None for n in spatial):
            raise ValueError(
                f"{owner}: the spatial and channel dimensions of the inputs must be known, got "
                f"shape {tuple(shape)}."
            )
        out = [conv_output_length(n, k, "valid", s)
               for n, k, s in zip(spatial, self.kernel_size, self.strides)]  # fmt: skip
        if min(out) <= 0:
            raise ValueError(
                f"{owner}: inputs of shape {tuple(shape)} are smaller than the kernel "
                f"{self.kernel_size}: the output would be empty. Use larger inputs."
            )
        self.input_spatial, self.output_spatial, self.channels = (
            tuple(spatial),
            tuple(out),
            channels,
        )
        first = self.data_format == "channels_first"
        f = self.filters
        if self.implementation == 1:
            kshape = [int(np.prod(out)), int(np.prod(self.kernel_size)) * channels, f]
        elif self.implementation == 2:
            kshape = [channels, *spatial, f, *out] if first else [*spatial, channels, *out, f]
        else:
            pairs = _connections(tuple(spatial), tuple(out), self.kernel_size, self.strides,
                                 channels, f, first)  # fmt: skip
            # Stored as (input, output) index pairs of the dense [in_size, out_size] matrix.
            self._indices = np.array([(i, o) for o, i in pairs], dtype=np.int64)
            kshape = [len(pairs)]
        if self.implementation == 2:
            pairs = _connections(tuple(spatial), tuple(out), self.kernel_size, self.strides,
                                 1, 1, first)  # fmt: skip
            mask = np.zeros((int(np.prod(spatial)), int(np.prod(out))), dtype=np.float32)
            for o, i in pairs:
                mask[i, o] = 1.0
            mask = mask.reshape(*spatial, *out)
            # Broadcast over channels and filters in the kernel's layout.
            if first:
                self._mask = mask.reshape(1, *spatial, 1, *out)
            else:
                self._mask = mask.reshape(*spatial, 1, *out, 1)
        self.kernel = self.add_weight("kernel", shape=kshape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[*out, f], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)  # fmt: skip
        else:
            self.bias = None
        axis = 1 if first else -1
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})

    def _patches_matmul(self, x: Any) -> Any:
        """Implementation 1: gather each output position's patch, one batched matmul."""
        first = self.data_format == "channels_first"
        feature = int(self.kernel.shape[1])
        xs = []
        for pos in itertools.product(*(range(o) for o in self.output_spatial)):
            key = [slice(None)] + ([slice(None)] if first else [])
            key += [slice(p * s, p * s + k) for p, s, k in zip(pos, self.strides,
                                                                self.kernel_size)]  # fmt: skip
            xs.append(math_ops.reshape(x[tuple(key)], (1, -1, feature)))
        y = math_ops.matmul(array_ops.concat(xs, axis=0), self.kernel)  # [P, N, F]
        y = math_ops.reshape(y, (*self.output_spatial, -1, self.filters))
        r = self.rank
        perm = [r, r + 1, *range(r)] if first else [r, *range(r), r + 1]
        return array_ops.transpose(y, perm)

    def _dense_kernel(self) -> Any:
        in_size = int(np.prod(self.input_spatial)) * self.channels
        out_size = int(np.prod(self.output_spatial)) * self.filters
        if self.implementation == 2:
            mask = array_ops.constant(self._mask.astype(self.kernel.dtype.as_numpy_dtype))
            return math_ops.reshape(self.kernel * mask, (in_size, out_size))
        return gather_ops.scatter_nd(array_ops.constant(self._indices), self.kernel,
                                     (in_size, out_size))  # fmt: skip

    def call(self, inputs: Any) -> Any:
        first = self.data_format == "channels_first"
        if self.implementation == 1:
            out = self._patches_matmul(inputs)
        else:
            in_size = int(np.prod(self.input_spatial)) * self.channels
            flat = math_ops.reshape(inputs, (-1, in_size))
            out = math_ops.matmul(flat, self._dense_kernel())
            out_dims = ((self.filters, *self.output_spatial) if first
                        else (*self.output_spatial, self.filters))  # fmt: skip
            out = math_ops.reshape(out, (-1, *out_dims))
        if self.bias is not None:
            b = self.bias
            if first:
                b = array_ops.transpose(b, (self.rank, *range(self.rank)))
            out = out + b
        if self.activation is not activations.linear:
            out = self.activation(out)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        spatial, _ = self._split(shape)
        out = [conv_output_length(n, k, "valid", s)
               for n, k, s in zip(spatial, self.kernel_size, self.strides)]  # fmt: skip
        if self.data_format == "channels_first":
            return TensorShape([shape[0], self.filters, *out])
        return TensorShape([shape[0], *out, self.filters])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": _maybe(regularizers.serialize, self.kernel_regularizer),
            "bias_regularizer": _maybe(regularizers.serialize, self.bias_regularizer),
            "kernel_constraint": _maybe(constraints.serialize, self.kernel_constraint),
            "bias_constraint": _maybe(constraints.serialize, self.bias_constraint),
            "implementation": self.implementation,
        })  # fmt: skip
        return config


class LocallyConnected1D(_LocallyConnected):
    """Unshared-weights 1-D convolution over `(batch, steps, channels)` inputs.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.LocallyConnected1D(2, 3)
    >>> layer(tf.ones((1, 5, 4))).shape, tuple(layer.kernel.shape)
    (TensorShape([1, 3, 2]), (3, 12, 2))
    """

    rank = 1


class LocallyConnected2D(_LocallyConnected):
    """Unshared-weights 2-D convolution over `(batch, rows, cols, channels)` inputs.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.LocallyConnected2D(2, 3, implementation=2)
    >>> layer(tf.ones((1, 4, 5, 3))).shape, tuple(layer.kernel.shape)
    (TensorShape([1, 2, 3, 2]), (4, 5, 3, 2, 3, 2))
    """

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(filters, kernel_size, strides, padding, data_format, **kwargs)
