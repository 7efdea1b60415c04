"""Symbolic tensors of the functional API and the nodes that connect them.

A `KerasTensor` has a shape (batch dimension usually None) and a dtype but no values. Calling a
layer on KerasTensors builds the layer for that shape, works out the output's shape, and records
a `Node`; `tf.keras.Model(inputs, outputs)` walks the nodes back from the outputs and replays
them eagerly on real tensors.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.utils import nest


class KerasTensor:
    """A placeholder for a tensor in a functional model: shape and dtype, no values.

    >>> x = KerasTensor((None, 5), "float32")
    >>> x.shape
    TensorShape([None, 5])
    """

    __slots__ = ("_shape", "_dtype", "_name", "_keras_history", "_keras_mask", "__weakref__")

    def __init__(self, shape: Any, dtype: Any = "float32", name: str | None = None) -> None:
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name
        self._keras_history: tuple[Any, int, int] | None = None
        self._keras_mask: KerasTensor | None = None

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def _data(self) -> ArraySpec:
        # Op functions read `x._data.ndim` / `.dtype` to normalise their arguments before the
        # op runs (and records this call as a TFOpLambda); a KerasTensor answers from its
        # static shape. Values do not exist: anything else fails with AttributeError.
        return ArraySpec(tuple(self._shape), self._dtype.np)

    @property
    def ndim(self) -> int | None:
        return self._shape.rank

    @property
    def name(self) -> str | None:
        if self._name is not None:
            return self._name
        if self._keras_history is not None:
            layer, node_index, index = self._keras_history
            return f"{layer.name}/{node_index}/{index}" if index else layer.name
        return None

    @property
    def node(self) -> Node | None:
        if self._keras_history is None:
            return None
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def __repr__(self) -> str:
        by = ""
        if self._keras_history is not None:
            by = f" (created by layer '{self._keras_history[0].name}')"
        return f"<KerasTensor: shape={self._shape} dtype={self._dtype.name}{by}>"

    def __bool__(self) -> bool:
        raise TypeError(
            "A symbolic KerasTensor (from tf.keras.Input) has no value, so it cannot be used in "
            "a Python condition. Put the logic inside a layer's call(), which runs eagerly on "
            "real tensors."
        )

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{self!r} is symbolic (from tf.keras.Input) and has no values to convert to NumPy. "
            "Call the model on real data to get values."
        )

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


class Node:
    """One call of `layer` on symbolic inputs: what went in, what came out."""

    __slots__ = ("layer", "inputs", "args", "kwargs", "outputs")

    def __init__(self, layer: Any, inputs: Any, args: tuple, kwargs: dict, outputs: Any) -> None:
        self.layer = layer
        self.inputs = inputs
        self.args = args
        self.kwargs = kwargs
        self.outputs = outputs

    @property
    def input_tensors(self) -> list[KerasTensor]:
        found = nest.flatten(self.inputs) + nest.flatten(list(self.args))
        found += nest.flatten(self.kwargs)
        return [t for t in found if isinstance(t, KerasTensor)]

    @property
    def parent_nodes(self) -> list[Node]:
        return [t.node for t in self.input_tensors if t.node is not None]

    def __repr__(self) -> str:
        return f"<Node of layer '{self.layer.name}'>"


def is_symbolic(value: Any) -> bool:
    """Whether `value` (a tensor or a nested structure) contains a KerasTensor."""
    if isinstance(value, KerasTensor):
        return True
    if isinstance(value, list | tuple | dict):
        return any(isinstance(v, KerasTensor) for v in nest.flatten(value))
    return False


def from_spec(value: Any) -> Any:
    """Fresh KerasTensors (no history) for the specs or symbolic values in `value`."""
    if isinstance(value, ArraySpec):
        return KerasTensor(value.shape, dtypes.from_numpy(value.dtype))
    if isinstance(value, KerasTensor):
        out = KerasTensor(value.shape, value.dtype)
        out._keras_mask = value._keras_mask  # a traced nested model's output keeps its mask
        return out
    if isinstance(value, list | tuple):
        return type(value)(from_spec(v) for v in value)
    if isinstance(value, dict):
        return {k: from_spec(v) for k, v in value.items()}
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a real tensor: its exact spec
        return KerasTensor(tuple(value.shape), value.dtype)
    return value
