"""MultiHeadAttention (Keras 2's layer, its equations, sublayers and weight layout).

Query, key and value are projected by `EinsumDense` sublayers named `query`, `key`, `value` and
`attention_output` (kernels `(dim, heads, key_dim)` ... `(heads, value_dim, out)`), held in the
attributes `query_dense`, `key_dense`, `value_dense` and `output_dense`: the weight order of
`get_weights()` is tf_keras's, and the attribute paths are Keras 3's `.weights.h5` groups, so
weights move to and from Keras. The scores are one einsum, a masked softmax over the attention
axes, dropout, and another einsum; no gradient code here.
"""

from __future__ import annotations

import collections.abc
import math
import string
from typing import Any

import numpy as np

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import constraints, initializers, regularizers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.layers.activation import Softmax
from layerflow._src.keras.layers.einsum_dense import EinsumDense
from layerflow._src.keras.layers.regularization import Dropout
from layerflow._src.ops import array_ops, linalg_ops, math_ops

__all__ = ["MultiHeadAttention"]

_CHR_IDX = string.ascii_lowercase


def build_attention_equation(rank: int, attn_axes: tuple[int, ...]) -> tuple[str, str, int]:
    """(dot-product equation, combine equation, rank of the scores) for projected inputs of
    `rank` (batch dims..., heads, channels) attending over `attn_axes` (Keras's construction).

    >>> build_attention_equation(4, (1,))
    ('aecd,abcd->acbe', 'acbe,aecd->abcd', 4)
    """
    target = _CHR_IDX[:rank]
    batch_dims = tuple(np.delete(range(rank), attn_axes + (rank - 1,)))
    offset = rank
    source = ""
    for i in range(rank):
        if i in batch_dims or i == rank - 1:
            source += target[i]
        else:
            source += _CHR_IDX[offset]
            offset += 1
    product = "".join(
        [target[i] for i in batch_dims]
        + [target[i] for i in attn_axes]
        + [source[i] for i in attn_axes]
    )
    return f"{source},{target}->{product}", f"{product},{source}->{target}", len(product)


def build_proj_equation(free_dims: int, bound_dims: int, output_dims: int) -> tuple[str, str, int]:
    """(equation, bias axes, output rank) of a projection keeping `free_dims`, contracting
    `bound_dims` and adding `output_dims` axes.

    >>> build_proj_equation(2, 1, 2)
    ('abc,cde->abde', 'de', 4)
    """
    chars = iter(_CHR_IDX)
    free = "".join(next(chars) for _ in range(free_dims))
    bound = "".join(next(chars) for _ in range(bound_dims))
    new = "".join(next(chars) for _ in range(output_dims))
    return f"{free}{bound},{bound}{new}->{free}{new}", new, free_dims + output_dims


def _output_shape(rank: int, known_last: Any) -> list:
    return [None] * (rank - len(known_last)) + list(known_last)


