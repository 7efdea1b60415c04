"""Dot: the batch-wise dot product of two tensors along given axes (`backend.batch_dot`)."""

from __future__ import annotations

import string
from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.layers.merging import _as_shapes, _Merge
from layerflow._src.ops import array_ops, linalg_ops, math_ops

__all__ = ["Dot", "dot", "l2_normalize"]


def l2_normalize(x: Any, axis: int) -> Any:
    """`x / sqrt(max(sum(x**2, axis), 1e-12))` (TF's `tf.math.l2_normalize`)."""
    sq = math_ops.reduce_sum(math_ops.square(x), axis=axis, keepdims=True)
    eps = array_ops.constant(1e-12, dtype=x.dtype)
    return x / math_ops.sqrt(math_ops.maximum(sq, eps))


def _batch_dot_equation(r1: int, r2: int, a1: int, a2: int) -> str:
    letters = iter(string.ascii_letters)
    s1 = [next(letters) for _ in range(r1)]
    s2 = [s1[0]] + [next(letters) for _ in range(r2 - 1)]
    s2[a2] = s1[a1]
    out = [c for i, c in enumerate(s1) if i != a1] + [
        c for i, c in enumerate(s2) if i not in (0, a2)
    ]
    return f"{''.join(s1)},{''.join(s2)}->{''.join(out)}"


class Dot(_Merge):
    """Dot product of two samples' tensors along `axes` (an int or a pair), per batch entry.

    `normalize=True` L2-normalizes both inputs along the axes first (cosine proximity).

    >>> import layerflow as tf
    >>> tf.keras.layers.Dot(axes=1)([tf.ones((2, 3)), tf.ones((2, 3))]).numpy()
    array([[3.],
           [3.]], dtype=float32)
    """

    _min_inputs = 2
    _max_inputs = 2

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(
                    f"Dot: axes must be an int or a list/tuple of 2 ints, got {axes!r}."
                )
            if len(axes) != 2 or not all(isinstance(a, int) for a in axes):
                raise ValueError(f"Dot: axes must be a list/tuple of 2 ints, got {axes!r}.")
            axes = tuple(axes)
        self.axes = axes
        self.normalize = normalize

    def _axes(self, r1: int, r2: int) -> tuple[int, int]:
        if isinstance(self.axes, int):
            pair = (self.axes, self.axes)
        else:
            pair = self.axes
        a1, a2 = pair[0] % r1 if pair[0] < 0 else pair[0], pair[1] % r2 if pair[1] < 0 else pair[1]
        if a1 == 0 or a2 == 0 or a1 >= r1 or a2 >= r2:
            raise ValueError(
                f"Dot '{self.name}': axes {self.axes} must name non-batch axes of inputs of rank "
                f"{r1} and {r2} (the batch axis 0 cannot be contracted)."
            )
        return a1, a2

    def _shapes(self, input_shape: Any) -> tuple[list, list, int, int]:
        shapes = _as_shapes(self, input_shape)
        self._check_count(shapes)
        s1, s2 = shapes
        a1, a2 = self._axes(len(s1), len(s2))
        if s1[a1] is not None and s2[a2] is not None and s1[a1] != s2[a2]:
            raise ValueError(
                f"Dot '{self.name}': incompatible input shapes: axis values {s1[a1]} (at axis "
                f"{a1}) != {s2[a2]} (at axis {a2}). Full input shapes: {tuple(s1)}, {tuple(s2)}."
            )
        return s1, s2, a1, a2

    def build(self, input_shape: Any) -> None:
        self._shapes(input_shape)

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"Dot '{self.name}' must be called on a list of exactly 2 tensors.")
        x1, x2 = inputs
        _, _, a1, a2 = self._shapes([list(x1.shape), list(x2.shape)])
        if self.normalize:
            x1, x2 = l2_normalize(x1, a1), l2_normalize(x2, a2)
        out = linalg_ops.einsum(_batch_dot_equation(x1.ndim, x2.ndim, a1, a2), x1, x2)
        return array_ops.expand_dims(out, 1) if out.ndim == 1 else out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        s1, s2, a1, a2 = self._shapes(input_shape)
        out = [d for i, d in enumerate(s1) if i != a1] + [
            d for i, d in enumerate(s2) if i not in (0, a2)
        ]
        return TensorShape(out + [1] if len(out) == 1 else out)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None

    def get_config(self) -> dict[str, Any]:
        axes = self.axes if isinstance(self.axes, int) else list(self.axes)
        return {**super().get_config(), "axes": axes, "normalize": self.normalize}


def dot(inputs: list, axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """Functional form of `Dot`: `dot([x1, x2], axes)`."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
