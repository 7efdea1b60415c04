"""Merging layers: combine a list of tensors elementwise (Add, ..., Minimum) or by Concatenate.

Elementwise merges broadcast like Keras 2: an input of lower rank gains axes after the batch
axis, then sizes of 1 broadcast.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.arg_checks import check_axis
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.ops import array_ops, math_ops


def _who(layer: Layer) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


def _as_shapes(layer: Layer, input_shape: Any) -> list[list]:
    if (
        not isinstance(input_shape, (list, tuple))
        or not input_shape
        or not all(isinstance(s, (list, tuple, TensorShape)) or s is None for s in input_shape)
    ):
        raise ValueError(
            f"{_who(layer)} must be called on a list of at least 2 tensors, got input shape "
            f"{input_shape}."
        )
    return [TensorShape(s).as_list() for s in input_shape]


class _Merge(Layer):
    _min_inputs = 2
    _max_inputs: int | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True

    def _check_count(self, shapes: list) -> None:
        n = len(shapes)
        if n < self._min_inputs or (self._max_inputs is not None and n > self._max_inputs):
            want = (f"exactly {self._max_inputs}" if self._max_inputs == self._min_inputs
                    else f"at least {self._min_inputs}")  # fmt: skip
            raise ValueError(f"{_who(self)} must be called on a list of {want} inputs, got {n}.")

    def _broadcast(self, shapes: list[list]) -> list:
        rank = max(len(s) for s in shapes)
        out: list = []
        for i in range(rank):
            dims = set()
            for s in shapes:
                full = s[:1] + [1] * (rank - len(s)) + s[1:] if len(s) < rank else s
                dims.add(full[i])
            known = {d for d in dims if d is not None and d != 1}
            if len(known) > 1:
                raise ValueError(
                    f"{_who(self)} cannot merge inputs of shapes "
                    f"{[tuple(s) for s in shapes]}: dimension {i} differs ({sorted(known)}) and "
                    "only sizes of 1 broadcast."
                )
            if known:
                out.append(known.pop())
            elif None in dims:
                out.append(None)
            else:
                out.append(1)
        return out

    def build(self, input_shape: Any) -> None:
        shapes = _as_shapes(self, input_shape)
        self._check_count(shapes)
        self._broadcast(shapes)
        self.built = True

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{_who(self)} must be called on a list of tensors, got {inputs!r}.")
        shapes = [list(x.shape) for x in inputs]
        self._check_count(shapes)
        self._broadcast(shapes)
        rank = max(len(s) for s in shapes)
        xs = []
        for x in inputs:
            while x.ndim < rank:
                x = array_ops.expand_dims(x, 1)
            xs.append(x)
        return self._merge(xs)

    def _merge(self, inputs: list) -> Any:
        raise NotImplementedError

    def compute_output_shape(self, input_shape: Any) -> Any:
        shapes = _as_shapes(self, input_shape)
        self._check_count(shapes)
        return TensorShape(self._broadcast(shapes))

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None or all(m is None for m in mask):
            return None
        masks = [m for m in mask if m is not None]
        out = masks[0]
        for m in masks[1:]:
            out = math_ops.logical_and(out, m)
        return out


class Add(_Merge):
    """Sum of the inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Add()([tf.ones((1, 2)), tf.ones((1, 2))]).numpy()
    array([[2., 2.]], dtype=float32)
    """

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


class Subtract(_Merge):
    """First input minus the second (exactly two inputs).

    >>> import layerflow as tf
    >>> tf.keras.layers.Subtract()([tf.ones((1, 2)), tf.ones((1, 2))]).numpy()
    array([[0., 0.]], dtype=float32)
    """

    _max_inputs = 2

    def _merge(self, inputs: list) -> Any:
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """Elementwise product of the inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Multiply()([tf.fill((1, 2), 3.0), tf.fill((1, 2), 2.0)]).numpy()
    array([[6., 6.]], dtype=float32)
    """

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = out * x
        return out


class Average(_Merge):
    """Elementwise mean of the inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Average()([tf.zeros((1, 2)), tf.ones((1, 2))]).numpy()
    array([[0.5, 0.5]], dtype=float32)
    """

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out / float(len(inputs))


class Maximum(_Merge):
    """Elementwise maximum of the inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Maximum()([tf.constant([[1.0, 5.0]]), tf.constant([[3.0, 2.0]])]).numpy()
    array([[3., 5.]], dtype=float32)
    """

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = math_ops.maximum(out, x)
        return out


class Minimum(_Merge):
    """Elementwise minimum of the inputs.

    >>> import layerflow as tf
    >>> tf.keras.layers.Minimum()([tf.constant([[1.0, 5.0]]), tf.constant([[3.0, 2.0]])]).numpy()
    array([[1., 2.]], dtype=float32)
    """

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = math_ops.minimum(out, x)
        return out


class Concatenate(_Merge):
    """Join the inputs along `axis`; all other dimensions must match.

    >>> import layerflow as tf
    >>> tf.keras.layers.Concatenate()([tf.zeros((2, 3)), tf.zeros((2, 4))]).shape
    TensorShape([2, 7])
    """

    _min_inputs = 1  # tf_keras: a list of one input is returned as it is

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = check_axis(axis, "axis", _who(self), allow_list=False)

    def _concat_shape(self, shapes: list[list]) -> list:
        self._check_count(shapes)
        ranks = {len(s) for s in shapes}
        if len(ranks) != 1:
            raise ValueError(
                f"{_who(self)} requires inputs of the same rank, got shapes "
                f"{[tuple(s) for s in shapes]}."
            )
        rank = ranks.pop()
        axis = self.axis % rank if -rank <= self.axis < rank else None
        if axis is None:
            raise ValueError(f"{_who(self)}: axis {self.axis} is out of range for rank {rank}.")
        out = list(shapes[0])
        for i in range(rank):
            if i == axis:
                sizes = [s[i] for s in shapes]
                out[i] = None if None in sizes else sum(sizes)
                continue
            known = {s[i] for s in shapes if s[i] is not None}
            if len(known) > 1:
                raise ValueError(
                    f"{_who(self)} requires inputs with matching shapes except for the "
                    f"concatenation axis {self.axis}, got shapes {[tuple(s) for s in shapes]}."
                )
            out[i] = known.pop() if known else None
        return out

    def build(self, input_shape: Any) -> None:
        self._concat_shape(_as_shapes(self, input_shape))
        self.built = True

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{_who(self)} must be called on a list of tensors, got {inputs!r}.")
        self._concat_shape([list(x.shape) for x in inputs])
        return array_ops.concat(list(inputs), axis=self.axis)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(self._concat_shape(_as_shapes(self, input_shape)))

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None or all(m is None for m in mask):
            return None
        rank = inputs[0].ndim
        if self.axis % rank == rank - 1:
            # Masks cover all but the last axis, which is the one being joined.
            return super().compute_mask(inputs, mask)
        full = [
            math_ops.cast(array_ops.ones(tuple(x.shape)[:-1]), "bool") if m is None else m
            for x, m in zip(inputs, mask)
        ]
        return array_ops.concat(full, axis=self.axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


def add(inputs: list, **kwargs: Any) -> Any:
    """`Add()(inputs)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.add([tf.ones((1, 1)), tf.ones((1, 1))]).numpy()
    array([[2.]], dtype=float32)
    """
    return Add(**kwargs)(inputs)


def subtract(inputs: list, **kwargs: Any) -> Any:
    """`Subtract()(inputs)`."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list, **kwargs: Any) -> Any:
    """`Multiply()(inputs)`."""
    return Multiply(**kwargs)(inputs)


def average(inputs: list, **kwargs: Any) -> Any:
    """`Average()(inputs)`."""
    return Average(**kwargs)(inputs)


def maximum(inputs: list, **kwargs: Any) -> Any:
    """`Maximum()(inputs)`."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list, **kwargs: Any) -> Any:
    """`Minimum()(inputs)`."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """`Concatenate(axis)(inputs)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.concatenate([tf.zeros((1, 2)), tf.ones((1, 1))]).numpy()
    array([[0., 0., 1.]], dtype=float32)
    """
    return Concatenate(axis=axis, **kwargs)(inputs)
