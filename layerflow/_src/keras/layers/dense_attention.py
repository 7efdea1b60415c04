"""Attention (Luong, dot-product) and AdditiveAttention (Bahdanau) on `[query, value(, key)]`.

Keras 2's BaseDenseAttention: scores `[B, Tq, Tv]`, value-mask and causal mask pushed to -1e9
(-65504 in float16) before the softmax, dropout on the weights while training, a query mask
zeroing the output rows.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.ops import array_ops, math_ops, nn_ops, random_ops

__all__ = ["AdditiveAttention", "Attention"]


def _lower_triangular(tq: int, tv: int) -> Any:
    return array_ops.constant([[i >= j for j in range(tv)] for i in range(tq)], dtype="bool")


class _BaseDenseAttention(Layer):
    def __init__(self, dropout: float = 0.0, **kwargs: Any) -> None:
        # Keras 2's deprecated `causal=` constructor argument (use_causal_mask= in call).
        causal = bool(kwargs.pop("causal", False))
        super().__init__(**kwargs)
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1], got {dropout!r}.")
        self.causal = causal
        self.dropout = dropout
        self.supports_masking = True

    def _validate(self, inputs: Any, mask: Any) -> None:
        name = f"{type(self).__name__} '{self.name}'"
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                f"{name} must be called on a list of inputs, namely [query, value] or "
                f"[query, value, key]. Received: inputs={inputs!r}."
            )
        if not 2 <= len(inputs) <= 3:
            raise ValueError(
                f"{name} accepts a list of 2 or 3 inputs, namely [query, value] or [query, value, "
                f"key]. Received a list of {len(inputs)}."
            )
        if mask is not None:
            if not isinstance(mask, (list, tuple)):
                raise ValueError(f"{name}: mask must be a list, namely [query_mask, value_mask].")
            if not 2 <= len(mask) <= len(inputs):
                raise ValueError(
                    f"{name}: mask must be a list of length 2, namely [query_mask, value_mask]. "
                    f"Received a list of {len(mask)}."
                )

    def _calculate_scores(self, query: Any, key: Any) -> Any:
        raise NotImplementedError

    def _apply_scores(self, scores: Any, value: Any, scores_mask: Any, training: Any) -> Any:
        if scores_mask is not None:
            big = 65504.0 if scores.dtype.name == "float16" else 1.0e9
            pad = math_ops.cast(math_ops.logical_not(scores_mask), scores.dtype)
            scores = scores - array_ops.constant(big, dtype=scores.dtype) * pad
        weights = nn_ops.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            dt = weights.dtype
            keep = math_ops.cast(
                math_ops.greater_equal(
                    random_ops.uniform(tuple(weights.shape), dtype=dt),
                    array_ops.constant(self.dropout, dtype=dt),
                ),
                dt,
            )
            dropped = weights * keep * array_ops.constant(1.0 / (1.0 - self.dropout), dtype=dt)
            return math_ops.matmul(dropped, value), weights
        return math_ops.matmul(weights, value), weights

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             return_attention_scores: bool = False,
             use_causal_mask: bool = False) -> Any:  # fmt: skip
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask is not None else None
        v_mask = mask[1] if mask is not None else None
        scores = self._calculate_scores(q, k)
        scores_mask = None
        if v_mask is not None:
            scores_mask = array_ops.expand_dims(math_ops.cast(v_mask, "bool"), -2)  # [B, 1, Tv]
        if self.causal or use_causal_mask:
            causal = _lower_triangular(scores.shape[-2], scores.shape[-1])
            scores_mask = (
                causal if scores_mask is None else math_ops.logical_and(scores_mask, causal)
            )
        result, weights = self._apply_scores(scores, v, scores_mask, training)
        if q_mask is not None:
            keep = array_ops.expand_dims(math_ops.cast(q_mask, result.dtype), -1)  # [B, Tq, 1]
            result = result * keep
        if return_attention_scores:
            return result, weights
        return result

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        self._validate(inputs, mask)
        return None if mask is None else mask[0]

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        q = TensorShape(input_shape[0])
        v = TensorShape(input_shape[1])
        return q[:-1].concatenate([v[-1]])

    def get_config(self) -> dict[str, Any]:
        config = {**super().get_config(), "dropout": self.dropout}
        if self.causal:
            config["causal"] = True
        return config


class Attention(_BaseDenseAttention):
    """Dot-product attention: `softmax(query @ key^T) @ value` (score_mode "dot" or "concat").

    >>> import layerflow as tf
    >>> q, v = tf.ones((2, 3, 4)), tf.ones((2, 5, 4))
    >>> tf.keras.layers.Attention()([q, v]).shape
    TensorShape([2, 3, 4])
    """

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(
                f"Attention: score_mode must be 'dot' or 'concat', got {score_mode!r}."
            )
        self.use_scale = use_scale
        self.score_mode = score_mode

    def build(self, input_shape: Any) -> None:
        self.scale = None
        self.concat_score_weight = None
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(
                name="concat_score_weight", shape=(), initializer="ones"
            )

    def _calculate_scores(self, query: Any, key: Any) -> Any:
        if self.score_mode == "dot":
            scores = math_ops.matmul(query, array_ops.transpose(key, _swap_last(key.ndim)))
            return scores if self.scale is None else scores * self.scale
        s = array_ops.expand_dims(query, -2) + array_ops.expand_dims(key, -3)
        if self.scale is not None:
            s = self.scale * s
        return self.concat_score_weight * math_ops.reduce_sum(math_ops.tanh(s), axis=-1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": self.score_mode}


class AdditiveAttention(_BaseDenseAttention):
    """Additive attention: scores `sum(scale * tanh(query + key), -1)`.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.AdditiveAttention()
    >>> layer([tf.ones((2, 3, 4)), tf.ones((2, 5, 4))]).shape, layer.weights[0].shape
    (TensorShape([2, 3, 4]), TensorShape([4]))
    """

    def __init__(self, use_scale: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.use_scale = use_scale

    def build(self, input_shape: Any) -> None:
        dim = TensorShape(input_shape[1])[-1]
        self.scale = None
        if self.use_scale:
            if dim is None:
                raise ValueError(
                    f"AdditiveAttention '{self.name}' needs the last dimension of value known, "
                    f"got shapes {input_shape}."
                )
            self.scale = self.add_weight(name="scale", shape=[dim], initializer="glorot_uniform")

    def _calculate_scores(self, query: Any, key: Any) -> Any:
        t = math_ops.tanh(array_ops.expand_dims(query, -2) + array_ops.expand_dims(key, -3))
        if self.scale is not None:
            t = self.scale * t
        return math_ops.reduce_sum(t, axis=-1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "use_scale": self.use_scale}


def _swap_last(ndim: int) -> list[int]:
    return list(range(ndim - 2)) + [ndim - 1, ndim - 2]
