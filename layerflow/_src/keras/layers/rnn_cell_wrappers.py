"""Keras 2's RNN cell wrappers, exported as `tf.nn.RNNCellDropoutWrapper`,
`tf.nn.RNNCellResidualWrapper` and `tf.nn.RNNCellDeviceWrapper`.

A wrapper is itself a cell (`state_size`, `output_size`, `call(inputs, states)`) around another
cell, so `tf.keras.layers.RNN` runs it step by step. As in tf_keras, the dropout wrapper drops
whenever it is called (training or not): it is TF 1's `DropoutWrapper` in Keras form.
"""

from __future__ import annotations

import hashlib
import numbers
from typing import Any

from layerflow._src.backend import DeviceContext
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.layers.rnn_cells import AbstractRNNCell, deserialize_layer, zero_state
from layerflow._src.keras.serialization import serialize_keras_object
from layerflow._src.ops import array_ops, compare_ops, elementwise_ops, nn_ops, random_ops
from layerflow._src.utils import nest

__all__ = ["DeviceWrapper", "DropoutWrapper", "ResidualWrapper"]


class _RNNCellWrapper(AbstractRNNCell):
    """Delegates the cell contract to `self.cell`; subclasses change `_call_wrapped_cell`."""

    def __init__(self, cell: Any, **kwargs: Any) -> None:
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise TypeError(
                f"{type(self).__name__} wraps an RNN cell (a layer with `call` and "
                f"`state_size`), got {cell!r}."
            )
        super().__init__(**kwargs)
        self.cell = cell

    @property
    def state_size(self) -> Any:
        return self.cell.state_size

    @property
    def output_size(self) -> Any:
        return self.cell.output_size

    def build(self, input_shape: Any) -> None:
        if not getattr(self.cell, "built", True):
            self.cell.build(input_shape)
        self.built = True

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:  # fmt: skip
        if hasattr(self.cell, "get_initial_state"):
            return self.cell.get_initial_state(inputs=inputs, batch_size=batch_size, dtype=dtype)
        return zero_state(self, inputs, batch_size, dtype)

    def _run_cell(self, inputs: Any, states: Any, training: Any) -> tuple:
        if training is not None and "training" in _params(self.cell.call):
            return self.cell(inputs, states, training=training)
        return self.cell(inputs, states)

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        return self._call_wrapped_cell(inputs, states, training)

    def _call_wrapped_cell(self, inputs: Any, states: Any, training: Any) -> tuple:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "cell": serialize_keras_object(self.cell)}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        config = dict(config)
        cell = deserialize_layer(config.pop("cell"), custom_objects)
        return cls(cell, **config)


def _params(fn: Any) -> tuple:
    import inspect

    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


def _keep_prob(value: Any, name: str) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not 0 < value <= 1:
        raise ValueError(f"DropoutWrapper: Parameter {name} must be between 0 and 1: {value!r}.")
    return float(value)


