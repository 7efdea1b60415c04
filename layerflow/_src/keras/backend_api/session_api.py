"""Keras backend state: uids, learning phase, variables and their values, `K.function`."""

from __future__ import annotations

import collections
import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor, is_tensor
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.backend_api.array_api import to_dense
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.backend_config import floatx
from layerflow._src.keras.engine.input_layer import Input
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.layer_utils import call_context
from layerflow._src.keras.engine.model import Model
from layerflow._src.ops import array_ops, compare_ops, logging_ops, py_func_ops
from layerflow._src.utils import naming, nest

_UIDS: dict = collections.defaultdict(int)
_STATE = {"learning_phase": None, "manual_init": False}


def backend() -> str:
    """The name of the backend Keras runs on; tf_keras answers 'tensorflow' and so do we,
    since layerflow is `import layerflow as tf`."""
    return "tensorflow"


def cast_to_floatx(x: Any) -> Any:
    """Tensors are cast to `floatx()`; anything else becomes a NumPy array of it."""
    if isinstance(x, (Tensor, Variable, SparseTensor)):
        return compare_ops.cast(x, floatx())
    return np.asarray(x, dtype=floatx())


def get_uid(prefix: str = "") -> int:
    """1, 2, 3, ... per `prefix` until `reset_uids()` or `clear_session()`.

    >>> reset_uids(); get_uid("dense"), get_uid("dense")
    (1, 2)
    """
    _UIDS[prefix] += 1
    return _UIDS[prefix]


def reset_uids() -> None:
    _UIDS.clear()


def clear_session() -> None:
    """Forget layer names, uids and a learning phase set with `set_learning_phase`."""
    backend_config.clear_session()
    reset_uids()
    _STATE["learning_phase"] = None


def manual_variable_initialization(value: bool) -> None:
    """Kept for compatibility: variables are always initialized on creation in TF 2 eager."""
    _STATE["manual_init"] = bool(value)


def learning_phase() -> int:
    """0 (test) unless `set_learning_phase` or `learning_phase_scope` set 1 (train)."""
    phase = _STATE["learning_phase"]
    return 0 if phase is None else phase


def _check_phase(value: Any) -> None:
    if value not in {0, 1}:
        raise ValueError("Expected learning phase to be 0 or 1.")


def set_learning_phase(value: int) -> None:
    warnings.warn(
        "`tf.keras.backend.set_learning_phase` is deprecated and will be removed after "
        "2020-10-11. To update it, simply pass a True/False value to the `training` argument "
        "of the `__call__` method of your layer or model.",
        stacklevel=2,
    )
    _check_phase(value)
    _STATE["learning_phase"] = value


@contextlib.contextmanager
def learning_phase_scope(value: int) -> Iterator[None]:
    warnings.warn(
        "`tf.keras.backend.learning_phase_scope` is deprecated and will be removed after "
        "2020-10-11. To update it, simply pass a True/False value to the `training` argument "
        "of the `__call__` method of your layer or model.",
        stacklevel=3,
    )
    _check_phase(value)
    previous = _STATE["learning_phase"]
    _STATE["learning_phase"] = value
    try:
        yield
    finally:
        _STATE["learning_phase"] = previous


def current_training() -> Any:
    """The `training` flag of the layer call in progress, else the learning phase."""
    training = call_context.training
    return learning_phase() if training is None else training


def name_scope(name: str) -> Any:
    return naming.name_scope(name)


def variable(value: Any, dtype: Any = None, name: str | None = None, constraint: Any = None) -> Any:
    """A `tf.Variable` of `floatx()` (or `dtype`).

    >>> v = variable([[1, 2], [3, 4]]); v.dtype.name
    'float32'
    """
    if dtype is None:
        dtype = floatx()
    if hasattr(value, "tocoo"):
        coo = value.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
        return SparseTensor(indices=indices, values=coo.data, dense_shape=coo.shape)
    return Variable(value, dtype=dtypes.as_dtype(dtype), name=name, constraint=constraint)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Any:
    if dtype is None:
        dtype = floatx()
    return array_ops.constant(value, dtype=dtype, shape=shape, name=name)


def is_keras_tensor(x: Any) -> bool:
    """True for a symbolic Keras tensor (from `Input` or a layer on one)."""
    if not isinstance(x, (Tensor, Variable, SparseTensor, KerasTensor)) and not is_tensor(x):
        raise ValueError(
            f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic tensor "
            "instance."
        )
    return isinstance(x, KerasTensor)


