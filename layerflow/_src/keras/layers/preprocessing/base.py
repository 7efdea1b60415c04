"""The base of the preprocessing layers: `adapt` over arrays or `tf.data.Dataset`s, batch by
batch, as tf_keras's `PreprocessingLayer` does (`reset_state`, `update_state` per batch,
`finalize_state`), and the output dtype of layers whose output dtype is not the input's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend.devices import device_scope
from layerflow._src.data.dataset import Dataset
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import Tensor
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.layer_utils import map_shapes, to_shapes
from layerflow._src.ops import array_ops


def host(x: Any) -> np.ndarray:
    """A host NumPy copy of a tensor, array or nested list (for adapt and vocabularies)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


def on_device_of(values: np.ndarray, like: Any) -> Tensor:
    """A layer's host-computed result (ids, hashes) as a tensor on the device of `like`."""
    with device_scope(like.device):
        return array_ops.constant(values)


def iterate_batches(owner: str, data: Any, batch_size: Any, steps: Any):
    """Yield NumPy batches of `data` (arrays are cut into batches of `batch_size`, default 32;
    a Dataset's elements are batches already), at most `steps` of them."""
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise ValueError(f"{owner}.adapt: steps must be a positive int or None, got {steps!r}.")
    if isinstance(data, Dataset):
        if batch_size is not None:
            raise ValueError(
                f"{owner}.adapt: batch_size={batch_size!r} was given with a tf.data.Dataset; a "
                "dataset's elements are the batches. Batch the dataset instead (`ds.batch(n)`)."
            )
        for i, element in enumerate(data):
            if steps is not None and i >= steps:
                return
            if isinstance(element, tuple | list | dict):
                raise ValueError(
                    f"{owner}.adapt: the dataset yields {type(element).__name__}s; adapt takes "
                    "the features only. Map them out first: `ds.map(lambda x, y: x)`."
                )
            yield host(element)
        return
    if isinstance(data, KerasTensor):
        raise TypeError(f"{owner}.adapt needs data with values, got a symbolic {data!r}.")
    arr = host(data)
    if arr.dtype == object:
        raise TypeError(
            f"{owner}.adapt: expected a numeric array, tensor or tf.data.Dataset, got {data!r}."
        )
    if arr.ndim == 0:
        arr = arr.reshape(1)
    size = 32 if batch_size is None else int(batch_size)
    if size < 1:
        raise ValueError(f"{owner}.adapt: batch_size must be positive, got {batch_size!r}.")
    for i, start in enumerate(range(0, len(arr), size)):
        if steps is not None and i >= steps:
            return
        yield arr[start : start + size]


class PreprocessingLayer(Layer):
    """A layer with state computed from data by `adapt` (tf_keras's `PreprocessingLayer`).

    Subclasses define `update_state(batch)` (NumPy), `finalize_state()` and `reset_state()`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.__dict__["_is_adapted"] = False

    @property
    def is_adapted(self) -> bool:
        """Whether `adapt` has run on this layer."""
        return self._is_adapted

    def compile(self, run_eagerly: Any = None, steps_per_execution: Any = None) -> None:
        """Accepted for tf_keras compatibility; adapt always runs eagerly here."""

    def reset_state(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support adapt.")

    def update_state(self, data: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support adapt.")

    def finalize_state(self) -> None:
        """Compute the layer's final state from the accumulated statistics."""

    def _adapt_build(self, first_batch: np.ndarray) -> None:
        if not self.built:
            self.build(to_shapes(first_batch.shape))

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Compute the layer's state from `data` (array, tensor or batched Dataset).

        >>> import layerflow as tf
        >>> norm = tf.keras.layers.Normalization(axis=None)
        >>> norm.adapt([1.0, 2.0, 3.0])
        >>> norm.mean.numpy()
        array([2.], dtype=float32)
        """
        owner = f"{type(self).__name__} '{self.name}'"
        batches = iterate_batches(owner, data, batch_size, steps)
        first = next(batches, None)
        if first is None:
            raise ValueError(f"{owner}.adapt: the data is empty; there is nothing to adapt to.")
        self._adapt_build(first)
        self.reset_state()
        self.update_state(first)
        for batch in batches:
            self.update_state(batch)
        self.finalize_state()
        self.__dict__["_is_adapted"] = True

    # --- output dtype ----------------------------------------------------------------------------
    def _output_dtype(self, input_dtype: dtypes.DType) -> Any:
        """The output dtype for an input dtype (default: the engine's rule)."""
        return self.dtype if input_dtype.is_floating else input_dtype.name

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        first = inputs[0] if isinstance(inputs, list | tuple) else inputs
        out_shapes = self.compute_output_shape(shapes)
        dt = self._output_dtype(first.dtype)
        return map_shapes(lambda s: KerasTensor(s, dt), to_shapes(out_shapes))


def to_tensor(owner: Any, x: Any) -> Tensor:
    """`x` as a Tensor, or a TypeError naming the layer."""
    if isinstance(x, Tensor) or hasattr(x, "_data"):
        return x
    try:
        return array_ops.constant(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{owner}: expected a numeric tensor or array, got {x!r}.") from err


def listify(value: Any) -> Any:
    """A config-safe copy: arrays and tensors become (nested) lists, scalars stay scalars."""
    if value is None:
        return None
    if hasattr(value, "numpy") or isinstance(value, np.ndarray | np.generic):
        arr = host(value)
        return arr.tolist()
    if isinstance(value, list | tuple):
        return [listify(v) for v in value]
    return value
