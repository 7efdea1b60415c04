"""Recurrent cells (Keras 2's cell contract) and `StackedRNNCells`.

A cell is a layer with `call(inputs, states, training=None) -> (output, new_states)`, a
`state_size` (an int or a list of ints) and an `output_size`; `tf.keras.layers.RNN` runs it
over time. The built-in cells compute exactly as tf_keras's (`implementation` 1 and 2, gate
order LSTM i, f, c, o; GRU z, r, h; weights `kernel`, `recurrent_kernel`, `bias`), and also
know how to run a whole sequence as one fused op (`ops/rnn_ops.py`), which `RNN` uses when the
cell is a built-in one with its standard activations.

Dropout masks (Keras's `DropoutRNNCellMixin`): a cell draws its input and recurrent dropout
masks once per sequence, while training, and reuses them at every step; `RNN` forgets them at
the start of each call (`reset_dropout_mask`, `reset_recurrent_dropout_mask`).

Import cycle (layers, recurrent, rnn_wrappers): `deserialize_layer`, with which `recurrent`'s
`RNN` and `rnn_wrappers`' wrappers rebuild the layers nested in their configs, reads the
built-in classes from the `layers` package, which imports those modules. It imports the
package when called, never at import time (as `Sequential.from_config` does).
"""

from __future__ import annotations

import inspect
from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.keras.serialization import deserialize_keras_object, serialize_keras_object
from layerflow._src.ops import array_ops, dense_ops, math_ops, nn_ops, rnn_ops
from layerflow._src.utils import nest

__all__ = ["AbstractRNNCell", "GRUCell", "LSTMCell", "SimpleRNNCell", "StackedRNNCells"]


def _maybe(fn: Any, value: Any) -> Any:
    return None if value is None else fn(value)


