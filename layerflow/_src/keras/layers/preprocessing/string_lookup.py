"""`StringLookup`: map string tokens to contiguous indices through a vocabulary (a list, an
array or a file of one token per line, or learned by `adapt` sorted by frequency), with mask and
OOV indices (OOV strings hashed into `num_oov_indices` buckets with `to_hash_bucket_fast`, as
tf_keras), `invert`, and int / one_hot / multi_hot / count / tf_idf outputs (tf_keras 2's
`IndexLookup` semantics).

`IntegerLookup` (h-kprep) works on int64 arrays throughout (searchsorted, `mod` buckets, int
files), so this layer keeps its own token table of `bytes` rather than subclassing it; the two
agree on index layout, adapt order, idf weights and config keys. As `IntegerLookup` does, the
vocabulary is kept in `get_config()` (tf_keras writes an asset file), so `from_config` and
`.keras` files restore it.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import numpy as np

from layerflow._src.data.dataset import Dataset
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer, host, listify
from layerflow._src.keras.layers.preprocessing.category_encoding import (
    INT,
    TF_IDF,
    check_lookup_mode,
    check_lookup_sizes,
    default_dtype,
    encode_categorical,
    encoded_shape,
)
from layerflow._src.ops import array_ops, fingerprint
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor

__all__ = ["StringLookup", "adapt_strings", "string_rows", "to_bytes"]

_DROP = np.iinfo(np.int64).max  # an index bincount drops (masks in non-int modes)


def to_bytes(value: Any, encoding: str = "utf-8") -> Any:
    """`value` (str or bytes, or None) as bytes."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, np.bytes_):
        return bytes(value)
    return str(value).encode(encoding)


def string_rows(owner: str, data: Any, encoding: str = "utf-8") -> list[list[bytes]]:
    """`data` (strings of rank 0-2, a ragged tensor or nested lists) as rows of bytes tokens."""
    if isinstance(data, RaggedTensor):
        return [[to_bytes(t) for t in np.asarray(r, dtype=object).reshape(-1)]
                for r in data.to_list()]  # fmt: skip
    if isinstance(data, list) and data and all(isinstance(r, list) for r in data):
        return [[to_bytes(t, encoding) for t in r] for r in data]
    arr = np.asarray(host(data), dtype=object) if not isinstance(data, np.ndarray) else data
    if arr.dtype.kind in "iufb" or (arr.size and not isinstance(arr.flat[0], str | bytes)):
        raise TypeError(f"{owner}: expected string data, got {arr.dtype} values like "
                        f"{arr.reshape(-1)[:3].tolist()}.")  # fmt: skip
    if arr.ndim <= 1:
        arr = arr.reshape(1, -1)  # a 1-D tensor is a single document (for tf_idf)
    rows = arr.reshape(arr.shape[0], -1)
    return [[to_bytes(t, encoding) for t in row] for row in rows]


