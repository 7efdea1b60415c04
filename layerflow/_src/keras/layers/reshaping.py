"""Shape-only layers: Reshape, Permute, RepeatVector (the batch axis is never touched)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.arg_checks import check_count, check_shape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.ops import array_ops, math_ops


class Reshape(Layer):
    """Reshape each sample to `target_shape` (one entry may be -1, inferred).

    >>> import layerflow as tf
    >>> tf.keras.layers.Reshape((3, 2))(tf.zeros((4, 6))).shape
    TensorShape([4, 3, 2])
    """

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The shape of one sample; like tf.reshape, floats (even 2.0) are refused.
        target = check_shape(
            target_shape, "target_shape", f"Reshape '{self.name}'", allow_none=False, minimum=-1
        )
        if sum(d == -1 for d in target) > 1 or any(d < -1 or d == 0 for d in target):
            raise ValueError(
                f"Reshape: target_shape {target} may contain at most one -1 and otherwise "
                "positive sizes."
            )
        self.target_shape = target

    def _resolve(self, sample_shape: tuple) -> tuple:
        target = list(self.target_shape)
        if any(d is None for d in sample_shape):
            return tuple(None if d == -1 else d for d in target)
        total = int(np.prod(sample_shape))
        known = int(np.prod([d for d in target if d != -1]))
        if -1 in target:
            if known == 0 or total % known:
                raise ValueError(self._mismatch(sample_shape))
            target[target.index(-1)] = total // known
        elif total != known:
            raise ValueError(self._mismatch(sample_shape))
        return tuple(target)

    def _mismatch(self, sample_shape: tuple) -> str:
        return (
            f"Reshape '{self.name}': a sample of shape {tuple(sample_shape)} "
            f"({int(np.prod(sample_shape))} values) cannot be reshaped to {self.target_shape}."
        )

    def call(self, inputs: Any) -> Any:
        shape = tuple(inputs.shape)
        return math_ops.reshape(inputs, (shape[0],) + self._resolve(shape[1:]))

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = TensorShape(input_shape).as_list()
        return TensorShape([shape[0]] + list(self._resolve(tuple(shape[1:]))))

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


class Permute(Layer):
    """Permute the non-batch axes; `dims` is 1-based, e.g. (2, 1) swaps the first two.

    >>> import layerflow as tf
    >>> tf.keras.layers.Permute((2, 1))(tf.zeros((4, 3, 5))).shape
    TensorShape([4, 5, 3])
    """

    def __init__(self, dims: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dims = check_shape(dims, "dims", f"Permute '{self.name}'", allow_none=False)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(
                f"Permute: dims must be a permutation of 1..{len(dims)} (the batch axis 0 stays "
                f"first), got {dims}."
            )
        self.dims = dims
        self.input_spec = InputSpec(ndim=len(dims) + 1)

    def call(self, inputs: Any) -> Any:
        return array_ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = TensorShape(input_shape).as_list()
        return TensorShape([shape[0]] + [shape[d] for d in self.dims])

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}


class RepeatVector(Layer):
    """Repeat each input vector `n` times: (batch, features) -> (batch, n, features).

    >>> import layerflow as tf
    >>> tf.keras.layers.RepeatVector(3)(tf.zeros((2, 4))).shape
    TensorShape([2, 3, 4])
    """

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n = check_count(n, "n", f"RepeatVector '{self.name}'")
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs: Any) -> Any:
        batch, features = tuple(inputs.shape)
        return math_ops.broadcast_to(array_ops.expand_dims(inputs, 1), (batch, self.n, features))

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = TensorShape(input_shape).as_list()
        return TensorShape([shape[0], self.n, shape[1]])

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}