def zero_state(cell: Any, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> Any:
    """Zeros shaped like `cell.state_size` for `batch_size` rows (Keras's zero-filled state)."""
    if inputs is not None:
        batch_size = inputs.shape[0]
        dtype = inputs.dtype if dtype is None else dtype
    if batch_size is None:
        raise ValueError(
            f"{type(cell).__name__}.get_initial_state needs `batch_size=` (or `inputs=`) to know "
            "how many rows the state has."
        )
    dtype = dtype or getattr(cell, "dtype", None) or "float32"

    def zeros(size: Any) -> Any:
        return array_ops.zeros([int(batch_size)] + TensorShape(size).as_list(), dtype=dtype)

    size = cell.state_size
    if nest.is_nested(size):
        return nest.map_structure(zeros, size)
    return zeros(size)


class AbstractRNNCell(Layer):
    """Base of custom cells: subclasses define `state_size`, `output_size` and `call`.

    >>> import layerflow as tf
    >>> class Twice(tf.keras.layers.AbstractRNNCell):
    ...     state_size = 1
    ...     output_size = 1
    ...     def call(self, inputs, states):
    ...         h = states[0] + 2 * inputs
    ...         return h, [h]
    >>> tf.keras.layers.RNN(Twice())(tf.ones((1, 3, 1))).numpy()
    array([[6.]], dtype=float32)
    """

    @property
    def state_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define state_size.")

    @property
    def output_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define output_size.")

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:  # fmt: skip
        return zero_state(self, inputs, batch_size, dtype)


class _Cell(AbstractRNNCell):
    """What the built-in cells share: configuration, dropout masks, the fused sequence."""

    _gates = 1
    # Subclasses: the op's name for `_fusable` and the weights' shapes.

    def __init__(self, units: int, activation: Any, recurrent_activation: Any, use_bias: bool,
                 kernel_initializer: Any, recurrent_initializer: Any, bias_initializer: Any,
                 kernel_regularizer: Any, recurrent_regularizer: Any, bias_regularizer: Any,
                 kernel_constraint: Any, recurrent_constraint: Any, bias_constraint: Any,
                 dropout: float, recurrent_dropout: float, **kwargs: Any) -> None:  # fmt: skip
        implementation = kwargs.pop("implementation", 2)
        kwargs.pop("enable_caching_device", None)
        super().__init__(**kwargs)
        try:
            units = int(units) if not isinstance(units, bool) else -1
        except (TypeError, ValueError):
            units = -1
        if units <= 0:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': units must be a positive integer, got "
                f"{units!r}."
            )
        self.units = units
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        set_weight_options(
            self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint
        )
        set_weight_options(
            self, "recurrent", recurrent_initializer, recurrent_regularizer, recurrent_constraint
        )
        set_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        # Keras 2: recurrent dropout runs the per-gate form (`implementation=1`).
        self.implementation = 1 if self.recurrent_dropout != 0 else implementation
        self.__dict__["_dropout_mask"] = None
        self.__dict__["_recurrent_dropout_mask"] = None

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    # --- dropout masks (DropoutRNNCellMixin) ---------------------------------------------------
    def reset_dropout_mask(self) -> None:
        self.__dict__["_dropout_mask"] = None

    def reset_recurrent_dropout_mask(self) -> None:
        self.__dict__["_recurrent_dropout_mask"] = None

    def _masks(self, key: str, rate: float, like: Any, training: Any, count: int) -> Any:
        if not training or not 0 < rate < 1:
            return None  # Keras multiplies by ones here: the same values
        cached = self.__dict__[key]
        rows = tuple(like.shape)
        if cached is None or tuple(cached[0].shape) != rows:
            ones = array_ops.ones(rows, dtype=like.dtype)
            cached = [nn_ops.dropout(ones, rate=rate) for _ in range(count)]
            self.__dict__[key] = cached
        return cached

    def get_dropout_mask_for_cell(self, inputs: Any, training: Any, count: int = 1) -> Any:
        """The input dropout masks of this sequence (a list of `count`), or None."""
        return self._masks("_dropout_mask", self.dropout, inputs, training, count)

    def get_recurrent_dropout_mask_for_cell(self, inputs: Any, training: Any,
                                            count: int = 1) -> Any:  # fmt: skip
        """The recurrent dropout masks of this sequence (a list of `count`), or None."""
        return self._masks("_recurrent_dropout_mask", self.recurrent_dropout, inputs, training,
                           count)  # fmt: skip

    # --- weights ------------------------------------------------------------------------------
    def _bias_shape(self) -> tuple[int, ...]:
        return (self._gates * self.units,)

    def _bias_initializer(self) -> Any:
        return self.bias_initializer

    def build(self, input_shape: Any) -> None:
        dim = TensorShape(input_shape)[-1]
        if dim is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' needs inputs whose last dimension is known, "
                f"got shape {input_shape}."
            )
        n = self._gates * self.units
        self.kernel = self.add_weight(
            "kernel", shape=(dim, n), initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
        )  # fmt: skip
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", shape=(self.units, n), initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint,
        )  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", shape=self._bias_shape(), initializer=self._bias_initializer(),
                regularizer=self.bias_regularizer, constraint=self.bias_constraint,
            )  # fmt: skip
        else:
            self.bias = None

    # --- the fused whole-sequence path ---------------------------------------------------------
    def _fusable(self) -> bool:
        """Whether `RNN` may run this cell as one sequence op: a built-in cell whose `call` is
        not overridden, with the activations the op implements."""
        for own in (SimpleRNNCell, LSTMCell, GRUCell):
            if isinstance(self, own):
                return type(self).call is own.call and self._fused_activations()
        return False

    def _fused_activations(self) -> bool:
        return (
            self.activation is activations.tanh and self.recurrent_activation is activations.sigmoid
        )

    def _projection(self, inputs: Any, training: Any, time_major: bool, bias: Any) -> Any:
        """`inputs @ kernel + bias` for every step at once (dropout masks applied per gate)."""
        shape = list(inputs.shape)
        masks = None
        if training and 0 < self.dropout < 1:
            step = inputs[0] if time_major else inputs[:, 0]
            masks = self.get_dropout_mask_for_cell(step, training, count=self._gates)

        def project(x: Any, kernel: Any, b: Any) -> Any:
            flat = array_ops.reshape(x, (-1, shape[-1]))
            out = math_ops.matmul(flat, kernel) if b is None else dense_ops.dense(flat, kernel, b)
            return array_ops.reshape(out, shape[:-1] + [int(kernel.shape[-1])])

        def dropped(m: Any) -> Any:
            return inputs * (array_ops.expand_dims(m, 0 if time_major else 1))

        if masks is None:
            return project(inputs, self.kernel, bias)
        if self.implementation != 1 or self._gates == 1:
            return project(dropped(masks[0]), self.kernel, bias)
        n = self.units
        parts = [
            project(dropped(masks[g]), self.kernel[:, g * n : (g + 1) * n],
                    None if bias is None else bias[g * n : (g + 1) * n])
            for g in range(self._gates)
        ]  # fmt: skip
        return array_ops.concat(parts, -1)

    def _recurrent_masks(self, h0: Any, training: Any) -> Any:
        masks = self.get_recurrent_dropout_mask_for_cell(h0, training, count=self._gates)
        return None if masks is None else array_ops.stack(masks[: self._gates])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(regularizers.serialize, self.kernel_regularizer),
                "recurrent_regularizer": _maybe(regularizers.serialize, self.recurrent_regularizer),
                "bias_regularizer": _maybe(regularizers.serialize, self.bias_regularizer),
                "kernel_constraint": _maybe(constraints.serialize, self.kernel_constraint),
                "recurrent_constraint": _maybe(constraints.serialize, self.recurrent_constraint),
                "bias_constraint": _maybe(constraints.serialize, self.bias_constraint),
                "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout,
                "implementation": self.implementation,
            }
        )
        return config


