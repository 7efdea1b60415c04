"""`tf.keras.layers.InputLayer` and `tf.keras.Input`: where a functional graph starts."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import dtypes
from layerflow._src.keras.engine.arg_checks import check_count, check_shape
from layerflow._src.keras.engine.backend_config import floatx
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.keras_tensor import KerasTensor, Node
from layerflow._src.utils import naming


def _input_name() -> str:
    # Keras numbers inputs from 1: input_1, input_2, ...
    name = naming.unique_name("input")
    return "input_1" if name == "input" else f"input_{int(name.rsplit('_', 1)[1]) + 1}"


class InputLayer(Layer):
    """The entry point of a model: holds the symbolic input tensor and passes data through.

    >>> layer = InputLayer(input_shape=(5,), name="x")
    >>> layer.output.shape
    TensorShape([None, 5])
    """

    def __init__(
        self,
        input_shape: Any = None,
        batch_size: int | None = None,
        dtype: Any = None,
        input_tensor: Any = None,
        sparse: Any = None,
        name: str | None = None,
        ragged: Any = None,
        type_spec: Any = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.pop("optional", False):
            raise ValueError(
                "InputLayer: optional=True (an input that may be None) is not supported by "
                "layerflow; pass the input, or build the model without it."
            )
        batch_shape = kwargs.pop("batch_input_shape", None) or kwargs.pop("batch_shape", None)
        owner = f"InputLayer '{name}'" if name else "tf.keras.Input"
        if input_tensor is not None:
            if not isinstance(input_tensor, KerasTensor):
                raise TypeError(
                    f"InputLayer: input_tensor must be a KerasTensor from tf.keras.Input, got "
                    f"{type(input_tensor).__name__}."
                )
            batch_shape = tuple(input_tensor.shape)
            dtype = dtype or input_tensor.dtype.name
        if batch_shape is None:
            if input_shape is None:
                raise ValueError(
                    "InputLayer needs a shape: pass input_shape=(features, ...) (without the "
                    "batch dimension) or batch_input_shape=(batch, features, ...)."
                )
            input_shape = check_shape(input_shape, "shape", owner)
            if batch_size is not None:
                batch_size = check_count(batch_size, "batch_size", owner)
            batch_shape = (batch_size,) + input_shape
        else:
            batch_shape = check_shape(batch_shape, "batch_shape", owner)
        dtype = dtypes.as_dtype(getattr(dtype, "name", dtype) or floatx()).name
        super().__init__(name=name or _input_name(), dtype=dtype, **kwargs)
        self._batch_input_shape = tuple(batch_shape)
        # A sparse input takes a tf.SparseTensor (Dense multiplies it without densifying).
        self.sparse = bool(sparse)
        # A ragged input takes a tf.RaggedTensor: the layers run on it as it comes (Embedding
        # maps its values, recurrent layers pad it with the mask of its row lengths).
        self.ragged = bool(ragged)
        self.built = True
        self.is_placeholder = True
        tensor = input_tensor if input_tensor is not None else KerasTensor(batch_shape, dtype)
        node = Node(self, None, (), {}, tensor)
        self._inbound_nodes.append(node)
        tensor._keras_history = (self, 0, 0)
        self.__dict__["_output_shape_record"] = tensor.shape

    @property
    def output(self) -> KerasTensor:
        return self._inbound_nodes[0].outputs

    def call(self, inputs: Any) -> Any:
        return inputs

    def get_config(self) -> dict[str, Any]:
        return {
            "batch_input_shape": self._batch_input_shape,
            "dtype": self.dtype,
            "sparse": self.sparse,
            "ragged": self.ragged,
            "name": self.name,
            "optional": False,
        }


def Input(
    shape: Any = None,
    batch_size: int | None = None,
    name: str | None = None,  # noqa: N802
    dtype: Any = None,
    sparse: Any = None,
    tensor: Any = None,
    ragged: Any = None,
    type_spec: Any = None,
    batch_shape: Any = None,
    **kwargs: Any,
) -> KerasTensor:
    """A symbolic input for the functional API (`shape` excludes the batch dimension).

    >>> import layerflow as tf
    >>> x = tf.keras.Input(shape=(5,))
    >>> y = tf.keras.layers.Dense(3)(x)
    >>> y.shape
    TensorShape([None, 3])
    """
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError(
            "tf.keras.Input needs shape=(features, ...) (without the batch dimension), "
            "or batch_shape=."
        )
    layer = InputLayer(
        input_shape=shape,
        batch_size=batch_size,
        dtype=dtype,
        input_tensor=tensor,
        sparse=sparse,
        name=name,
        ragged=ragged,
        batch_input_shape=batch_shape,
        **kwargs,
    )
    return layer.output
