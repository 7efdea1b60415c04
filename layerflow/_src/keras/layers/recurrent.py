"""`RNN`, the layer that runs a cell over time, and `SimpleRNN`, `LSTM`, `GRU` (Keras 2).

`RNN(cell)` follows tf_keras's `RNN`: inputs `(batch, time, features)` (`(time, batch, ...)`
with `time_major`), `return_sequences`, `return_state`, `go_backwards` (outputs come in the
processing order, as in Keras), `stateful` with `reset_states`, `initial_state` (also as the
second positional argument, as d2l writes `rnn(X, state)`), `constants`, and `mask=`: a
masked step keeps the states and outputs the previous output (zeros before the first unmasked
step, or always zeros with `zero_output_for_mask=True`).

Two ways to run: a built-in cell (`SimpleRNNCell`, `LSTMCell`, `GRUCell`, or a
`StackedRNNCells` of them) with its standard activations runs the whole sequence as one fused
op per cell (`ops/rnn_ops.py`: one GEMM for the input projection of all steps, one recurrent
GEMM per step, back-propagation through time as one gradient op). Any other cell -- a custom
cell, a subclass that overrides `call`, other activations, `constants` -- is called step by
step, composing ordinary ops on the tape, exactly as Keras 2 does. Both give the same numbers.
`unroll` is accepted and changes nothing in eager execution.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import Variable
from layerflow._src.keras import regularizers
from layerflow._src.keras.engine import input_spec as input_spec_mod
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.engine.keras_tensor import is_symbolic
from layerflow._src.keras.layers.rnn_cells import (
    AbstractRNNCell,
    GRUCell,
    LSTMCell,
    SimpleRNNCell,
    StackedRNNCells,
    _maybe,
    _takes,
    deserialize_layer,
    zero_state,
)
from layerflow._src.keras.layers.rnn_wrappers import Bidirectional, TimeDistributed, Wrapper
from layerflow._src.keras.serialization import serialize_keras_object
from layerflow._src.ops import array_ops, math_ops
from layerflow._src.ops.ragged import ragged_convert
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.utils import nest

# The recurrent family in one place (the cells and wrappers live in their own modules).
__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "AbstractRNNCell",
    "Bidirectional",
    "GRUCell",
    "LSTMCell",
    "SimpleRNN",
    "SimpleRNNCell",
    "StackedRNNCells",
    "TimeDistributed",
    "Wrapper",
]


def _state_sizes(cell: Any) -> list[int]:
    return [int(TensorShape(s)[-1]) if not isinstance(s, int) else s
            for s in nest.flatten(cell.state_size)]  # fmt: skip


def _output_size(cell: Any) -> int:
    size = getattr(cell, "output_size", None)
    return int(size) if size is not None else _state_sizes(cell)[0]


def _is_shape_list(shape: Any) -> bool:
    return isinstance(shape, list) and bool(shape) and not isinstance(shape[0], int | type(None))


class RNN(Layer):
    """Run a recurrent `cell` over the time axis of its inputs.

    >>> import layerflow as tf
    >>> rnn = tf.keras.layers.RNN(tf.keras.layers.LSTMCell(4), return_sequences=True,
    ...                           return_state=True)
    >>> y, h, c = rnn(tf.ones((2, 5, 3)))
    >>> y.shape, h.shape
    (TensorShape([2, 5, 4]), TensorShape([2, 4]))
    """

    def __init__(self, cell: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 time_major: bool = False, **kwargs: Any) -> None:  # fmt: skip
        if isinstance(cell, list | tuple):
            cell = StackedRNNCells(cell)
        if not callable(getattr(cell, "call", None)):
            raise ValueError(
                f"Argument `cell` should have a `call` method. The RNN was passed: cell={cell!r}"
            )
        if not hasattr(cell, "state_size"):
            raise ValueError(
                "The RNN cell should have a `state_size` attribute (tuple of integers, one "
                f"integer per RNN state). Received: cell={cell!r}"
            )
        zero_output = bool(kwargs.pop("zero_output_for_mask", False))
        if "input_shape" not in kwargs and ("input_dim" in kwargs or "input_length" in kwargs):
            length, dim = kwargs.pop("input_length", None), kwargs.pop("input_dim", None)
            kwargs["input_shape"] = (length, dim)
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.unroll = bool(unroll)
        self.time_major = bool(time_major)
        self.zero_output_for_mask = zero_output
        self.supports_masking = True
        d = self.__dict__
        d["_stateful"] = bool(stateful)
        d["_states"] = None
        d["_state_batch"] = None
        d["_num_constants"] = 0

    # --- properties ---------------------------------------------------------------------------
    @property
    def stateful(self) -> bool:
        return self._stateful

    @stateful.setter
    def stateful(self, value: bool) -> None:
        self.__dict__["_stateful"] = bool(value)

    @property
    def states(self) -> list:
        """The stateful layer's state variables (None entries before they exist)."""
        if self._states is None:
            n = len(_state_sizes(self.cell))
            return [None] * n
        return list(self._states)

    # --- calling ------------------------------------------------------------------------------
    def __call__(self, inputs: Any, initial_state: Any = None, constants: Any = None,
                 **kwargs: Any) -> Any:  # fmt: skip
        if is_symbolic(initial_state) or is_symbolic(constants):
            # The functional API records the states as inputs of the layer (as Keras 2 does).
            extra_states = nest.flatten(initial_state) if initial_state is not None else []
            extra_consts = nest.flatten(constants) if constants is not None else []
            self.__dict__["_num_constants"] = len(extra_consts)
            return self._call_list([inputs, *extra_states, *extra_consts], kwargs)
        if initial_state is not None:
            kwargs["initial_state"] = initial_state
        if constants is not None:
            kwargs["constants"] = constants
        if isinstance(inputs, list) and len(inputs) > 1:
            return self._call_list(inputs, kwargs)
        if isinstance(inputs, RaggedTensor):  # padded, with the mask of its row lengths
            return ragged_convert.call_padded(super().__call__, inputs, self.return_sequences,
                                              kwargs)  # fmt: skip
        return super().__call__(inputs, **kwargs)

    def _call_list(self, inputs: list, kwargs: dict) -> Any:
        # The input spec describes the sequence alone: check it here, not against the list.
        spec = self.__dict__["_input_spec"]
        if spec is not None:
            input_spec_mod.assert_input_compatibility(spec, inputs[0], self)
        self.__dict__["_input_spec"] = None
        try:
            return super().__call__(inputs, **kwargs)
        finally:
            if self.__dict__["_input_spec"] is None:
                self.__dict__["_input_spec"] = spec

    def _split_inputs(self, inputs: Any, initial_state: Any, constants: Any) -> tuple:
        if isinstance(inputs, list):
            k = self._num_constants
            if k:
                initial_state, constants = inputs[1:-k], inputs[-k:]
            else:
                initial_state = inputs[1:]
            initial_state = initial_state or None
            inputs = inputs[0]
        return inputs, initial_state, constants

    def build(self, input_shape: Any) -> None:
        if _is_shape_list(input_shape):
            input_shape = input_shape[0]
        shape = TensorShape(input_shape)
        if shape.rank != 3:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' expects inputs of rank 3, (batch, time, "
                f"features){' in time-major order' if self.time_major else ''}; got shape {shape}."
            )
        batch, steps = (shape[1], shape[0]) if self.time_major else (shape[0], shape[1])
        if self.unroll and steps is None:
            raise ValueError(
                "Cannot unroll a RNN if the time dimension is undefined: pass an `input_shape` "
                "with the number of steps to the first layer, or a `shape` with it to "
                "tf.keras.Input."
            )
        step_shape = TensorShape([batch, shape[-1]])
        if isinstance(self.cell, Layer) and not self.cell.built:
            self.cell.build(step_shape)
        self.input_spec = InputSpec(ndim=3, axes={-1: shape[-1]})
        if self.stateful:
            if batch is None:
                raise ValueError(
                    f"{type(self).__name__} '{self.name}' is stateful, so it needs to know its "
                    "batch size: pass `batch_input_shape=(batch, time, features)` (or "
                    "`batch_size=`) to the first layer, or `batch_size=` to tf.keras.Input."
                )
            self.__dict__["_state_batch"] = int(batch)
            self.reset_states()

    def call(self, inputs: Any, mask: Any = None, training: Any = None, initial_state: Any = None,
             constants: Any = None) -> Any:  # fmt: skip
        inputs, initial_state, constants = self._split_inputs(inputs, initial_state, constants)
        if inputs.ndim != 3:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' expects inputs of rank 3, got shape "
                f"{tuple(inputs.shape)}."
            )
        if mask is not None:
            mask = nest.flatten(mask)[0]
        cells = self.cell.cells if isinstance(self.cell, StackedRNNCells) else [self.cell]
        for cell in cells:
            for reset in ("reset_dropout_mask", "reset_recurrent_dropout_mask"):
                if hasattr(cell, reset):
                    getattr(cell, reset)()
        states = self._initial_states(inputs, initial_state)
        fusable = getattr(self.cell, "_fusable", None)
        if constants is None and fusable is not None and fusable():
            output, new_states = self._run_fused(cells, inputs, states, mask, training)
        else:
            output, new_states = self._run_steps(inputs, states, mask, training, constants)
        if self.stateful:
            for var, value in zip(self._states, new_states):
                var.assign(value)
        if not self.return_state:
            return output
        return [output, *self._pack_states(new_states)]

    def _pack_states(self, flat: list) -> list:
        if isinstance(self.cell, StackedRNNCells):
            out, start = [], 0
            for cell in self.cell.cells:
                n = len(_state_sizes(cell))
                own = flat[start : start + n]
                start += n
                out.append(list(own) if nest.is_nested(cell.state_size) else own[0])
            return out
        return list(flat)

    def _initial_states(self, inputs: Any, initial_state: Any) -> list:
        sizes = _state_sizes(self.cell)
        batch = inputs.shape[1] if self.time_major else inputs.shape[0]
        if self.stateful:
            stored = self._states
            if int(batch) != self._state_batch:
                raise ValueError(
                    f"{type(self).__name__} '{self.name}' is stateful with batch size "
                    f"{self._state_batch}, but got a batch of {batch} rows. A stateful RNN keeps "
                    "one state per row: feed batches of the same size (drop the remainder)."
                )
            # Keras 2: a given initial state is used only while the stored states are zeros.
            if initial_state is None or any(np.any(v.numpy()) for v in stored):
                return [array_ops.identity(v) for v in stored]
        if initial_state is None:
            fn = getattr(self.cell, "get_initial_state", None)
            if fn is None:
                init = zero_state(self.cell, None, batch, inputs.dtype)
            else:
                init = fn(inputs=None, batch_size=batch, dtype=inputs.dtype)
            flat = nest.flatten(init)
        else:
            flat = nest.flatten(initial_state)
        if len(flat) != len(sizes):
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the cell has {len(sizes)} state(s) "
                f"(state_size={self.cell.state_size}), but {len(flat)} initial state tensor(s) "
                "were given. Pass one tensor of shape (batch, size) per state."
            )
        out = []
        for i, (s, size) in enumerate(zip(flat, sizes)):
            s = self._convert_one(s)
            if tuple(s.shape) != (batch, size):
                raise ValueError(
                    f"{type(self).__name__} '{self.name}': initial state {i} must have shape "
                    f"({batch}, {size}) for a batch of {batch}, got {tuple(s.shape)}."
                )
            out.append(s)
        return out

    def _seq_flags(self, first: bool, last: bool) -> dict:
        return {
            "time_major": self.time_major,
            "go_backwards": self.go_backwards and first,
            "return_sequences": self.return_sequences or not last,
            "zero_output_for_mask": self.zero_output_for_mask,
        }

    def _run_fused(self, cells: list, inputs: Any, states: list, mask: Any,
                   training: Any) -> tuple[Any, list]:  # fmt: skip
        if mask is not None:
            mask = math_ops.cast(mask, "bool")
        y, start, new_states = inputs, 0, []
        for i, cell in enumerate(cells):
            n = len(_state_sizes(cell))
            if i == 1 and self.go_backwards and mask is not None:
                # Later cells read the first one's outputs, which are in processing order.
                mask = mask[::-1] if self.time_major else mask[:, ::-1]
            flags = self._seq_flags(i == 0, i == len(cells) - 1)
            y, st = cell._sequence(y, states[start : start + n], mask, training, flags)
            start += n
            new_states += st
        return y, new_states

    def _run_steps(self, inputs: Any, states: list, mask: Any, training: Any,
                   constants: Any) -> tuple[Any, list]:  # fmt: skip
        axis = 0 if self.time_major else 1
        steps = array_ops.unstack(inputs, axis=axis)
        masks = None
        if mask is not None:
            bools = array_ops.unstack(math_ops.cast(mask, "bool"), axis=axis)
            masks = [array_ops.expand_dims(m, -1) for m in bools]
        cell = self.cell
        kwargs = {}
        if _takes(cell, "training"):
            kwargs["training"] = training
        if constants is not None:
            if not _takes(cell, "constants"):
                raise ValueError(
                    f"RNN cell {cell!r} does not support constants: its call() has no "
                    "`constants` argument."
                )
            kwargs["constants"] = list(nest.flatten(constants))
        run = cell if isinstance(cell, Layer) else cell.call
        order = range(len(steps) - 1, -1, -1) if self.go_backwards else range(len(steps))
        prev, outputs = None, []
        for t in order:
            out, new = run(steps[t], list(states), **kwargs)
            new = nest.flatten(new)
            if len(new) != len(states):
                raise ValueError(
                    f"RNN cell {type(cell).__name__} returned {len(new)} state(s), but its "
                    f"state_size {cell.state_size} declares {len(states)}."
                )
            if masks is not None:
                m = masks[t]
                new = [math_ops.where(m, a, b) for a, b in zip(new, states)]
                if self.zero_output_for_mask or prev is None:
                    out = math_ops.where(m, out, math_ops.zeros_like(out))
                else:
                    out = math_ops.where(m, out, prev)
            states, prev = new, out
            if self.return_sequences:
                outputs.append(out)
        output = array_ops.stack(outputs, axis=axis) if self.return_sequences else prev
        return output, list(states)

    # --- state --------------------------------------------------------------------------------
    def reset_states(self, states: Any = None) -> None:
        """Zero the states of a stateful RNN, or set them to `states` (one array per state)."""
        if not self.stateful:
            raise AttributeError(f"{type(self).__name__} '{self.name}': layer must be stateful.")
        batch = self._state_batch
        if batch is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' is not built yet, so its batch size is "
                "unknown: call it on a batch first (or build it) before reset_states()."
            )
        sizes = _state_sizes(self.cell)
        values = [None] * len(sizes) if states is None else nest.flatten(states)
        if len(values) != len(sizes):
            raise ValueError(
                f"{type(self).__name__} '{self.name}' expects {len(sizes)} state(s), got "
                f"{len(values)}."
            )
        arrays = []
        for i, (value, size) in enumerate(zip(values, sizes)):
            arr = np.zeros((batch, size), dtype=self.dtype) if value is None else np.asarray(value)
            if arr.shape != (batch, size):
                raise ValueError(
                    f"{type(self).__name__} '{self.name}': state {i} must have shape "
                    f"({batch}, {size}), got {arr.shape}."
                )
            arrays.append(arr.astype(self.dtype))
        if self._states is None:
            self.__dict__["_states"] = [
                Variable(a, trainable=False, name=f"{self.name}/state_{i}")
                for i, a in enumerate(arrays)
            ]
        else:
            for var, a in zip(self._states, arrays):
                var.assign(a)

    # --- shapes and config --------------------------------------------------------------------
    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The time-step mask goes on with the output sequence; a last output has none."""
        if isinstance(mask, list):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(_state_sizes(self.cell))
        return out

    def compute_output_shape(self, input_shape: Any) -> Any:
        if _is_shape_list(input_shape):
            input_shape = input_shape[0]
        shape = TensorShape(input_shape)
        batch, steps = (shape[1], shape[0]) if self.time_major else (shape[0], shape[1])
        units = _output_size(self.cell)
        if self.return_sequences:
            dims = [steps, batch, units] if self.time_major else [batch, steps, units]
        else:
            dims = [batch, units]
        out = TensorShape(dims)
        if not self.return_state:
            return out
        return [out] + [TensorShape([batch, s]) for s in _state_sizes(self.cell)]

    def _rnn_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "return_sequences": self.return_sequences,
                "return_state": self.return_state,
                "go_backwards": self.go_backwards,
                "stateful": self.stateful,
                "unroll": self.unroll,
                "time_major": self.time_major,
            }
        )
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = True
        if self._num_constants:
            config["num_constants"] = self._num_constants
        return config

    def get_config(self) -> dict[str, Any]:
        return {**self._rnn_config(), "cell": serialize_keras_object(self.cell)}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        config = dict(config)
        cell = deserialize_layer(config.pop("cell"), custom_objects)
        num_constants = config.pop("num_constants", 0)
        layer = cls(cell, **config)
        layer.__dict__["_num_constants"] = num_constants
        return layer


# --- the built-in layers: an RNN over their own cell -----------------------------------------

_CELL_KEYS = ("units", "activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "kernel_regularizer",
              "recurrent_regularizer", "bias_regularizer", "kernel_constraint",
              "recurrent_constraint", "bias_constraint", "dropout", "recurrent_dropout",
              "implementation", "unit_forget_bias", "reset_after")  # fmt: skip
_LAYER_KEYS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
               "time_major")  # fmt: skip


class _Builtin(RNN):
    """SimpleRNN, LSTM and GRU: the cell's arguments and the RNN's, in one constructor."""

    _cell_class: Any = None

    def __init__(self, units: int, **kwargs: Any) -> None:
        cell_kwargs = {k: kwargs.pop(k) for k in _CELL_KEYS if k in kwargs}
        if cell_kwargs.get("implementation") == 0:
            cell_kwargs["implementation"] = 1  # Keras 2 maps the removed mode 0 to 1
        layer_kwargs = {k: kwargs.pop(k) for k in _LAYER_KEYS if k in kwargs}
        cell = self._cell_class(
            units, dtype=kwargs.get("dtype"), trainable=kwargs.get("trainable", True),
            **cell_kwargs,
        )  # fmt: skip
        super().__init__(cell, **layer_kwargs, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # units, activation, kernel_initializer, ... read through to the cell, as in Keras.
        if name in _CELL_KEYS and "cell" in self.__dict__:
            return getattr(self.__dict__["cell"], name)
        return super().__getattr__(name)

    def get_config(self) -> dict[str, Any]:
        cell = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell.pop(key, None)
        config = {**self._rnn_config(), **cell}
        config["activity_regularizer"] = _maybe(regularizers.serialize, self._activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        return cls(**config)


class SimpleRNN(_Builtin):
    """A fully-connected RNN whose output is fed back as the next step's state.

    >>> import layerflow as tf
    >>> tf.keras.layers.SimpleRNN(4)(tf.ones((2, 5, 3))).shape
    TensorShape([2, 4])
    """

    _cell_class = SimpleRNNCell


class LSTM(_Builtin):
    """Long short-term memory (Hochreiter 1997) over a sequence, Keras 2's arguments.

    >>> import layerflow as tf
    >>> lstm = tf.keras.layers.LSTM(4, return_sequences=True, return_state=True)
    >>> y, h, c = lstm(tf.ones((2, 5, 3)))
    >>> y.shape, [w.shape for w in lstm.weights]
    (TensorShape([2, 5, 4]), [TensorShape([3, 16]), TensorShape([4, 16]), TensorShape([16])])
    """

    _cell_class = LSTMCell


class GRU(_Builtin):
    """Gated recurrent unit (Cho et al. 2014) over a sequence; `reset_after=True` by default.

    >>> import layerflow as tf
    >>> gru = tf.keras.layers.GRU(4)
    >>> gru(tf.ones((2, 5, 3))).shape, gru.weights[2].shape
    (TensorShape([2, 4]), TensorShape([2, 12]))
    """

    _cell_class = GRUCell