class StringLookup(PreprocessingLayer):
    """Map strings to indices: mask (if `mask_token`), then OOV indices, then the vocabulary.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.StringLookup(vocabulary=["a", "b", "c", "d"])
    >>> layer([["a", "c", "d"], ["d", "z", "b"]]).numpy()
    array([[1, 3, 4],
           [4, 0, 2]])
    """

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: Any = None, oov_token: str = "[UNK]", vocabulary: Any = None,
                 idf_weights: Any = None, encoding: str = "utf-8", invert: bool = False,
                 output_mode: str = INT, sparse: bool = False, pad_to_max_tokens: bool = False,
                 **kwargs: Any) -> None:  # fmt: skip
        check_lookup_sizes("StringLookup", max_tokens, num_oov_indices)
        kwargs.pop("vocabulary_size", None)  # written by get_config; informational
        kwargs.pop("vocabulary_dtype", None)
        default_dtype(output_mode, kwargs)
        super().__init__(**kwargs)
        self.output_mode = check_lookup_mode(
            "StringLookup", output_mode, sparse, invert, idf_weights, vocabulary
        )
        self.encoding = encoding
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = None if mask_token is None else str(_text(mask_token, encoding))
        self.oov_token = None if oov_token is None else str(_text(oov_token, encoding))
        self.invert = bool(invert)
        self.sparse = bool(sparse)
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.input_vocabulary = vocabulary
        self.input_idf_weights = idf_weights
        self.__dict__["_tokens"] = None  # list of bytes, without special tokens
        self.__dict__["_index"] = {}
        self.__dict__["_idf"] = None
        self.reset_state()
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # --- vocabulary ------------------------------------------------------------------------------
    def _oov_start_index(self) -> int:
        return 1 if self.mask_token is not None and self.output_mode == INT else 0

    def _token_start_index(self) -> int:
        return self._oov_start_index() + self.num_oov_indices

    def _special(self) -> list[bytes]:
        mask, oov = to_bytes(self.mask_token), to_bytes(self.oov_token)
        return [mask] * self._oov_start_index() + [oov] * self.num_oov_indices

    def _read_file(self, path: str) -> list[bytes]:
        if not os.path.exists(path):
            raise ValueError(f"StringLookup '{self.name}': vocabulary file {path} does not exist.")
        if self.output_mode == TF_IDF:
            raise ValueError(
                "output_mode 'tf_idf' does not support loading a vocabulary from file."
            )
        with open(path, "rb") as f:
            return [line.rstrip(b"\r") for line in f.read().split(b"\n") if line.rstrip(b"\r")]

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Set the vocabulary (list, array, tensor or a file path) and, for tf_idf, weights."""
        if self.output_mode == TF_IDF:
            if idf_weights is None:
                raise ValueError(f"StringLookup '{self.name}': `idf_weights` must be set if "
                                 "output_mode is 'tf_idf'.")  # fmt: skip
        elif idf_weights is not None:
            raise ValueError(
                f"StringLookup '{self.name}': `idf_weights` should only be set if output_mode is "
                f"'tf_idf'. Received: output_mode={self.output_mode} and idf_weights={idf_weights}."
            )
        if isinstance(vocabulary, str | os.PathLike):
            vocab = self._read_file(os.fspath(vocabulary))
        else:
            arr = np.asarray(host(vocabulary), dtype=object).reshape(-1)
            bad = [t for t in arr.tolist() if not isinstance(t, str | bytes | np.bytes_)]
            if bad:
                raise ValueError(f"StringLookup '{self.name}': the vocabulary must hold strings, "
                                 f"got {bad[:3]}.")  # fmt: skip
            vocab = [to_bytes(t, self.encoding) for t in arr.tolist()]
        if not vocab:
            raise ValueError(
                f"StringLookup '{self.name}': cannot set an empty vocabulary; the vocabulary must "
                "have at least one token."
            )
        special = self._special()
        token_start = len(special)
        found_special = vocab[:token_start] == special
        tokens = vocab[token_start:] if found_special else vocab
        counts = Counter(tokens)
        repeated = [_text(t, self.encoding) for t, c in counts.items() if c > 1]
        if repeated:
            raise ValueError(
                f"StringLookup '{self.name}': the passed vocabulary has at least one repeated "
                f"term. Please uniquify your dataset. The repeated terms are {repeated}."
            )
        for what, tok in (("mask_token", self.mask_token), ("oov_token", self.oov_token)):
            if (
                tok is not None
                and to_bytes(tok) in counts
                and (what == "mask_token" or self.num_oov_indices)
            ):
                raise ValueError(
                    f"StringLookup '{self.name}': found reserved {what} at unexpected location "
                    "in `vocabulary`. Either remove all mask and OOV tokens, or include them only "
                    "at the start of the vocabulary in precisely this order: "
                    f"{[_text(s, self.encoding) for s in special]}. Received: {what}={tok}."
                )
        if self.max_tokens is not None and token_start + len(tokens) > self.max_tokens:
            raise ValueError(
                f"StringLookup '{self.name}': attempted to set a vocabulary larger than the "
                f"maximum vocab size. Passed vocab size is {token_start + len(tokens)}, max vocab "
                f"size is {self.max_tokens}."
            )
        idf = None
        if self.output_mode == TF_IDF:
            idf = np.asarray(host(idf_weights), np.float64).reshape(-1)
            if len(idf) != len(vocab):
                raise ValueError(
                    "`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                    f"{len(idf)}, len(vocabulary) is {len(vocab)}."
                )
            if not found_special:
                idf = np.concatenate([np.full(token_start, idf.mean()), idf])
        self._set_tokens(tokens, idf)

    def _set_tokens(self, tokens: list[bytes], idf: Any) -> None:
        start = self._token_start_index()
        self.__dict__["_tokens"] = list(tokens)
        self.__dict__["_index"] = {t: i + start for i, t in enumerate(tokens)}
        if idf is not None and self.pad_to_max_tokens and self.max_tokens is not None:
            idf = np.pad(idf, (0, self.max_tokens - len(idf)))
        self.__dict__["_idf"] = idf

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[str]:
        """The vocabulary, index by index (with the mask and OOV tokens unless told not to)."""
        tokens = [] if self._tokens is None else list(self._tokens)
        if include_special_tokens:
            tokens = self._special() + tokens
        return [_text(t, self.encoding) for t in tokens]

    def vocabulary_size(self) -> int:
        """The vocabulary size, counting the mask and OOV indices."""
        return self._token_start_index() + (0 if self._tokens is None else len(self._tokens))

    # --- adapt -----------------------------------------------------------------------------------
    def _adapt_build(self, first_batch: Any) -> None:
        self.built = True

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Learn the vocabulary from strings: by decreasing frequency (ties: larger first).

        >>> import layerflow as tf
        >>> layer = tf.keras.layers.StringLookup()
        >>> layer.adapt(["b", "a", "b", "c", "c", "c"])
        >>> layer.get_vocabulary()
        ['[UNK]', 'c', 'b', 'a']
        """
        if self.input_vocabulary is not None:
            raise ValueError(
                f"Cannot adapt StringLookup layer '{self.name}' after setting a static "
                "vocabulary via init argument or `set_vocabulary`."
            )
        adapt_strings(self, data, batch_size, steps)

    def reset_state(self) -> None:
        self.__dict__["_counts"] = Counter()
        self.__dict__["_doc_counts"] = Counter()
        self.__dict__["_num_documents"] = 0

    def update_state(self, data: Any) -> None:
        self.update_rows(string_rows(f"StringLookup '{self.name}'.adapt", data, self.encoding))

    def update_rows(self, rows: list[list[bytes]]) -> None:
        """Count the tokens of `rows` (one document each)."""
        for row in rows:
            self._counts.update(row)
        if self.output_mode == TF_IDF:
            for row in rows:
                self._doc_counts.update(set(row))
            self.__dict__["_num_documents"] = self._num_documents + len(rows)

    def finalize_state(self) -> None:
        counts = dict(self._counts)
        for special in (self.mask_token, self.oov_token):
            counts.pop(to_bytes(special), None)
        if not counts:
            return
        # tf_keras: np.lexsort((tokens, counts))[::-1], i.e. count then token, both descending.
        tokens = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            tokens = tokens[: self.max_tokens - self._token_start_index()]
        idf = None
        if self.output_mode == TF_IDF:
            docs = np.array([self._doc_counts.get(t, 0) for t in tokens], np.float64)
            idf = np.log(1 + self._num_documents / (1 + docs)).astype(np.float32)
            idf = np.concatenate([np.full(self._token_start_index(), idf.mean()), idf])
        self._set_tokens(tokens, idf)
        self.reset_state()

    # --- computing -------------------------------------------------------------------------------
    def _convert_inputs(self, inputs: Any) -> Any:
        # The engine converts to dense tensors; ragged token rows (tf.strings.split) pass as is.
        return inputs if isinstance(inputs, RaggedTensor) else super()._convert_inputs(inputs)

    def _output_dtype(self, input_dtype: Any) -> Any:
        return "string" if self.invert else self.compute_dtype

    def _depth(self) -> int:
        if self.pad_to_max_tokens and self.max_tokens is not None:
            return self.max_tokens
        return self.vocabulary_size()

    def call(self, inputs: Any) -> Any:
        if self.output_mode != INT and not self.pad_to_max_tokens and self._tokens is None:
            raise RuntimeError(
                f"StringLookup '{self.name}': when using `output_mode={self.output_mode}` and "
                "`pad_to_max_tokens=False`, you must set the layer's vocabulary before calling "
                "it. Either pass a `vocabulary` argument to the layer, or call `adapt` with some "
                "sample data."
            )
        if isinstance(inputs, RaggedTensor):
            flat = self.call(inputs.flat_values) if self.output_mode == INT else None
            if flat is not None:
                return inputs.with_flat_values(flat)
            ids = self._lookup_ids(host(inputs.flat_values))
            dense = inputs.with_flat_values(array_ops.constant(ids)).to_tensor(
                default_value=_DROP)  # fmt: skip
            return self._encode(dense)
        x = host(inputs)
        if self.invert:
            if x.dtype.kind not in "iu":
                raise TypeError(f"StringLookup '{self.name}' with invert=True expects integer "
                                f"ids, got {inputs.dtype.name}.")  # fmt: skip
            return array_ops.constant(self._invert_ids(x.astype(np.int64)), dtype="string")
        if x.dtype != object:
            raise TypeError(
                f"StringLookup '{self.name}' expects string inputs, got {inputs.dtype.name}. "
                "Use IntegerLookup for integer features, or tf.strings.as_string first."
            )
        return self._encode(array_ops.constant(self._lookup_ids(x)))

    def _encode(self, idx: Tensor) -> Any:
        idf = None if self._idf is None else self._idf.astype(np.float32)
        return encode_categorical(
            f"StringLookup '{self.name}'", idx, self.output_mode, self._depth(),
            self.compute_dtype, idf_weights=idf,
        )  # fmt: skip

    def _lookup_ids(self, x: np.ndarray) -> np.ndarray:
        get = self._index.get
        flat = [to_bytes(t) for t in x.reshape(-1).tolist()]
        out = np.fromiter((get(t, -1) for t in flat), np.int64, len(flat))
        mask = to_bytes(self.mask_token)
        is_mask = np.fromiter((t == mask for t in flat), bool, len(flat))
        oov = (out < 0) & ~is_mask
        if oov.any():
            if self.num_oov_indices == 0:
                bad = sorted({_text(t, self.encoding) for t, o in zip(flat, oov) if o})
                raise errors.InvalidArgumentError(
                    None, None,
                    f"StringLookup '{self.name}': when `num_oov_indices=0` all inputs should be "
                    f"in vocabulary, found OOV values {bad}, consider setting "
                    "`num_oov_indices=1`.",
                )  # fmt: skip
            start, n = self._oov_start_index(), self.num_oov_indices
            for i in np.flatnonzero(oov):
                out[i] = start + (fingerprint.fingerprint64(flat[i]) % n if n > 1 else 0)
        if self.mask_token is not None:
            # Masks map to 0 for int output and are dropped (out of range) otherwise.
            out[is_mask] = 0 if self.output_mode == INT else _DROP
        return out.reshape(x.shape)

    def _invert_ids(self, x: np.ndarray) -> np.ndarray:
        vocab = np.empty(self.vocabulary_size(), dtype=object)
        vocab[:] = self._special() + (self._tokens or [])
        known = (x >= self._token_start_index()) & (x < len(vocab))
        out = np.full(x.shape, to_bytes(self.oov_token) or b"", dtype=object)
        out[known] = vocab[x[known]]
        if self.mask_token is not None:
            out[x == 0] = to_bytes(self.mask_token)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return encoded_shape(input_shape, self.output_mode, self._depth())

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        first = inputs[0] if isinstance(inputs, list | tuple) else inputs
        return KerasTensor(self.compute_output_shape(shapes), self._output_dtype(first.dtype))

    def get_config(self) -> dict[str, Any]:
        vocabulary = self.input_vocabulary
        idf = self.input_idf_weights
        if vocabulary is None and self._tokens is not None:
            vocabulary = self.get_vocabulary()
            if self._idf is not None:
                idf = self._idf[: self.vocabulary_size()].tolist()
        if isinstance(vocabulary, str | os.PathLike):
            vocabulary = os.fspath(vocabulary)
        elif vocabulary is not None:
            flat = np.asarray(host(vocabulary), dtype=object).reshape(-1)
            vocabulary = [_text(t, self.encoding) for t in flat]
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
            "idf_weights": listify(idf),
            "vocabulary": vocabulary,
            "vocabulary_size": self.vocabulary_size(),
            "encoding": self.encoding,
        }