def _shape_of(x: Any) -> TensorShape | None:
    if x is None:
        return None
    if hasattr(x, "shape") and not isinstance(x, (list, tuple)):
        return TensorShape(tuple(x.shape))
    return TensorShape(x)


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al. 2017) as `tf.keras.layers.MultiHeadAttention`.

    `layer(query, value, key=None, attention_mask=None, return_attention_scores=False,
    training=None, use_causal_mask=False)`; `attention_mask` is boolean `[B, T, S]` (True =
    attend), broadcast over the heads.

    >>> import layerflow as tf
    >>> mha = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    >>> out, scores = mha(tf.ones((1, 3, 8)), tf.ones((1, 5, 8)), return_attention_scores=True)
    >>> out.shape, scores.shape
    (TensorShape([1, 3, 8]), TensorShape([1, 2, 3, 5]))
    """

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape: Any = None,
                 attention_axes: Any = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"MultiHeadAttention '{self.name}': {arg} must be a positive int, got "
                    f"{value!r}."
                )
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(
                f"MultiHeadAttention '{self.name}': dropout must be in [0, 1], got {dropout!r}."
            )
        self.supports_masking = True
        self._num_heads = int(num_heads)
        self._key_dim = int(key_dim)
        self._value_dim = int(value_dim) if value_dim else self._key_dim
        self._dropout = dropout
        self._use_bias = use_bias
        self._output_shape = output_shape
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._kernel_regularizer = regularizers.get(kernel_regularizer)
        self._bias_regularizer = regularizers.get(bias_regularizer)
        self._kernel_constraint = constraints.get(kernel_constraint)
        self._bias_constraint = constraints.get(bias_constraint)
        if attention_axes is not None and not isinstance(attention_axes, collections.abc.Sized):
            attention_axes = (attention_axes,)
        self._attention_axes = None if attention_axes is None else tuple(attention_axes)
        self._built_from_signature = False
        self._query_shape: TensorShape | None = None
        self._key_shape: TensorShape | None = None
        self._value_shape: TensorShape | None = None

    # --- Keras 2's read-only properties ---------------------------------------------------------
    num_heads = property(lambda self: self._num_heads)
    key_dim = property(lambda self: self._key_dim)
    value_dim = property(lambda self: self._value_dim)
    dropout = property(lambda self: self._dropout)
    use_bias = property(lambda self: self._use_bias)
    attention_axes = property(lambda self: self._attention_axes)

    def get_config(self) -> dict[str, Any]:
        def ser(fn: Any, value: Any) -> Any:
            return None if value is None else fn(value)

        def shape(s: Any) -> Any:
            return None if s is None else s.as_list()

        return {
            **super().get_config(),
            "num_heads": self._num_heads,
            "key_dim": self._key_dim,
            "value_dim": self._value_dim,
            "dropout": self._dropout,
            "use_bias": self._use_bias,
            "output_shape": self._output_shape,
            "attention_axes": self._attention_axes,
            "kernel_initializer": initializers.serialize(self._kernel_initializer),
            "bias_initializer": initializers.serialize(self._bias_initializer),
            "kernel_regularizer": ser(regularizers.serialize, self._kernel_regularizer),
            "bias_regularizer": ser(regularizers.serialize, self._bias_regularizer),
            "activity_regularizer": ser(regularizers.serialize, self._activity_regularizer),
            "kernel_constraint": ser(constraints.serialize, self._kernel_constraint),
            "bias_constraint": ser(constraints.serialize, self._bias_constraint),
            "query_shape": shape(self._query_shape),
            "key_shape": shape(self._key_shape),
            "value_shape": shape(self._value_shape),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> MultiHeadAttention:
        config = dict(config)
        shapes = [config.pop(k, None) for k in ("query_shape", "value_shape", "key_shape")]
        config.pop("softmax_robust_masking", None)  # tf_keras 2.16+; its default is ours
        layer = cls(**config)
        if None not in shapes:
            # Build the sublayers now, so a file's weights can be restored before any call.
            layer._build_from_signature(*shapes)
        return layer

    # --- building -------------------------------------------------------------------------------
    def _sublayer_kwargs(self) -> dict[str, Any]:
        # Fresh initializer objects per sublayer: a shared seeded initializer would repeat values.
        def fresh(init: Any) -> Any:
            return initializers.get(initializers.serialize(init))

        return {
            "kernel_initializer": fresh(self._kernel_initializer),
            "bias_initializer": fresh(self._bias_initializer),
            "kernel_regularizer": self._kernel_regularizer,
            "bias_regularizer": self._bias_regularizer,
            "activity_regularizer": self._activity_regularizer,
            "kernel_constraint": self._kernel_constraint,
            "bias_constraint": self._bias_constraint,
            "dtype": self._dtype_policy or self._dtype,
        }

    def _projection(self, rank: int, last: list, name: str, bound: int = 1) -> EinsumDense:
        equation, bias_axes, out_rank = build_proj_equation(rank - 1, bound, len(last))
        return EinsumDense(
            equation,
            output_shape=_output_shape(out_rank - 1, last),
            bias_axes=bias_axes if self._use_bias else None,
            name=name,
            **self._sublayer_kwargs(),
        )

    def _build_from_signature(self, query: Any, value: Any, key: Any = None) -> None:
        """Create and build the four projections for inputs of these shapes (tf_keras's step)."""
        q, v = _shape_of(query), _shape_of(value)
        k = v if key is None else _shape_of(key)
        if q.rank is None or v.rank is None or k.rank is None or min(q.rank, v.rank) < 3:
            raise ValueError(
                f"MultiHeadAttention '{self.name}' needs query and value of rank >= 3 "
                f"(batch, ..., features), got query {q} and value {v}."
            )
        self._query_shape, self._value_shape, self._key_shape = q, v, k
        self._built_from_signature = True
        self.query_dense = self._projection(q.rank, [self._num_heads, self._key_dim], "query")
        self.key_dense = self._projection(k.rank, [self._num_heads, self._key_dim], "key")
        self.value_dense = self._projection(v.rank, [self._num_heads, self._value_dim], "value")
        rank = q.rank + 1  # the projected query: (batch, ..., heads, key_dim)
        if self._attention_axes is None:
            self._attention_axes = tuple(range(1, rank - 2))
        axes = tuple(a % rank for a in self._attention_axes)
        if any(a == 0 or a >= rank - 2 for a in axes):
            raise ValueError(
                f"MultiHeadAttention '{self.name}': attention_axes {self._attention_axes} must "
                f"name axes between the batch axis and the features of a rank-{q.rank} query."
            )
        self._dot_product_equation, self._combine_equation, scores_rank = build_attention_equation(
            rank, axes
        )
        norm_axes = tuple(range(scores_rank - len(axes), scores_rank))
        self._softmax = Softmax(axis=norm_axes, dtype=self._dtype_policy or self._dtype)
        self._dropout_layer = Dropout(rate=self._dropout, dtype=self._dtype_policy or self._dtype)
        if self._output_shape:
            out = self._output_shape
            out = list(out) if isinstance(out, collections.abc.Sized) else [out]
        else:
            out = [q[-1]]
        self.output_dense = self._projection(q.rank, out, "attention_output", bound=2)
        self.query_dense.build(q)
        self.key_dense.build(k)
        self.value_dense.build(v)
        projected = q[:-1].concatenate([self._num_heads, self._value_dim])
        self.output_dense.build(projected)

    def build(self, query_shape: Any, value_shape: Any = None, key_shape: Any = None) -> None:
        if value_shape is not None and not self._built_from_signature:
            self._build_from_signature(query_shape, value_shape, key_shape)

    def __call__(self, query: Any, value: Any = None, key: Any = None, **kwargs: Any) -> Any:
        if value is None:
            raise TypeError(
                f"MultiHeadAttention '{self.name}' was called without `value`: call it as "
                "layer(query, value) (self-attention: layer(x, x))."
            )
        if not self._built_from_signature:
            self._build_from_signature(query, value, key)
        return super().__call__(query, value, key, **kwargs)

    # --- computing ------------------------------------------------------------------------------
    def _as_input(self, x: Any) -> Any:
        return None if x is None else self._convert_inputs(x)

    def _compute_attention_mask(self, query: Any, value: Any, key: Any, attention_mask: Any,
                                use_causal_mask: bool) -> Any:  # fmt: skip
        auto = None

        def both(a: Any, b: Any) -> Any:
            return b if a is None else math_ops.logical_and(a, b)

        masks = [getattr(t, "_keras_mask", None) for t in (query, value, key)]
        if masks[0] is not None:
            auto = array_ops.expand_dims(math_ops.cast(masks[0], "bool"), 2)  # [B, T, 1]
        for m in masks[1:]:
            if m is not None:
                auto = both(auto, array_ops.expand_dims(math_ops.cast(m, "bool"), 1))  # [B, 1, S]
        if use_causal_mask:
            t, s = query.shape[1], value.shape[1]
            causal = linalg_ops.band_part(array_ops.ones((1, t, s), "bool"), -1, 0)
            auto = both(auto, causal)
        if auto is not None:
            if attention_mask is not None:
                auto = math_ops.logical_and(math_ops.cast(attention_mask, "bool"), auto)
            return auto
        return attention_mask

    def _masked_softmax(self, scores: Any, attention_mask: Any) -> Any:
        if attention_mask is not None:
            if not isinstance(attention_mask, TensorLike):
                attention_mask = convert_to_tensor(attention_mask)
            # Heads (and query axes) are inserted before the [T..., S...] axes of the mask.
            axis = -len(self._attention_axes) * 2 - 1
            for _ in range(scores.ndim - attention_mask.ndim):
                attention_mask = array_ops.expand_dims(attention_mask, axis)
        return self._softmax(scores, mask=attention_mask)

    def _compute_attention(self, query: Any, key: Any, value: Any, attention_mask: Any = None,
                           training: Any = None) -> tuple[Any, Any]:  # fmt: skip
        scale = array_ops.constant(1.0 / math.sqrt(float(self._key_dim)), dtype=query.dtype)
        query = math_ops.multiply(query, scale)
        scores = linalg_ops.einsum(self._dot_product_equation, key, query)
        scores = self._masked_softmax(scores, attention_mask)
        dropped = self._dropout_layer(scores, training=training)
        return linalg_ops.einsum(self._combine_equation, dropped, value), scores

    def call(self, query: Any, value: Any, key: Any = None, attention_mask: Any = None,
             return_attention_scores: bool = False, training: Any = None,
             use_causal_mask: bool = False) -> Any:  # fmt: skip
        value = self._as_input(value)
        key = value if key is None else self._as_input(key)
        attention_mask = self._compute_attention_mask(
            query, value, key, attention_mask, use_causal_mask
        )
        q = self.query_dense(query)
        k = self.key_dense(key)
        v = self.value_dense(value)
        out, scores = self._compute_attention(q, k, v, attention_mask, training)
        out = self.output_dense(out)
        if return_attention_scores:
            return out, scores
        return out

    def compute_output_shape(self, query_shape: Any, value_shape: Any = None,
                             key_shape: Any = None) -> TensorShape:  # fmt: skip
        query_shape = TensorShape(query_shape)
        if value_shape is not None:
            value_shape = TensorShape(value_shape)
            key_shape = value_shape if key_shape is None else TensorShape(key_shape)
            if value_shape[1:-1] != key_shape[1:-1]:
                raise ValueError(
                    f"MultiHeadAttention '{self.name}': all dimensions of `value` and `key`, "
                    f"except the last one, must be equal; got value {value_shape} and key "
                    f"{key_shape}."
                )
        if self._output_shape:
            out = self._output_shape
            out = list(out) if isinstance(out, collections.abc.Sized) else [out]
            return query_shape[:-1].concatenate(out)
        return query_shape

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        # Symbolic call: the output (and the scores when asked) from shapes alone.
        out = KerasTensor(self.compute_output_shape(shapes), self.compute_dtype)
        if not kwargs.get("return_attention_scores"):
            return out
        q = TensorShape(shapes)
        v = _shape_of(args[0])
        axes = [a % (q.rank + 1) for a in self._attention_axes]
        batch = [q[i] for i in range(q.rank - 1) if i not in axes]
        scores = batch + [self._num_heads] + [q[a] for a in axes] + [v[a] for a in axes]
        return out, KerasTensor(scores, self.compute_dtype)