class DropoutWrapper(_RNNCellWrapper):
    """Dropout on a cell's inputs, outputs and new states (`*_keep_prob` = 1 - rate).

    With `variational_recurrent=True` one noise pattern, drawn when the wrapper is made (with
    batch dimension 1, so shared by every row), is used at every step; it then needs `dtype`,
    and `input_size` when `input_keep_prob < 1` (as in TF).

    >>> import layerflow as tf
    >>> cell = tf.nn.RNNCellDropoutWrapper(tf.keras.layers.SimpleRNNCell(4),
    ...                                    output_keep_prob=0.5, seed=1)
    >>> tf.keras.layers.RNN(cell)(tf.ones((2, 3, 2))).shape
    TensorShape([2, 4])
    """

    def __init__(self, cell: Any, input_keep_prob: float = 1.0, output_keep_prob: float = 1.0,
                 state_keep_prob: float = 1.0, variational_recurrent: bool = False,
                 input_size: Any = None, dtype: Any = None, seed: Any = None,
                 dropout_state_filter_visitor: Any = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(cell, dtype=dtype, **kwargs)
        self.input_keep_prob = _keep_prob(input_keep_prob, "input_keep_prob")
        self.output_keep_prob = _keep_prob(output_keep_prob, "output_keep_prob")
        self.state_keep_prob = _keep_prob(state_keep_prob, "state_keep_prob")
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("DropoutWrapper: dropout_state_filter_visitor must be callable.")
        self._state_filter = dropout_state_filter_visitor or (lambda state: True)
        self._custom_filter = dropout_state_filter_visitor is not None
        self.variational_recurrent = bool(variational_recurrent)
        self.input_size = input_size
        self.seed = seed
        self._noise: dict[str, Any] = {}
        if self.variational_recurrent:
            if dtype is None:
                raise ValueError(
                    "DropoutWrapper: when variational_recurrent=True, dtype must be provided."
                )
            if self.input_keep_prob < 1.0:
                if input_size is None:
                    raise ValueError(
                        "DropoutWrapper: when variational_recurrent=True and input_keep_prob < "
                        "1.0, input_size must be provided."
                    )
                self._noise["input"] = self._batch_noise(input_size, "input", dtype)
            self._noise["state"] = self._batch_noise(cell.state_size, "state", dtype)
            self._noise["output"] = self._batch_noise(cell.output_size, "output", dtype)

    def _gen_seed(self, salt: str, index: int) -> Any:
        """TF's per-tensor seed: a hash of the wrapper's seed, the tensor kind and its index."""
        if self.seed is None:
            return None
        digest = hashlib.md5(f"{self.seed}{salt}_{index}".encode()).hexdigest()
        return int(digest[:8], 16) & 0x7FFFFFFF

    def _batch_noise(self, sizes: Any, salt: str, dtype: Any) -> list:
        flat = sizes if nest.is_nested(sizes) else [sizes]
        out = []
        for i, size in enumerate(nest.flatten(flat)):
            shape = [1, *TensorShape(size).as_list()]
            rng = random_ops.generator(self._gen_seed(salt, i))
            out.append(array_ops.constant(rng.random(shape).astype(dtypes.as_dtype(dtype).np)))
        return out

    def _drop(self, values: Any, salt: str, keep: float, apply: Any = None) -> Any:
        flat = nest.flatten(values)
        out = []
        for i, v in enumerate(flat):
            if apply is not None and not apply(i):
                out.append(v)
            elif self.variational_recurrent:
                mask = elementwise_ops.floor(keep + self._noise[salt][i])
                out.append(v / keep * compare_ops.cast(mask, v.dtype))
            else:
                out.append(nn_ops.dropout(v, rate=1.0 - keep, seed=self._gen_seed(salt, i)))
        return nest.pack_sequence_as(values, out)

    def _call_wrapped_cell(self, inputs: Any, states: Any, training: Any) -> tuple:
        if self.input_keep_prob < 1.0:
            inputs = self._drop(inputs, "input", self.input_keep_prob)
        output, new_states = self._run_cell(inputs, states, training)
        if self.state_keep_prob < 1.0:
            flat = nest.flatten(new_states)
            chosen = [bool(self._state_filter(s)) for s in flat]
            new_states = self._drop(new_states, "state", self.state_keep_prob,
                                    apply=lambda i: chosen[i])  # fmt: skip
        if self.output_keep_prob < 1.0:
            output = self._drop(output, "output", self.output_keep_prob)
        return output, new_states

    def get_config(self) -> dict[str, Any]:
        if self._custom_filter:
            raise NotImplementedError(
                "DropoutWrapper: a custom dropout_state_filter_visitor cannot be serialized; "
                "pass it again when you rebuild the wrapper."
            )
        config = super().get_config()
        config.update({
            "input_keep_prob": self.input_keep_prob,
            "output_keep_prob": self.output_keep_prob,
            "state_keep_prob": self.state_keep_prob,
            "variational_recurrent": self.variational_recurrent,
            "input_size": self.input_size,
            "seed": self.seed,
        })  # fmt: skip
        return config


class ResidualWrapper(_RNNCellWrapper):
    """A cell whose output is `residual_fn(inputs, output)`, by default `inputs + output`
    (the inputs and outputs must have the same structure and shapes).

    >>> import layerflow as tf
    >>> cell = tf.nn.RNNCellResidualWrapper(tf.keras.layers.SimpleRNNCell(3))
    >>> tf.keras.layers.RNN(cell)(tf.ones((2, 4, 3))).shape
    TensorShape([2, 3])
    """

    def __init__(self, cell: Any, residual_fn: Any = None, **kwargs: Any) -> None:
        super().__init__(cell, **kwargs)
        if residual_fn is not None and not callable(residual_fn):
            raise TypeError(f"ResidualWrapper: residual_fn must be callable, got {residual_fn!r}.")
        self.residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs: Any, states: Any, training: Any) -> tuple:
        output, new_states = self._run_cell(inputs, states, training)
        if self.residual_fn is not None:
            return self.residual_fn(inputs, output), new_states

        def add(inp: Any, out: Any) -> Any:
            if tuple(inp.shape[1:]) != tuple(out.shape[1:]):
                raise ValueError(
                    f"ResidualWrapper: the cell's inputs {tuple(inp.shape)} and outputs "
                    f"{tuple(out.shape)} must have the same shape to be added; give "
                    "residual_fn= or make the cell's units equal to the input size."
                )
            return inp + out

        return nest.map_structure(add, inputs, output), new_states

    def get_config(self) -> dict[str, Any]:
        if self.residual_fn is not None:
            raise NotImplementedError(
                "ResidualWrapper: a custom residual_fn cannot be serialized; pass it again when "
                "you rebuild the wrapper."
            )
        return super().get_config()


class DeviceWrapper(_RNNCellWrapper):
    """A cell that runs on `device` (e.g. "/CPU:0"), as inside `with tf.device(device)`.

    >>> import layerflow as tf
    >>> cell = tf.nn.RNNCellDeviceWrapper(tf.keras.layers.SimpleRNNCell(3), "/CPU:0")
    >>> tf.keras.layers.RNN(cell)(tf.ones((2, 4, 3))).device
    '/job:localhost/replica:0/task:0/device:CPU:0'
    """

    def __init__(self, cell: Any, device: str, **kwargs: Any) -> None:
        super().__init__(cell, **kwargs)
        self.device = device

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:  # fmt: skip
        with DeviceContext(self.device):
            return super().get_initial_state(inputs, batch_size, dtype)

    def _call_wrapped_cell(self, inputs: Any, states: Any, training: Any) -> tuple:
        with DeviceContext(self.device):
            return self._run_cell(inputs, states, training)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "device": self.device}
