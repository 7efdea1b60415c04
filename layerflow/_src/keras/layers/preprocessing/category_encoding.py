"""`CategoryEncoding` and the output encodings shared by the categorical layers
(int / one_hot / multi_hot / count / tf_idf), as tf_keras's `encode_categorical_inputs`."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer, host
from layerflow._src.ops import array_ops, math_ops, segment_ops

__all__ = ["CategoryEncoding", "encode_categorical", "encoded_shape", "check_output_mode"]

INT, ONE_HOT, MULTI_HOT, COUNT, TF_IDF = "int", "one_hot", "multi_hot", "count", "tf_idf"


def check_output_mode(owner: str, output_mode: Any, allowed: tuple, sparse: Any) -> str:
    if output_mode not in allowed:
        raise ValueError(
            f"{owner}: unknown `output_mode` {output_mode!r}; expected one of {list(allowed)}."
        )
    if sparse:
        if output_mode == INT:
            raise ValueError(
                f"{owner}: `sparse` may only be true if `output_mode` is 'one_hot', "
                f"'multi_hot', 'count' or 'tf_idf'. Received: sparse={sparse} and "
                f"output_mode={output_mode}."
            )
        raise NotImplementedError(
            f"{owner}: sparse=True needs tf.SparseTensor outputs, which layerflow does not "
            "have yet; use sparse=False."
        )
    return output_mode


def check_lookup_sizes(owner: str, max_tokens: Any, num_oov_indices: Any) -> None:
    """IntegerLookup's and StringLookup's `max_tokens` and `num_oov_indices` (tf_keras's errors)."""
    if max_tokens is not None and max_tokens <= 1:
        raise ValueError(
            f"If `max_tokens` is set for `{owner}`, it must be greater than 1. "
            f"Received: max_tokens={max_tokens}."
        )
    if num_oov_indices < 0:
        raise ValueError(
            f"The value of `num_oov_indices` argument for `{owner}` must >= 0. "
            f"Received num_oov_indices={num_oov_indices}."
        )


def check_lookup_mode(owner: str, output_mode: Any, sparse: Any, invert: Any,
                      idf_weights: Any, vocabulary: Any) -> str:  # fmt: skip
    """A lookup layer's `output_mode` with `invert` and `idf_weights` (tf_keras's errors)."""
    output_mode = check_output_mode(
        owner, output_mode, (INT, ONE_HOT, MULTI_HOT, COUNT, TF_IDF), sparse
    )
    if invert and output_mode != INT:
        raise ValueError(
            f"{owner}: `output_mode` must be 'int' when `invert` is true. Received: "
            f"output_mode={output_mode}."
        )
    if output_mode == TF_IDF and idf_weights is None and vocabulary is not None:
        raise ValueError(f"{owner}: `idf_weights` must be set if output_mode is 'tf_idf'.")
    return output_mode


def default_dtype(output_mode: str, kwargs: dict) -> None:
    """tf_keras's rule: int64 for output_mode='int', floatx otherwise (in place)."""
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = "int64" if output_mode == INT else "float32"
    elif output_mode == INT and not dtypes.as_dtype(kwargs["dtype"]).is_integer:
        kwargs["dtype"] = "int64"


def encoded_shape(input_shape: Any, output_mode: str, depth: int) -> TensorShape:
    shape = TensorShape(input_shape).as_list()
    if output_mode == INT:
        return TensorShape(shape)
    if not shape:
        return TensorShape([depth])
    if output_mode == ONE_HOT and shape[-1] != 1:
        return TensorShape(shape + [depth])
    return TensorShape(shape[:-1] + [depth])


def encode_categorical(owner: str, indices: Any, output_mode: str, depth: int, dtype: str,
                       count_weights: Any = None, idf_weights: Any = None) -> Any:  # fmt: skip
    """Encode integer `indices` (rank <= 2 after one_hot's expansion) to `output_mode`."""
    if output_mode == INT:
        return math_ops.cast(indices, dtype)
    x = indices
    original = tuple(x.shape)
    if len(original) == 0:
        x = array_ops.expand_dims(x, -1)
    if output_mode == ONE_HOT and x.shape[-1] != 1:
        x = array_ops.expand_dims(x, -1)
    if len(x.shape) > 2:
        raise ValueError(
            f"{owner}: when output_mode is not 'int', maximum supported output rank is 2. "
            f"Received output_mode {output_mode} and input shape {list(original)}, which would "
            f"result in output rank {len(x.shape)}."
        )
    axis = -1 if len(x.shape) == 2 else None
    if count_weights is not None:
        w = math_ops.cast(count_weights, dtype)
        if tuple(w.shape) != tuple(x.shape):
            w = array_ops.reshape(w, tuple(x.shape))
        out = segment_ops.bincount(x, weights=w, minlength=depth, maxlength=depth, axis=axis)
    else:
        out = segment_ops.bincount(x, minlength=depth, maxlength=depth, axis=axis, dtype=dtype,
                                   binary_output=output_mode in (ONE_HOT, MULTI_HOT))  # fmt: skip
    out = math_ops.cast(out, dtype)
    if output_mode == TF_IDF:
        out = out * math_ops.cast(idf_weights, dtype)
    return out


class CategoryEncoding(PreprocessingLayer):
    """Encode integer features in [0, num_tokens) as one-hot, multi-hot or count vectors.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    >>> layer([[0, 1], [0, 0], [1, 2], [3, 1]]).numpy()
    array([[1., 1., 0., 0.],
           [1., 0., 0., 0.],
           [0., 1., 1., 0.],
           [0., 1., 0., 1.]], dtype=float32)
    """

    def __init__(self, num_tokens: int | None = None, output_mode: str = MULTI_HOT,
                 sparse: bool = False, **kwargs: Any) -> None:  # fmt: skip
        # tf_keras: "binary" was the old name of multi_hot.
        if output_mode == "binary":
            output_mode = MULTI_HOT
        super().__init__(**kwargs)
        self.output_mode = check_output_mode(
            "CategoryEncoding", output_mode, (COUNT, ONE_HOT, MULTI_HOT), sparse
        )
        if num_tokens is None:
            raise ValueError(
                "CategoryEncoding: `num_tokens` must be set; pass the number of categories, e.g. "
                "`CategoryEncoding(num_tokens=10)`."
            )
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
            raise ValueError(
                f"CategoryEncoding: `num_tokens` must be >= 1. Received: num_tokens={num_tokens}."
            )
        self.num_tokens = num_tokens
        self.sparse = bool(sparse)

    def _output_dtype(self, input_dtype: Any) -> Any:
        return self.compute_dtype

    def call(self, inputs: Any, count_weights: Any = None) -> Any:
        if count_weights is not None and self.output_mode != COUNT:
            raise ValueError(
                f"CategoryEncoding '{self.name}': `count_weights` is not used when "
                f"`output_mode` is not 'count'. Received `count_weights={count_weights}`."
            )
        if not inputs.dtype.is_integer:
            vals = host(inputs)
            if not np.all(np.equal(np.mod(vals, 1), 0)):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"CategoryEncoding '{self.name}' expects integer category ids, got "
                    f"{inputs.dtype.name} values that are not whole numbers.",
                )  # fmt: skip
            inputs = math_ops.cast(inputs, "int64")
        vals = host(inputs)
        if vals.size and (vals.min() < 0 or vals.max() >= self.num_tokens):
            raise errors.InvalidArgumentError(
                None, None,
                f"CategoryEncoding '{self.name}': input values must be in the range 0 <= values "
                f"< num_tokens with num_tokens={self.num_tokens}; got values from {vals.min()} "
                f"to {vals.max()}.",
            )  # fmt: skip
        return encode_categorical(
            f"CategoryEncoding '{self.name}'", inputs, self.output_mode, self.num_tokens,
            self.compute_dtype, count_weights=count_weights,
        )  # fmt: skip

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return encoded_shape(input_shape, self.output_mode, self.num_tokens)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_tokens": self.num_tokens,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }
