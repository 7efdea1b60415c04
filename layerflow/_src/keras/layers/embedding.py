"""Embedding: integer ids -> rows of a learned (input_dim, output_dim) matrix."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import constraints, initializers, regularizers
from layerflow._src.keras.engine.arg_checks import check_count
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.ops import array_ops, gather_ops, math_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor


class Embedding(Layer):
    """Look up a vector per integer id; ids must lie in [0, input_dim).

    >>> import layerflow as tf
    >>> tf.keras.layers.Embedding(10, 4)(tf.constant([[1, 2, 3]])).shape
    TensorShape([1, 3, 4])
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, activity_regularizer: Any = None,
                 embeddings_constraint: Any = None, mask_zero: bool = False,
                 input_length: int | None = None, sparse: bool = False,
                 **kwargs: Any) -> None:  # fmt: skip
        if sparse:
            raise ValueError(
                "Embedding: sparse=True (gradients as tf.IndexedSlices) is not supported; "
                "layerflow computes dense gradients. Pass sparse=False (the default)."
            )
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        # Ids must not be cast to the float dtype of the weights (Keras 2 turns autocast off).
        kwargs["autocast"] = False
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        # input_dim is the vocabulary size, output_dim the length of each vector.
        self.input_dim = check_count(input_dim, "input_dim", f"Embedding '{self.name}'")
        self.output_dim = check_count(output_dim, "output_dim", f"Embedding '{self.name}'")
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.input_length = input_length

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight(name="embeddings",
                                          shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)  # fmt: skip
        self.built = True

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, RaggedTensor):  # ragged ids in, ragged vectors out (as Keras)
            return inputs.with_flat_values(self.call(inputs.flat_values))
        if inputs.dtype.name not in ("int32", "int64"):
            inputs = math_ops.cast(inputs, "int32")
        out = gather_ops.gather(self.embeddings, inputs)
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if not self.mask_zero:
            return None
        return math_ops.not_equal(inputs, array_ops.constant(0, dtype=inputs.dtype))

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        # Integer indices in, vectors of the layer's dtype out.
        return KerasTensor(self.compute_output_shape(shapes), self.dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(TensorShape(input_shape).as_list() + [self.output_dim])

    def get_config(self) -> dict:
        config = super().get_config()
        act = self._activity_regularizer
        return {
            **config,
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
            "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
            "activity_regularizer": regularizers.serialize(act),
            "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
            "mask_zero": self.mask_zero,
            "input_length": self.input_length,
        }