def placeholder(
    shape: Any = None,
    ndim: int | None = None,
    dtype: Any = None,
    sparse: bool = False,
    name: str | None = None,
    ragged: bool = False,
) -> Any:
    """A symbolic Keras input of the full `shape` (batch dimension included), as in TF 2."""
    if sparse and ragged:
        raise ValueError("Cannot set both sparse and ragged to True when creating a placeholder.")
    if dtype is None:
        dtype = floatx()
    if not shape:
        if not ndim:
            raise ValueError("K.placeholder needs shape= or ndim= (the rank of the input).")
        shape = (None,) * ndim
    return Input(batch_shape=tuple(shape), dtype=dtype, name=name, sparse=sparse or None)


def eval(x: Any) -> Any:  # noqa: A001 - Keras's name
    """The value of a tensor or variable as a NumPy array."""
    return get_value(to_dense(x))


def _maybe_variable(v: Any, dtype: Any, name: str | None) -> Any:
    return variable(v, dtype=dtype, name=name) if all(v.shape.as_list()) else v


def zeros(shape: Any, dtype: Any = None, name: str | None = None) -> Any:
    """A variable of zeros (a plain tensor when a dimension is 0, as in Keras)."""
    dtype = dtype or floatx()
    return _maybe_variable(array_ops.zeros(shape, dtype=dtype), dtype, name)


def ones(shape: Any, dtype: Any = None, name: str | None = None) -> Any:
    dtype = dtype or floatx()
    return _maybe_variable(array_ops.ones(shape, dtype=dtype), dtype, name)


def eye(size: Any, dtype: Any = None, name: str | None = None) -> Any:
    dtype = dtype or floatx()
    return variable(array_ops.eye(size, dtype=dtype), dtype, name)


def identity(x: Any, name: str | None = None) -> Any:
    return array_ops.identity(x, name=name)


def update(x: Any, new_x: Any) -> Any:
    return x.assign(new_x)


def update_add(x: Any, increment: Any) -> Any:
    return x.assign_add(increment)


def update_sub(x: Any, decrement: Any) -> Any:
    return x.assign_sub(decrement)


def moving_average_update(x: Any, value: Any, momentum: Any) -> Any:
    """`x = x * momentum + value * (1 - momentum)`."""
    momentum = compare_ops.cast(momentum, x.dtype)
    value = compare_ops.cast(value, x.dtype)
    return x.assign_sub((x - value) * (1 - momentum))


def get_value(x: Any) -> Any:
    """A variable's or tensor's value as NumPy; non-tensors come back unchanged."""
    if not is_tensor(x) and not isinstance(x, Variable):
        return x
    return x.numpy()


def batch_get_value(tensors: Any) -> list:
    return [x.numpy() for x in tensors]


def _dtype_numpy(x: Any) -> Any:
    return dtypes.as_dtype(x.dtype).as_numpy_dtype


def set_value(x: Any, value: Any) -> None:
    """Assign a NumPy value (cast to the variable's dtype) to `x`."""
    x.assign(np.asarray(value, dtype=_dtype_numpy(x)))


def batch_set_value(tuples: Any) -> None:
    for x, value in tuples:
        set_value(x, value)


def print_tensor(x: Any, message: str = "", summarize: int = 3) -> Any:
    """Print `message` and `x` to stdout, return `x`."""
    logging_ops.print_v2(message, x, output_stream=sys.stdout, summarize=summarize)
    return x


def _to_numpy_or_python(value: Any) -> Any:
    def one(t: Any) -> Any:
        if isinstance(t, (Tensor, Variable)):
            t = t.numpy()
        if isinstance(t, np.ndarray) and t.ndim == 0:
            return t.item()
        return t

    return nest.map_structure(one, value)


def function(
    inputs: Any, outputs: Any, updates: Any = None, name: str | None = None, **kwargs: Any
) -> Any:
    """A callable that runs the Keras graph from `inputs` to `outputs` and returns NumPy."""
    if kwargs:
        raise ValueError(
            "Session keyword arguments are not supported during eager execution. You passed: "
            f"{kwargs}"
        )
    if updates:
        raise ValueError(
            f"`updates` argument is not supported during eager execution. You passed: {updates}"
        )
    model = Model(inputs=inputs, outputs=outputs)
    wrap = isinstance(outputs, list) and len(outputs) == 1

    def func(model_inputs: Any) -> Any:
        outs = model(model_inputs)
        if wrap and not isinstance(outs, (list, tuple)):
            outs = [outs]
        return _to_numpy_or_python(outs)

    return func


def gradients(loss: Any, variables: Any) -> Any:
    """Graph-mode symbolic gradients: TF 2 runs eagerly, so this raises TF's RuntimeError."""
    return py_func_ops.gradients(loss, variables)


def stop_gradient(variables: Any) -> Any:
    """`tf.stop_gradient` of a tensor, or a `map` of it over a list (as tf_keras returns)."""
    if isinstance(variables, (list, tuple)):
        return map(array_ops.stop_gradient, variables)
    return array_ops.stop_gradient(variables)
