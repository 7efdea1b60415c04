"""ConvLSTM1D/2D/3D (Keras 2): an LSTM whose input and recurrent transforms are convolutions.

Inputs are `(batch, time, *spatial, channels)` (or `(batch, time, channels, *spatial)` with
`channels_first`). At each step the cell computes, as tf_keras's `ConvLSTMCell` does (gates in
the order i, f, c, o; weights `kernel` [*k, in, 4 * filters], `recurrent_kernel`
[*k, filters, 4 * filters], `bias` [4 * filters]):

    i = rec_act(conv(x, Wi) + conv_same(h, Ui) + bi)      f, o alike
    c = f * c + i * act(conv(x, Wc) + conv_same(h, Uc) + bc)
    h = o * act(c)

The input convolution uses the layer's strides, padding and dilation; the recurrent one is a
stride-1 "same" convolution. Dropout masks are drawn once per sequence while training, as
Keras's `DropoutRNNCellMixin` does. `stateful=True` is not supported (an error says so).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine.arg_checks import check_count
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.convolutional import (
    _maybe,
    conv_output_length,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
)
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import array_ops, compare_ops, math_ops, nn_ops
from layerflow._src.ops.conv_transpose_ops import convolution
from layerflow._src.utils import nest

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


class _ConvLSTMCell(Layer):
    """One step of ConvLSTM; owned by the layer, which runs it over time."""

    def __init__(self, rank: int, filters: int, kernel_size: tuple, strides: tuple, padding: str,
                 data_format: str, dilation_rate: tuple, activation: Any,
                 recurrent_activation: Any, use_bias: bool, kernel_initializer: Any,
                 recurrent_initializer: Any, bias_initializer: Any, unit_forget_bias: bool,
                 kernel_regularizer: Any, recurrent_regularizer: Any, bias_regularizer: Any,
                 kernel_constraint: Any, recurrent_constraint: Any, bias_constraint: Any,
                 dropout: float, recurrent_dropout: float, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.rank, self.filters, self.kernel_size = rank, filters, kernel_size
        self.strides, self.padding, self.data_format = strides, padding, data_format
        self.dilation_rate = dilation_rate
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = bool(use_bias), bool(unit_forget_bias)
        set_weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                           kernel_constraint)  # fmt: skip
        set_weight_options(self, "recurrent", recurrent_initializer, recurrent_regularizer,
                           recurrent_constraint)  # fmt: skip
        set_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.__dict__["_masks"] = {}

    def build(self, input_shape: Any) -> None:
        axis = -1 if self.data_format == "channels_last" else 1
        channels = TensorShape(input_shape)[axis]
        f = self.filters
        self.kernel = self.add_weight("kernel", shape=[*self.kernel_size, channels, 4 * f],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)  # fmt: skip
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", shape=[*self.kernel_size, f, 4 * f],
            initializer=self.recurrent_initializer, regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )  # fmt: skip
        if self.use_bias:
            init = self.bias_initializer
            if self.unit_forget_bias:
                base = self.bias_initializer

                def init(shape: Any, dtype: Any = None, **kw: Any) -> Any:
                    return array_ops.concat([base((f,), dtype=dtype), array_ops.ones((f,), dtype),
                                             base((2 * f,), dtype=dtype)], 0)  # fmt: skip

            self.bias = self.add_weight("bias", shape=[4 * f], initializer=init,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)  # fmt: skip
        else:
            self.bias = None
        self.built = True

    def reset_masks(self) -> None:
        self.__dict__["_masks"] = {}

    def _mask(self, key: str, rate: float, like: Any, training: Any) -> Any:
        if not training or not 0 < rate < 1:
            return None
        masks = self.__dict__["_masks"]
        if key not in masks:
            ones = array_ops.ones(tuple(like.shape), dtype=like.dtype)
            masks[key] = [nn_ops.dropout(ones, rate=rate) for _ in range(4)]
        return masks[key]

    def _fmt(self) -> str:
        return _FORMATS[self.rank][0 if self.data_format == "channels_last" else 1]

    def _bias(self, b: Any) -> Any:
        if self.data_format == "channels_last":
            return b
        return math_ops.reshape(b, (-1,) + (1,) * self.rank)

    def call(self, inputs: Any, states: list, training: Any = None) -> tuple:
        h, c = states
        dp = self._mask("input", self.dropout, inputs, training)
        rdp = self._mask("recurrent", self.recurrent_dropout, h, training)
        ks = array_ops.split(self.kernel, 4, axis=self.rank + 1)
        rs = array_ops.split(self.recurrent_kernel, 4, axis=self.rank + 1)
        bs = array_ops.split(self.bias, 4) if self.bias is not None else [None] * 4
        gates = []
        for g in range(4):
            x = inputs * dp[g] if dp is not None else inputs
            hh = h * rdp[g] if rdp is not None else h
            z = convolution(x, ks[g], self.strides, self.padding.upper(), self._fmt(),
                            self.dilation_rate)  # fmt: skip
            if bs[g] is not None:
                z = z + self._bias(bs[g])
            gates.append(z + convolution(hh, rs[g], 1, "SAME", self._fmt()))
        i = self.recurrent_activation(gates[0])
        f = self.recurrent_activation(gates[1])
        c = f * c + i * self.activation(gates[2])
        o = self.recurrent_activation(gates[3])
        h = o * self.activation(c)
        return h, [h, c]


class _ConvLSTM(Layer):
    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: Any = 1,
                 activation: Any = "tanh", recurrent_activation: Any = "hard_sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, kernel_regularizer: Any = None,
                 recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, **kwargs: Any) -> None:  # fmt: skip
        kwargs.pop("unroll", None)  # a speed hint; steps always run as a Python loop here
        if kwargs.pop("time_major", False):
            raise ValueError(f"{type(self).__name__}: time_major=True is not supported (tf_keras).")
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        owner = f"{type(self).__name__} '{self.name}'"
        if stateful:
            raise ValueError(
                f"{owner}: stateful=True is not supported for ConvLSTM layers in layerflow; "
                "pass the last states back as initial_state instead."
            )
        r = self.rank
        padding = normalize_padding(padding, owner)
        if padding == "causal":
            raise ValueError(f"{owner}: padding must be 'valid' or 'same', got 'causal'.")
        self.cell = _ConvLSTMCell(
            r, check_count(filters, "filters", owner),
            normalize_tuple(kernel_size, r, "kernel_size", owner),
            normalize_tuple(strides, r, "strides", owner), padding,
            normalize_data_format(data_format, owner),
            normalize_tuple(dilation_rate, r, "dilation_rate", owner), activation,
            recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
            bias_initializer, unit_forget_bias, kernel_regularizer, recurrent_regularizer,
            bias_regularizer, kernel_constraint, recurrent_constraint, bias_constraint, dropout,
            recurrent_dropout, dtype=kwargs.get("dtype"),
        )  # fmt: skip
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards = bool(go_backwards)
        # The cell's configuration reads through the layer, as in tf_keras (layer.filters...).
        for key in ("filters", "kernel_size", "strides", "padding", "data_format",
                    "dilation_rate", "activation", "recurrent_activation", "use_bias",
                    "unit_forget_bias", "dropout", "recurrent_dropout"):  # fmt: skip
            self.__dict__[key] = getattr(self.cell, key)
        self.input_spec = InputSpec(ndim=r + 3)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape).as_list()
        step = [shape[0], *shape[2:]]
        axis = -1 if self.cell.data_format == "channels_last" else 1
        if step[axis] is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the channel dimension of the inputs must "
                f"be known, got shape {tuple(shape)}."
            )
        self.cell.build(step)
        self.input_spec = InputSpec(ndim=self.rank + 3, axes={-1 if axis == -1 else 2: step[axis]})
        self.built = True

    def _state_shape(self, step_shape: list) -> list:
        cell = self.cell
        first = cell.data_format == "channels_first"
        spatial = step_shape[2:] if first else step_shape[1:-1]
        out = [conv_output_length(n, k, cell.padding, s, d)
               for n, k, s, d in zip(spatial, cell.kernel_size, cell.strides,
                                     cell.dilation_rate)]  # fmt: skip
        return [step_shape[0], cell.filters, *out] if first else [step_shape[0], *out, cell.filters]

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None) -> Any:  # fmt: skip
        self.cell.reset_masks()
        steps = array_ops.unstack(inputs, axis=1)
        if initial_state is None:
            shape = self._state_shape([int(v) for v in steps[0].shape])
            zeros = array_ops.zeros(shape, dtype=inputs.dtype)
            states = [zeros, zeros]
        else:
            states = list(nest.flatten(initial_state))
            if len(states) != 2:
                raise ValueError(
                    f"{type(self).__name__} '{self.name}': initial_state must be [h, c], got "
                    f"{len(states)} tensor(s)."
                )
        masks = None
        if mask is not None:
            bools = array_ops.unstack(compare_ops.cast(mask, "bool"), axis=1)
            masks = [math_ops.reshape(m, (-1,) + (1,) * (self.rank + 1)) for m in bools]
        order = range(len(steps) - 1, -1, -1) if self.go_backwards else range(len(steps))
        outputs, prev = [], None
        for t in order:
            out, new = self.cell(steps[t], states, training=training)
            if masks is not None:
                new = [math_ops.where(masks[t], a, b) for a, b in zip(new, states)]
                out = math_ops.where(
                    masks[t], out, prev if prev is not None else math_ops.zeros_like(out)
                )
            states, prev = new, out
            outputs.append(out)
        output = array_ops.stack(outputs, axis=1) if self.return_sequences else prev
        return [output, *states] if self.return_state else output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None:
            return None
        out = mask if self.return_sequences else None
        return [out, None, None] if self.return_state else out

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = TensorShape(input_shape).as_list()
        state = TensorShape(self._state_shape([shape[0], *shape[2:]]))
        out = TensorShape([shape[0], shape[1], *state.as_list()[1:]]) if self.return_sequences \
            else state  # fmt: skip
        return [out, state, state] if self.return_state else out

    def get_config(self) -> dict[str, Any]:
        c = self.cell
        config = super().get_config()
        config.update({
            "filters": c.filters, "kernel_size": c.kernel_size, "strides": c.strides,
            "padding": c.padding, "data_format": c.data_format,
            "dilation_rate": c.dilation_rate,
            "activation": activations.serialize(c.activation),
            "recurrent_activation": activations.serialize(c.recurrent_activation),
            "use_bias": c.use_bias,
            "kernel_initializer": initializers.serialize(c.kernel_initializer),
            "recurrent_initializer": initializers.serialize(c.recurrent_initializer),
            "bias_initializer": initializers.serialize(c.bias_initializer),
            "unit_forget_bias": c.unit_forget_bias,
            "kernel_regularizer": _maybe(regularizers.serialize, c.kernel_regularizer),
            "recurrent_regularizer": _maybe(regularizers.serialize, c.recurrent_regularizer),
            "bias_regularizer": _maybe(regularizers.serialize, c.bias_regularizer),
            "kernel_constraint": _maybe(constraints.serialize, c.kernel_constraint),
            "recurrent_constraint": _maybe(constraints.serialize, c.recurrent_constraint),
            "bias_constraint": _maybe(constraints.serialize, c.bias_constraint),
            "dropout": c.dropout, "recurrent_dropout": c.recurrent_dropout,
            "return_sequences": self.return_sequences, "return_state": self.return_state,
            "go_backwards": self.go_backwards, "stateful": False, "unroll": False,
            "time_major": False,
        })  # fmt: skip
        return config


class ConvLSTM1D(_ConvLSTM):
    """ConvLSTM over `(batch, time, steps, channels)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.ConvLSTM1D(2, 3)(tf.ones((1, 4, 6, 3))).shape
    TensorShape([1, 4, 2])
    """

    rank = 1


class ConvLSTM2D(_ConvLSTM):
    """ConvLSTM over `(batch, time, rows, cols, channels)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.ConvLSTM2D(2, 3, padding="same", return_sequences=True)(
    ...     tf.ones((1, 4, 5, 5, 3))).shape
    TensorShape([1, 4, 5, 5, 2])
    """

    rank = 2


class ConvLSTM3D(_ConvLSTM):
    """ConvLSTM over `(batch, time, depth, rows, cols, channels)` inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.ConvLSTM3D(2, 2)(tf.ones((1, 3, 3, 3, 3, 1))).shape
    TensorShape([1, 2, 2, 2, 2])
    """

    rank = 3
