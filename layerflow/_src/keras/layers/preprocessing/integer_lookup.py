"""`IntegerLookup`: map integer tokens to contiguous indices through a vocabulary (given as a
list, an array or a file of one token per line, or learned by `adapt` sorted by frequency),
with mask and OOV indices, `invert`, and int / one_hot / multi_hot / count / tf_idf outputs
(tf_keras 2's `IndexLookup` semantics).

An adapted vocabulary is kept in `get_config()` (as `vocabulary`, with `idf_weights`), so
`from_config` and `.keras` files restore it; tf_keras writes it as an asset file instead.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.layers.preprocessing.base import (
    PreprocessingLayer,
    host,
    listify,
    on_device_of,
)
from layerflow._src.keras.layers.preprocessing.category_encoding import (
    INT,
    TF_IDF,
    check_lookup_mode,
    check_lookup_sizes,
    default_dtype,
    encode_categorical,
    encoded_shape,
)

__all__ = ["IntegerLookup"]


class IntegerLookup(PreprocessingLayer):
    """Map integers to indices: mask (if `mask_token`), then OOV indices, then the vocabulary.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    >>> layer([[12, 1138, 42], [42, 1000, 36]]).numpy()
    array([[1, 3, 4],
           [4, 0, 2]])
    """

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: Any = None, oov_token: int = -1, vocabulary: Any = None,
                 vocabulary_dtype: str = "int64", idf_weights: Any = None, invert: bool = False,
                 output_mode: str = INT, sparse: bool = False, pad_to_max_tokens: bool = False,
                 **kwargs: Any) -> None:  # fmt: skip
        if not dtypes.as_dtype(vocabulary_dtype).is_integer:
            raise ValueError(
                f"IntegerLookup: `vocabulary_dtype` must be an integer dtype. Received: "
                f"{vocabulary_dtype}."
            )
        check_lookup_sizes("IntegerLookup", max_tokens, num_oov_indices)
        kwargs.pop("vocabulary_size", None)  # written by get_config; informational
        default_dtype(output_mode, kwargs)
        super().__init__(**kwargs)
        self.output_mode = check_lookup_mode(
            "IntegerLookup", output_mode, sparse, invert, idf_weights, vocabulary
        )
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = None if mask_token is None else int(mask_token)
        self.oov_token = None if oov_token is None else int(oov_token)
        self.vocabulary_dtype = dtypes.as_dtype(vocabulary_dtype).name
        self.invert = bool(invert)
        self.sparse = bool(sparse)
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.input_vocabulary = vocabulary
        self.input_idf_weights = idf_weights
        self.__dict__["_tokens"] = None  # the learned/given tokens, without special tokens
        self.__dict__["_idf"] = None
        self.__dict__["_counts"] = {}
        self.__dict__["_doc_counts"] = {}
        self.__dict__["_num_documents"] = 0
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # --- vocabulary ------------------------------------------------------------------------------
    def _oov_start_index(self) -> int:
        return 1 if self.mask_token is not None and self.output_mode == INT else 0

    def _token_start_index(self) -> int:
        return self._oov_start_index() + self.num_oov_indices

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Set the vocabulary (list, array, tensor or a file path) and, for tf_idf, weights."""
        if self.output_mode == TF_IDF:
            if idf_weights is None:
                raise ValueError(
                    f"IntegerLookup '{self.name}': `idf_weights` must be set if output_mode is "
                    "'tf_idf'."
                )
        elif idf_weights is not None:
            raise ValueError(
                f"IntegerLookup '{self.name}': `idf_weights` should only be set if output_mode "
                f"is 'tf_idf'. Received: output_mode={self.output_mode} and "
                f"idf_weights={idf_weights}."
            )
        if isinstance(vocabulary, str | os.PathLike):
            path = os.fspath(vocabulary)
            if not os.path.exists(path):
                raise ValueError(f"IntegerLookup '{self.name}': vocabulary file {path} does not "
                                 "exist.")  # fmt: skip
            if self.output_mode == TF_IDF:
                raise ValueError(
                    "output_mode 'tf_idf' does not support loading a vocabulary from file."
                )
            with open(path, encoding="utf-8") as f:
                try:
                    vocab = np.array([int(line) for line in f.read().splitlines() if line],
                                     np.int64)  # fmt: skip
                except ValueError as err:
                    raise ValueError(
                        f"IntegerLookup '{self.name}': vocabulary file {path} must hold one "
                        f"integer per line: {err}."
                    ) from err
        else:
            vocab = np.asarray(host(vocabulary)).reshape(-1)
            if vocab.size and vocab.dtype.kind not in "iu":
                raise ValueError(
                    f"IntegerLookup '{self.name}': the vocabulary must hold integers, got "
                    f"dtype {vocab.dtype}."
                )
            vocab = vocab.astype(np.int64)
        if vocab.size == 0:
            raise ValueError(
                f"IntegerLookup '{self.name}': cannot set an empty vocabulary; the vocabulary "
                "must have at least one token."
            )
        oov_start = self._oov_start_index()
        token_start = self._token_start_index()
        special = [self.mask_token] * oov_start + [self.oov_token] * self.num_oov_indices
        found_special = list(vocab[:token_start]) == special
        tokens = vocab[token_start:] if found_special else vocab
        uniq, counts = np.unique(tokens, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"IntegerLookup '{self.name}': the passed vocabulary has at least one repeated "
                f"term. Please uniquify your dataset. The repeated terms are "
                f"{uniq[counts > 1].tolist()}."
            )
        for what, tok in (("mask_token", self.mask_token), ("oov_token", self.oov_token)):
            if tok is not None and tok in tokens and (what == "mask_token" or
                                                      self.num_oov_indices):  # fmt: skip
                raise ValueError(
                    f"IntegerLookup '{self.name}': found reserved {what} at unexpected location "
                    "in `vocabulary`. Either remove all mask and OOV tokens, or include them "
                    f"only at the start of the vocabulary in precisely this order: {special}. "
                    f"Received: {what}={tok}."
                )
        if self.max_tokens is not None and token_start + len(tokens) > self.max_tokens:
            raise ValueError(
                f"IntegerLookup '{self.name}': attempted to set a vocabulary larger than the "
                f"maximum vocab size. Passed vocab size is {token_start + len(tokens)}, max "
                f"vocab size is {self.max_tokens}."
            )
        self.__dict__["_tokens"] = tokens
        if self.output_mode == TF_IDF:
            idf = np.asarray(host(idf_weights), np.float64).reshape(-1)
            if len(idf) != len(vocab):
                raise ValueError(
                    "`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                    f"{len(idf)}, len(vocabulary) is {len(vocab)}."
                )
            if not found_special:
                idf = np.concatenate([np.full(token_start, idf.mean()), idf])
            self.__dict__["_idf"] = idf
        self._pad_idf()

    def _pad_idf(self) -> None:
        if self._idf is not None and self.pad_to_max_tokens and self.max_tokens is not None:
            self.__dict__["_idf"] = np.pad(self._idf, (0, self.max_tokens - len(self._idf)))

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[int]:
        """The vocabulary, index by index (with the mask and OOV tokens unless told not to)."""
        tokens = [] if self._tokens is None else [int(t) for t in self._tokens]
        if not include_special_tokens:
            return tokens
        oov = self.oov_token
        return [self.mask_token] * self._oov_start_index() + [oov] * self.num_oov_indices + tokens

    def vocabulary_size(self) -> int:
        """The vocabulary size, counting the mask and OOV indices."""
        return self._token_start_index() + (0 if self._tokens is None else len(self._tokens))

    # --- adapt -----------------------------------------------------------------------------------
    def _adapt_build(self, first_batch: np.ndarray) -> None:
        self.built = True

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Learn the vocabulary from `data`: tokens by decreasing frequency (ties: larger first)."""
        if self.input_vocabulary is not None:
            raise ValueError(
                f"Cannot adapt IntegerLookup layer '{self.name}' after setting a static "
                "vocabulary via init argument or `set_vocabulary`."
            )
        super().adapt(data, batch_size=batch_size, steps=steps)

    def reset_state(self) -> None:
        self.__dict__["_counts"] = {}
        self.__dict__["_doc_counts"] = {}
        self.__dict__["_num_documents"] = 0

    def update_state(self, data: Any) -> None:
        x = np.asarray(host(data))
        if x.dtype.kind not in "iu":
            raise TypeError(
                f"IntegerLookup '{self.name}'.adapt expects integer data, got dtype {x.dtype}."
            )
        x = x.astype(np.int64)
        if x.ndim <= 1:
            x = x.reshape(1, -1)  # a 1-D tensor is a single document (for tf_idf)
        uniq, counts = np.unique(x, return_counts=True)
        for t, c in zip(uniq.tolist(), counts.tolist()):
            self._counts[t] = self._counts.get(t, 0) + c
        if self.output_mode == TF_IDF:
            for row in x.reshape(x.shape[0], -1):
                for t in np.unique(row).tolist():
                    self._doc_counts[t] = self._doc_counts.get(t, 0) + 1
            self.__dict__["_num_documents"] = self._num_documents + x.shape[0]

    def finalize_state(self) -> None:
        counts = dict(self._counts)
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        if not counts:
            return
        tokens = np.array(list(counts), np.int64)
        freq = np.array([counts[t] for t in tokens.tolist()], np.int64)
        order = np.lexsort((tokens, freq))[::-1]
        if self.max_tokens:
            order = order[: self.max_tokens - self._token_start_index()]
        tokens = tokens[order]
        self.__dict__["_tokens"] = tokens
        if self.output_mode == TF_IDF:
            docs = np.array([self._doc_counts.get(t, 0) for t in tokens.tolist()], np.float64)
            idf = np.log(1 + self._num_documents / (1 + docs)).astype(np.float32)
            idf = np.concatenate([np.full(self._token_start_index(), idf.mean()), idf])
            self.__dict__["_idf"] = idf
            self._pad_idf()
        self.reset_state()

    # --- computing -------------------------------------------------------------------------------
    def _output_dtype(self, input_dtype: Any) -> Any:
        return self.vocabulary_dtype if self.invert else self.compute_dtype

    def _depth(self) -> int:
        if self.pad_to_max_tokens and self.max_tokens is not None:
            return self.max_tokens
        return self.vocabulary_size()

    def call(self, inputs: Any) -> Any:
        if self.output_mode != INT and not self.pad_to_max_tokens and self._tokens is None:
            raise RuntimeError(
                f"IntegerLookup '{self.name}': when using `output_mode={self.output_mode}` and "
                "`pad_to_max_tokens=False`, you must set the layer's vocabulary before calling "
                "it. Either pass a `vocabulary` argument to the layer, or call `adapt` with some "
                "sample data."
            )
        if not inputs.dtype.is_integer:
            raise TypeError(
                f"IntegerLookup '{self.name}' expects integer inputs, got {inputs.dtype.name}; "
                "cast them first, or use StringLookup for string features."
            )
        x = host(inputs).astype(np.int64)
        out = self._invert_ids(x) if self.invert else self._lookup_ids(x)
        idx = on_device_of(out, inputs)
        if self.invert:
            from layerflow._src.ops import math_ops

            return math_ops.cast(idx, self.vocabulary_dtype)
        idf = None if self._idf is None else self._idf.astype(np.float32)
        return encode_categorical(
            f"IntegerLookup '{self.name}'", idx, self.output_mode, self._depth(),
            self.compute_dtype, idf_weights=idf,
        )  # fmt: skip

    def _lookup_ids(self, x: np.ndarray) -> np.ndarray:
        tokens = np.empty(0, np.int64) if self._tokens is None else self._tokens
        order = np.argsort(tokens, kind="stable")
        sorted_tokens = tokens[order]
        pos = np.searchsorted(sorted_tokens, x)
        pos_c = np.minimum(pos, max(len(tokens) - 1, 0))
        found = (pos < len(tokens)) & (sorted_tokens[pos_c] == x) if len(tokens) else x != x
        out = np.where(found, order[pos_c] + self._token_start_index(), -1).astype(np.int64)
        oov = ~found
        if self.mask_token is not None:
            is_mask = x == self.mask_token
            oov &= ~is_mask
        if oov.any():
            if self.num_oov_indices == 0:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"IntegerLookup '{self.name}': when `num_oov_indices=0` all inputs should "
                    f"be in vocabulary, found OOV values {np.unique(x[oov]).tolist()}, consider "
                    "setting `num_oov_indices=1`.",
                )  # fmt: skip
            oov_idx = self._oov_start_index() + np.mod(x, self.num_oov_indices)
            out = np.where(oov, oov_idx, out)
        if self.mask_token is not None:
            # Masks map to 0 for int output and are dropped (out of range) otherwise.
            out = np.where(is_mask, 0 if self.output_mode == INT else np.iinfo(np.int64).max, out)
        return out

    def _invert_ids(self, x: np.ndarray) -> np.ndarray:
        vocab = np.asarray(self.get_vocabulary(), dtype=object)
        known = (x >= self._token_start_index()) & (x < len(vocab))
        safe = np.where(known, x, 0)
        out = np.where(known, vocab[safe] if len(vocab) else 0, self.oov_token)
        if self.mask_token is not None and self.output_mode == INT:
            out = np.where(x == 0, self.mask_token, out)
        return out.astype(np.int64)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return encoded_shape(input_shape, self.output_mode, self._depth())

    def get_config(self) -> dict[str, Any]:
        vocabulary = self.input_vocabulary
        idf = self.input_idf_weights
        if vocabulary is None and self._tokens is not None:
            vocabulary = self.get_vocabulary()
            if self._idf is not None:
                idf = self._idf[: self.vocabulary_size()].tolist()
        if not isinstance(vocabulary, str | os.PathLike):
            vocabulary = listify(vocabulary)
        else:
            vocabulary = os.fspath(vocabulary)
        return {
            **super().get_config(),
            "invert": self.invert,
            "max_tokens": self.max_tokens,
            "num_oov_indices": self.num_oov_indices,
            "oov_token": self.oov_token,
            "mask_token": self.mask_token,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
            "pad_to_max_tokens": self.pad_to_max_tokens,
            "vocabulary_dtype": self.vocabulary_dtype,
            "idf_weights": listify(idf),
            "vocabulary": vocabulary,
            "vocabulary_size": self.vocabulary_size(),
        }