def _text(token: Any, encoding: str) -> str:
    if isinstance(token, bytes | np.bytes_):
        return bytes(token).decode(encoding)
    return str(token)


def adapt_strings(layer: Any, data: Any, batch_size: Any, steps: Any) -> None:
    """tf_keras's adapt loop (reset, update per batch, finalize) over string data: an array,
    tensor, nested list or a batched `tf.data.Dataset` of strings."""
    owner = f"{type(layer).__name__} '{layer.name}'"
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise ValueError(f"{owner}.adapt: steps must be a positive int or None, got {steps!r}.")
    if isinstance(data, KerasTensor):
        raise TypeError(f"{owner}.adapt needs data with values, got a symbolic {data!r}.")
    if isinstance(data, Dataset):
        if batch_size is not None:
            raise ValueError(
                f"{owner}.adapt: batch_size={batch_size!r} was given with a tf.data.Dataset; a "
                "dataset's elements are the batches. Batch the dataset instead (`ds.batch(n)`)."
            )
        batches: Any = iter(data)
    else:
        arr = data if isinstance(data, RaggedTensor) else np.asarray(host(data), dtype=object)
        if not isinstance(arr, RaggedTensor) and arr.ndim == 0:
            arr = arr.reshape(1)
        size = 32 if batch_size is None else int(batch_size)
        if size < 1:
            raise ValueError(f"{owner}.adapt: batch_size must be positive, got {batch_size!r}.")
        n = arr.nrows_int() if isinstance(arr, RaggedTensor) else len(arr)
        batches = (arr[i : i + size] if not isinstance(arr, RaggedTensor) else
                   _ragged_rows(arr, i, i + size) for i in range(0, n, size))  # fmt: skip
    layer.reset_state()
    seen = False
    for i, batch in enumerate(batches):
        if steps is not None and i >= steps:
            break
        if isinstance(batch, tuple | list | dict) and isinstance(data, Dataset):
            raise ValueError(
                f"{owner}.adapt: the dataset yields {type(batch).__name__}s; adapt takes the "
                "features only. Map them out first: `ds.map(lambda x, y: x)`."
            )
        layer.update_state(batch)
        seen = True
    if not seen:
        raise ValueError(f"{owner}.adapt: the data is empty; there is nothing to adapt to.")
    layer.built = True
    layer.finalize_state()
    layer.__dict__["_is_adapted"] = True


def _ragged_rows(rt: RaggedTensor, start: int, stop: int) -> list:
    return rt.to_list()[start:stop]
