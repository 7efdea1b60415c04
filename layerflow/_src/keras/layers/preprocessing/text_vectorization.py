"""`TextVectorization`: strings to token indices or bag-of-words vectors, as tf_keras 2:
standardize (lowercase and/or strip punctuation with tf_keras's exact regex, or a callable),
split (whitespace, characters, or a callable), ngrams, then a `StringLookup` with mask token ""
(index 0) and one OOV index, output as int sequences (padded/truncated to
`output_sequence_length`, or ragged), multi_hot, count or tf_idf.

The vocabulary, adapted or given, is kept in `get_config()` (tf_keras writes an asset file), so
`from_config` and `.keras` files restore it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer, host, listify
from layerflow._src.keras.layers.preprocessing.category_encoding import (
    COUNT,
    INT,
    MULTI_HOT,
    TF_IDF,
)
from layerflow._src.keras.layers.preprocessing.string_lookup import (
    StringLookup,
    adapt_strings,
    string_rows,
)
from layerflow._src.keras.serialization import deserialize_keras_object, serialize_keras_object
from layerflow._src.ops import array_ops, manip_ops, string_ops, unicode_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor

__all__ = ["TextVectorization"]

LOWER_AND_STRIP_PUNCTUATION = "lower_and_strip_punctuation"
LOWER = "lower"
STRIP_PUNCTUATION = "strip_punctuation"
WHITESPACE = "whitespace"
CHARACTER = "character"
# tf_keras's DEFAULT_STRIP_REGEX, character for character.
DEFAULT_STRIP_REGEX = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


def _check_choice(value: Any, allowed: tuple, arg: str) -> None:
    if value is None or callable(value) or value in allowed:
        return
    raise ValueError(
        f"The `{arg}` argument of TextVectorization must be one of {list(allowed)}, None or a "
        f"callable. Received: {arg}={value!r}."
    )


class TextVectorization(PreprocessingLayer):
    """Map text to integer sequences or token-count vectors through a learned vocabulary.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.TextVectorization(output_sequence_length=4)
    >>> layer.adapt(["The cat sat.", "The dog!"])
    >>> layer.get_vocabulary()
    ['', '[UNK]', 'the', 'sat', 'dog', 'cat']
    >>> layer(["the dog sat on"]).numpy()
    array([[2, 4, 3, 1]])
    """

    def __init__(self, max_tokens: int | None = None,
                 standardize: Any = LOWER_AND_STRIP_PUNCTUATION, split: Any = WHITESPACE,
                 ngrams: Any = None, output_mode: Any = INT, output_sequence_length: Any = None,
                 pad_to_max_tokens: bool = False, vocabulary: Any = None, idf_weights: Any = None,
                 sparse: bool = False, ragged: bool = False, encoding: str = "utf-8",
                 **kwargs: Any) -> None:  # fmt: skip
        if kwargs.get("dtype") not in (None, "string"):
            raise ValueError(
                "`TextVectorization` may only have a dtype of string. Received dtype: "
                f"{kwargs['dtype']}."
            )
        kwargs["dtype"] = "string"
        _check_choice(standardize, (LOWER_AND_STRIP_PUNCTUATION, LOWER, STRIP_PUNCTUATION),
                      "standardize")  # fmt: skip
        _check_choice(split, (WHITESPACE, CHARACTER), "split")
        output_mode = {"binary": MULTI_HOT, "tf-idf": TF_IDF}.get(output_mode, output_mode)
        if output_mode not in (INT, COUNT, MULTI_HOT, TF_IDF, None):
            raise ValueError(
                "The `output_mode` argument of TextVectorization must be one of ['int', 'count', "
                f"'multi_hot', 'tf_idf'] or None. Received: output_mode={output_mode!r}."
            )
        if isinstance(ngrams, list):
            ngrams = tuple(ngrams)  # a config round trip turns tuples into lists
        is_int = isinstance(ngrams, int) and not isinstance(ngrams, bool)
        ints = isinstance(ngrams, tuple) and all(isinstance(i, int) for i in ngrams)
        if not (ngrams is None or is_int or ints):
            raise ValueError(
                f"`ngrams` must be None, an integer, or a tuple of integers. Received: "
                f"ngrams={ngrams}"
            )
        if output_mode == INT and not (
            output_sequence_length is None or isinstance(output_sequence_length, int)
        ):
            raise ValueError(
                "`output_sequence_length` must be either None or an integer when `output_mode` "
                f"is 'int'. Received: output_sequence_length={output_sequence_length}"
            )
        if output_mode != INT and output_sequence_length is not None:
            raise ValueError(
                "`output_sequence_length` must not be set if `output_mode` is not 'int'. "
                f"Received output_sequence_length={output_sequence_length}."
            )
        if ragged and output_mode != INT:
            raise ValueError(
                "`ragged` must not be true if `output_mode` is not 'int'. Received: "
                f"ragged={ragged} and output_mode={output_mode}"
            )
        if ragged and output_sequence_length is not None:
            raise ValueError(
                "`output_sequence_length` must not be set if ragged is True. Received: "
                f"ragged={ragged} and output_sequence_length={output_sequence_length}"
            )
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        super().__init__(**kwargs)
        self._standardize = standardize
        self._split = split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self._ragged = bool(ragged)
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._encoding = encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="",
            output_mode=output_mode if output_mode is not None else INT, sparse=sparse,
            encoding=encoding, vocabulary_size=vocabulary_size,
        )  # fmt: skip

    # --- vocabulary ------------------------------------------------------------------------------
    def get_vocabulary(self, include_special_tokens: bool = True) -> list[str]:
        """The vocabulary, index by index ("" and "[UNK]" first unless told not to)."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        """The vocabulary size, counting the mask and OOV indices."""
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Set the vocabulary (list, array, tensor or file path) and, for tf_idf, the weights."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights=idf_weights)

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Learn the vocabulary (and idf weights) from strings, a tensor or a Dataset of them."""
        if self._lookup_layer.input_vocabulary is not None:
            raise ValueError(
                f"Cannot adapt TextVectorization layer '{self.name}' after setting a static "
                "vocabulary via init argument or `set_vocabulary`."
            )
        adapt_strings(self, data, batch_size, steps)

    def reset_state(self) -> None:
        self._lookup_layer.reset_state()

    def update_state(self, data: Any) -> None:
        tokens = self._preprocess(data)
        self._lookup_layer.update_rows(string_rows(f"TextVectorization '{self.name}'", tokens))

    def finalize_state(self) -> None:
        self._lookup_layer.finalize_state()

    # --- computing -------------------------------------------------------------------------------
    def _preprocess(self, inputs: Any) -> Any:
        if not isinstance(inputs, Tensor):
            inputs = array_ops.constant(np.asarray(host(inputs), dtype=object), dtype="string")
        if inputs.dtype.name != "string":
            raise TypeError(
                f"TextVectorization '{self.name}' expects string inputs, got "
                f"{inputs.dtype.name}. Convert numbers with tf.strings.as_string first."
            )
        if self._standardize in (LOWER, LOWER_AND_STRIP_PUNCTUATION):
            inputs = string_ops.lower(inputs)
        if self._standardize in (STRIP_PUNCTUATION, LOWER_AND_STRIP_PUNCTUATION):
            inputs = string_ops.regex_replace(inputs, DEFAULT_STRIP_REGEX, "")
        if callable(self._standardize):
            inputs = self._standardize(inputs)
        if self._split is not None:
            if len(inputs.shape) > 1:
                if inputs.shape[-1] != 1:
                    raise ValueError(
                        "When using `TextVectorization` to tokenize strings, the input rank must "
                        "be 1 or the last shape dimension must be 1. Received: "
                        f"inputs.shape={tuple(inputs.shape)} with rank={len(inputs.shape)}"
                    )
                inputs = array_ops.squeeze(inputs, axis=-1)
            if self._split == WHITESPACE:
                inputs = string_ops.split(inputs)
            elif self._split == CHARACTER:
                inputs = unicode_ops.unicode_split(inputs, "UTF-8")
            else:
                inputs = self._split(inputs)
        if self._ngrams is not None:
            inputs = string_ops.ngrams(inputs, ngram_width=self._ngrams, separator=" ")
        return inputs

    def _convert_inputs(self, inputs: Any) -> Any:
        if isinstance(inputs, RaggedTensor):
            return inputs
        if isinstance(inputs, list | tuple | np.ndarray):
            return array_ops.constant(np.asarray(inputs, dtype=object), dtype="string")
        return super()._convert_inputs(inputs)

    def call(self, inputs: Any) -> Any:
        tokens = self._preprocess(inputs)
        if self._output_mode is None:
            return tokens
        out = self._lookup_layer(tokens)
        if self._output_mode != INT or self._ragged:
            return out
        n = self._output_sequence_length
        if isinstance(out, RaggedTensor):
            return out.to_tensor(default_value=0, shape=None if n is None else [None, n])
        if n is not None:
            out = out[..., :n]
            width = out.shape[-1]
            if width < n:
                pad = [[0, 0]] * (len(out.shape) - 1) + [[0, n - width]]
                out = manip_ops.pad(out, pad)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        if self._output_mode == INT:
            return TensorShape([shape[0] if shape else None, self._output_sequence_length])
        if self._split is None:
            if len(shape) <= 1:
                shape = shape + [1]
        else:
            shape = shape + [None]
        return self._lookup_layer.compute_output_shape(shape)

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        if self._output_mode is None:
            raise NotImplementedError(
                f"TextVectorization '{self.name}' with output_mode=None gives ragged tokens, "
                "which layerflow's functional models cannot carry; call it eagerly instead."
            )
        dtype = "int64" if self._output_mode == INT else self._lookup_layer.compute_dtype
        return KerasTensor(self.compute_output_shape(shapes), dtype)

    def get_config(self) -> dict[str, Any]:
        lookup = self._lookup_layer.get_config()
        standardize, split = self._standardize, self._split
        if callable(standardize) or callable(split):
            standardize = serialize_keras_object(standardize) if callable(standardize) else (
                standardize)  # fmt: skip
            split = serialize_keras_object(split) if callable(split) else split
        return {
            **super().get_config(),
            "max_tokens": self._lookup_layer.max_tokens,
            "standardize": standardize,
            "split": split,
            "ngrams": listify(self._ngrams_arg),
            "output_mode": self._output_mode,
            "output_sequence_length": self._output_sequence_length,
            "pad_to_max_tokens": self._lookup_layer.pad_to_max_tokens,
            "sparse": self._lookup_layer.sparse,
            "ragged": self._ragged,
            "vocabulary": lookup["vocabulary"],
            "idf_weights": lookup["idf_weights"],
            "encoding": self._encoding,
            "vocabulary_size": self.vocabulary_size(),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TextVectorization:
        config = dict(config)
        builtins = {
            "standardize": (LOWER_AND_STRIP_PUNCTUATION, LOWER, STRIP_PUNCTUATION),
            "split": (WHITESPACE, CHARACTER),
        }
        for key, builtin in builtins.items():
            value = config.get(key)
            if value is not None and value not in builtin and not callable(value):
                config[key] = deserialize_keras_object(value)
        return cls(**config)