def _first(states: Any) -> Any:
    return states[0] if nest.is_nested(states) else states


class SimpleRNNCell(_Cell):
    """One step of a fully-connected RNN: `h = activation(x @ kernel + h @ recurrent_kernel + b)`.

    >>> import layerflow as tf
    >>> cell = tf.keras.layers.SimpleRNNCell(4)
    >>> out, state = cell(tf.ones((2, 3)), [tf.zeros((2, 4))])
    >>> out.shape, len(state)
    (TensorShape([2, 4]), 1)
    """

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(units, activation, None, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer,
                         recurrent_regularizer, bias_regularizer, kernel_constraint,
                         recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         **kwargs)  # fmt: skip

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        prev = _first(states)
        dp = self.get_dropout_mask_for_cell(inputs, training)
        rec = self.get_recurrent_dropout_mask_for_cell(prev, training)
        h = math_ops.matmul(inputs if dp is None else inputs * dp[0], self.kernel)
        if self.bias is not None:
            h = h + self.bias
        if rec is not None:
            prev = prev * rec[0]
        output = self.activation(h + math_ops.matmul(prev, self.recurrent_kernel))
        return output, ([output] if nest.is_nested(states) else output)

    _ACTIVATIONS = {
        "tanh": activations.tanh,
        "relu": activations.relu,
        "linear": activations.linear,
    }

    def _fused_activations(self) -> bool:
        return any(self.activation is f for f in self._ACTIVATIONS.values())

    def _sequence(self, inputs: Any, states: list, mask: Any, training: Any, seq: dict) -> Any:
        xw = self._projection(inputs, training, seq["time_major"], self.bias)
        name = next(k for k, f in self._ACTIVATIONS.items() if self.activation is f)
        y, h = rnn_ops.simple_rnn_sequence(
            xw, states[0], self.recurrent_kernel, activation=name, mask=mask,
            recurrent_masks=self._recurrent_masks(states[0], training), **seq,
        )  # fmt: skip
        return y, [h]

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        for key in ("recurrent_activation", "implementation"):
            config.pop(key)
        return config


class LSTMCell(_Cell):
    """One LSTM step (Hochreiter 1997), Keras's gate order i, f, c, o; state `[h, c]`.

    >>> import layerflow as tf
    >>> cell = tf.keras.layers.LSTMCell(4)
    >>> h, (h2, c) = cell(tf.ones((2, 3)), [tf.zeros((2, 4)), tf.zeros((2, 4))])
    >>> h.shape, c.shape
    (TensorShape([2, 4]), TensorShape([2, 4]))
    """

    _gates = 4

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, kernel_regularizer: Any = None,
                 recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 kernel_constraint: Any = None, recurrent_constraint: Any = None,
                 bias_constraint: Any = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer,
                         recurrent_regularizer, bias_regularizer, kernel_constraint,
                         recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         **kwargs)  # fmt: skip
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self) -> list[int]:
        return [self.units, self.units]

    def _bias_initializer(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        init, n = self.bias_initializer, self.units

        def forget_ones(shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
            # Keras 2: the forget gate's bias starts at one (Jozefowicz et al. 2015).
            parts = [init((n,), dtype=dtype), array_ops.ones((n,), dtype=dtype or self.dtype),
                     init((2 * n,), dtype=dtype)]  # fmt: skip
            return array_ops.concat(parts, 0)

        return forget_ones

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        h_tm1, c_tm1 = states[0], states[1]
        dp = self.get_dropout_mask_for_cell(inputs, training, count=4)
        rec = self.get_recurrent_dropout_mask_for_cell(h_tm1, training, count=4)
        n = self.units
        if self.implementation == 1:
            xs = [inputs if dp is None else inputs * dp[g] for g in range(4)]
            hs = [h_tm1 if rec is None else h_tm1 * rec[g] for g in range(4)]
            z = []
            for g in range(4):
                zg = math_ops.matmul(xs[g], self.kernel[:, g * n : (g + 1) * n])
                if self.bias is not None:
                    zg = zg + self.bias[g * n : (g + 1) * n]
                z.append(zg + math_ops.matmul(hs[g], self.recurrent_kernel[:, g * n : (g + 1) * n]))
        else:
            x = inputs if dp is None else inputs * dp[0]
            zz = math_ops.matmul(x, self.kernel) + math_ops.matmul(h_tm1, self.recurrent_kernel)
            if self.bias is not None:
                zz = zz + self.bias
            z = array_ops.split(zz, 4, axis=1)
        i = self.recurrent_activation(z[0])
        f = self.recurrent_activation(z[1])
        c = f * c_tm1 + i * self.activation(z[2])
        o = self.recurrent_activation(z[3])
        h = o * self.activation(c)
        return h, [h, c]

    def _sequence(self, inputs: Any, states: list, mask: Any, training: Any, seq: dict) -> Any:
        xw = self._projection(inputs, training, seq["time_major"], self.bias)
        y, h, c = rnn_ops.lstm_sequence(
            xw, states[0], states[1], self.recurrent_kernel, mask=mask,
            recurrent_masks=self._recurrent_masks(states[0], training), **seq,
        )  # fmt: skip
        return y, [h, c]

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """One GRU step (Cho et al. 2014), Keras's gate order z, r, h.

    `reset_after=True` (Keras 2's default, cuDNN-compatible) applies the reset gate after the
    recurrent matmul and has a separate recurrent bias: `bias` is `(2, 3 * units)`.

    >>> import layerflow as tf
    >>> cell = tf.keras.layers.GRUCell(4)
    >>> out, state = cell(tf.ones((2, 3)), [tf.zeros((2, 4))])
    >>> out.shape, cell.bias.shape
    (TensorShape([2, 4]), TensorShape([2, 12]))
    """

    _gates = 3

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, reset_after: bool = True,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer,
                         recurrent_regularizer, bias_regularizer, kernel_constraint,
                         recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         **kwargs)  # fmt: skip
        self.reset_after = bool(reset_after)

    def _bias_shape(self) -> tuple[int, ...]:
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _biases(self) -> tuple[Any, Any]:
        if self.bias is None:
            return None, None
        if self.reset_after:
            return self.bias[0], self.bias[1]
        return self.bias, None

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        h_tm1 = _first(states)
        dp = self.get_dropout_mask_for_cell(inputs, training, count=3)
        rec = self.get_recurrent_dropout_mask_for_cell(h_tm1, training, count=3)
        n = self.units
        b_in, b_rec = self._biases()
        per_gate = self.implementation == 1
        xs = [inputs if dp is None else inputs * dp[g if per_gate else 0] for g in range(3)]
        hs = [h_tm1 if rec is None else h_tm1 * rec[g] for g in range(3)]

        def block(w: Any, g: int) -> Any:
            return w[:, g * n : (g + 1) * n]

        x = [math_ops.matmul(xs[g], block(self.kernel, g)) for g in range(3)]
        if b_in is not None:
            x = [x[g] + b_in[g * n : (g + 1) * n] for g in range(3)]
        rz = [math_ops.matmul(hs[g], block(self.recurrent_kernel, g)) for g in range(2)]
        if b_rec is not None:
            rz = [rz[g] + b_rec[g * n : (g + 1) * n] for g in range(2)]
        z = self.recurrent_activation(x[0] + rz[0])
        r = self.recurrent_activation(x[1] + rz[1])
        if self.reset_after:
            rh = math_ops.matmul(hs[2], block(self.recurrent_kernel, 2))
            if b_rec is not None:
                rh = rh + b_rec[2 * n :]
            rh = r * rh
        else:
            rh = math_ops.matmul(r * hs[2], block(self.recurrent_kernel, 2))
        hh = self.activation(x[2] + rh)
        h = z * h_tm1 + (1 - z) * hh
        return h, ([h] if nest.is_nested(states) else h)

    def _sequence(self, inputs: Any, states: list, mask: Any, training: Any, seq: dict) -> Any:
        b_in, b_rec = self._biases()
        xw = self._projection(inputs, training, seq["time_major"], b_in)
        if b_rec is None:
            b_rec = array_ops.zeros((3 * self.units,), dtype=xw.dtype)
        y, h = rnn_ops.gru_sequence(
            xw, states[0], self.recurrent_kernel, b_rec, reset_after=self.reset_after,
            mask=mask, recurrent_masks=self._recurrent_masks(states[0], training), **seq,
        )  # fmt: skip
        return y, [h]

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Cells run one after another at each step, as one cell (a deep RNN).

    >>> import layerflow as tf
    >>> cells = [tf.keras.layers.LSTMCell(4), tf.keras.layers.GRUCell(3)]
    >>> rnn = tf.keras.layers.RNN(tf.keras.layers.StackedRNNCells(cells))
    >>> rnn(tf.ones((2, 5, 6))).shape
    TensorShape([2, 3])
    """

    def __init__(self, cells: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
                raise ValueError(
                    f"StackedRNNCells: every cell needs a `call` method and a `state_size`; "
                    f"got {cell!r}."
                )
        self.cells = list(cells)

    @property
    def state_size(self) -> tuple:
        return tuple(c.state_size for c in self.cells)

    @property
    def output_size(self) -> Any:
        last = self.cells[-1]
        if getattr(last, "output_size", None) is not None:
            return last.output_size
        return nest.flatten(last.state_size)[0]

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> tuple:  # fmt: skip
        out = []
        for cell in self.cells:
            fn = getattr(cell, "get_initial_state", None)
            if fn is None:
                out.append(zero_state(cell, inputs, batch_size, dtype))
            else:
                out.append(fn(inputs=inputs, batch_size=batch_size, dtype=dtype))
        return tuple(out)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                cell.build(shape)
            size = getattr(cell, "output_size", None)
            if size is None:
                size = nest.flatten(cell.state_size)[0]
            shape = TensorShape([shape[0], int(size)])

    def call(self, inputs: Any, states: Any, constants: Any = None, training: Any = None) -> Any:
        flat = nest.flatten(states)
        new_states = []
        start = 0
        for cell in self.cells:
            count = len(nest.flatten(cell.state_size))
            own = flat[start : start + count]
            start += count
            kwargs = {"training": training} if _takes(cell, "training") else {}
            if constants is not None and _takes(cell, "constants"):
                kwargs["constants"] = constants
            inputs, st = cell(inputs, own, **kwargs)
            new_states.append(st if nest.is_nested(st) else [st])
        packed = [s if nest.is_nested(c.state_size) else s[0]
                  for s, c in zip(new_states, self.cells)]  # fmt: skip
        return inputs, tuple(packed)

    def _fusable(self) -> bool:
        return all(getattr(c, "_fusable", lambda: False)() for c in self.cells)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "cells": [serialize_keras_object(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        config = dict(config)
        cells = [deserialize_layer(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def deserialize_layer(config: Any, custom_objects: dict | None = None) -> Any:
    """A layer (or cell) from its `{"class_name", "config"}`: built-ins and registered ones."""
    from layerflow._src.keras import layers as layers_module  # the registry of built-ins

    objects = {n: getattr(layers_module, n) for n in dir(layers_module) if n[:1].isupper()}
    return deserialize_keras_object(config, objects, custom_objects, printable_module_name="layer")


def _takes(cell: Any, name: str) -> bool:
    try:
        return name in inspect.signature(cell.call).parameters
    except (TypeError, ValueError):
        return False
