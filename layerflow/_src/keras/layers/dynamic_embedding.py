"""`tf.keras.layers.experimental.DynamicLookup` and `DynamicEmbedding` (tf_keras 2.x): a lookup
whose vocabulary follows the inputs' frequencies (LFU eviction), and an embedding on top of it
whose rows are remapped when `update_embeddings` installs the current most frequent keys.

The frequency table lives in two non-trainable variables of `floor(1.2 * vocabulary_size)`
entries (keys padded with "unk" or -1, counts padded with -1), updated on every call exactly as
tf_keras does it; the lookup itself uses the `vocabulary` variable, which only
`DynamicEmbedding.update_embeddings` (usually from `UpdateEmbeddingCallback`'s thread) changes.
A lock per lookup layer makes a call's table update and an update's read atomic.
"""

from __future__ import annotations

import logging
import random
import string
import threading
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import initializers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.layers.embedding import Embedding
from layerflow._src.keras.layers.preprocessing.base import host, on_device_of
from layerflow._src.keras.layers.preprocessing.string_lookup import to_bytes
from layerflow._src.keras.utils.layer_utils import warmstart_embedding_matrix
from layerflow._src.ops import array_ops

_log = logging.getLogger("layerflow")
_KEY_DTYPES = ("string", "int32", "int64")


def _pad_value(dtype: str) -> Any:
    return b"unk" if dtype == "string" else -1


def _random_vocabulary(size: int, dtype: str) -> np.ndarray:
    if dtype == "string":
        chars = string.ascii_letters
        words = ["".join(random.choice(chars) for _ in range(10)) for _ in range(size)]
        return np.array([w.encode() for w in words], dtype=object)
    return np.random.randint(0, size, size=size).astype(dtype)


def _as_keys(values: Any, dtype: str, owner: str) -> np.ndarray:
    """`values` as a flat host array of keys of `dtype` (bytes objects for strings)."""
    arr = host(values)
    if dtype == "string":
        if arr.dtype.kind not in "OSU" or (arr.size and not isinstance(arr.flat[0], str | bytes)):
            raise TypeError(
                f"{owner} has string keys and expects string inputs, got {arr.dtype} values. "
                "Pass strings, or build the layer with integer keys."
            )
        return np.array([to_bytes(v) for v in arr.reshape(-1)], dtype=object)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{owner} has {dtype} keys and expects integer inputs, got "
                        f"{arr.dtype} values. Pass integer ids.")  # fmt: skip
    return arr.reshape(-1).astype(dtype)


def _padded(arr: np.ndarray, n: int, pad: Any) -> np.ndarray:
    out = np.full(n, pad, dtype=arr.dtype)
    out[: min(n, arr.shape[0])] = arr[:n]
    return out


class _TableLock:
    """A re-entrant lock that copies and pickles as a fresh lock (layers may be deep-copied)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> _TableLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()

    def __deepcopy__(self, memo: dict) -> _TableLock:
        return _TableLock()

    def __reduce__(self) -> tuple:
        return (_TableLock, ())


class DynamicLookup(Layer):
    """Map keys to their index in a vocabulary learned from the inputs' frequencies; keys not in
    the vocabulary map to `vocabulary_size` (the one OOV index).

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.experimental.DynamicLookup(
    ...     3, tf.constant(["apple", "banana", "cherry"]))
    >>> layer(tf.constant([["apple", "banana"]])).numpy().tolist()
    [[0, 1]]
    """

    def __init__(self, vocabulary_size: int, initial_vocabulary: Any,
                 eviction_policy: str = "LFU", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if isinstance(vocabulary_size, bool) or not isinstance(vocabulary_size, int | np.integer):
            raise TypeError(f"DynamicLookup '{self.name}': vocabulary_size must be a positive "
                            f"integer, got {vocabulary_size!r}.")  # fmt: skip
        if vocabulary_size < 1:
            raise ValueError(f"DynamicLookup '{self.name}': vocabulary_size must be a positive "
                             f"integer, got {vocabulary_size}.")  # fmt: skip
        if eviction_policy != "LFU":
            raise ValueError(f"{eviction_policy} eviction policy is currently unsupported by "
                             "DynamicLookup layer. It currently only supports `LFU`")  # fmt: skip
        self.vocabulary_size = int(vocabulary_size)
        self.eviction_policy = eviction_policy
        self.initial_vocabulary = self._initial_vocabulary(initial_vocabulary)
        self.vocabulary_dtype = (
            "string"
            if self.initial_vocabulary.dtype == object
            else str(self.initial_vocabulary.dtype)
        )
        # tf_keras keeps a 20% bigger frequency table, sized in float32 arithmetic.
        self.internal_table_size = int(np.floor(np.float32(self.vocabulary_size) * np.float32(1.2)))
        self._table_lock = _TableLock()

    def _initial_vocabulary(self, initial: Any) -> np.ndarray:
        owner = f"DynamicLookup '{self.name}'"
        as_dtype = None
        if not isinstance(initial, list | tuple | np.ndarray | TensorLike):
            try:
                as_dtype = dtypes.as_dtype(initial).name
            except (TypeError, ValueError):
                as_dtype = None
        if as_dtype is not None:
            if as_dtype not in _KEY_DTYPES:
                raise ValueError(f"{owner}: Either specify the initial vocabulary or provide a "
                                 "valid dtype. The dtype argument must be one of the following: "
                                 f"tf.string, tf.int32, tf.int64. Got {as_dtype}.")  # fmt: skip
            return _random_vocabulary(self.vocabulary_size, as_dtype)
        if isinstance(initial, TensorLike):
            initial = initial.numpy()
        arr = np.asarray(initial)
        if arr.ndim != 1:
            raise ValueError(f"{owner}: initial_vocabulary must be 1-D, got shape {arr.shape}.")
        if arr.dtype.kind in "OSU":
            return np.array([to_bytes(v) for v in arr], dtype=object)
        if arr.dtype.kind in "iu":
            return arr.astype("int32" if arr.dtype == np.int32 else "int64")
        raise ValueError(f"{owner}: Either specify the initial vocabulary or provide a valid "
                         "dtype (tf.string, tf.int32, tf.int64); got an initial_vocabulary of "
                         f"dtype {arr.dtype}.")  # fmt: skip

    def build(self, input_shape: Any = None) -> None:
        n, dt = self.internal_table_size, self.vocabulary_dtype
        const = initializers.Constant
        self.vocabulary_table_keys = self.add_weight(
            name="vocabulary_table_keys", shape=(n,), dtype=dt, trainable=False,
            initializer=const(_padded(self.initial_vocabulary, n, _pad_value(dt))))  # fmt: skip
        counts = np.zeros(self.initial_vocabulary.shape[0], dtype="int32")
        self.vocabulary_table_values = self.add_weight(
            name="vocabulary_table_values", shape=(n,), dtype="int32", trainable=False,
            initializer=const(_padded(counts, n, -1)))  # fmt: skip
        self.vocabulary = self.add_weight(
            name="vocabulary", shape=self.initial_vocabulary.shape, dtype=dt, trainable=False,
            initializer=const(self.initial_vocabulary))  # fmt: skip
        self.built = True

    def call(self, inputs: Any, learn_vocab: bool = True) -> Any:
        keys = _as_keys(inputs, self.vocabulary_dtype, f"DynamicLookup '{self.name}'")
        shape = tuple(host(inputs).shape)
        with self._table_lock:
            if learn_vocab:
                _, first = np.unique(keys, return_index=True)
                self.update_internal_vocabulary(keys[np.sort(first)])
            where: dict = {}
            for i, key in enumerate(self.vocabulary.numpy().tolist()):
                where.setdefault(key, i)
        ids = np.array([where.get(k, self.vocabulary_size) for k in keys.tolist()], np.int64)
        return on_device_of(ids.reshape(shape), inputs) if isinstance(inputs, TensorLike) \
            else array_ops.constant(ids.reshape(shape))  # fmt: skip

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        return KerasTensor(TensorShape(shapes), "int64")

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def _table(self) -> tuple[np.ndarray, np.ndarray]:
        keys = np.asarray(self.vocabulary_table_keys.numpy())
        counts = np.asarray(self.vocabulary_table_values.numpy())
        keep = keys != _pad_value(self.vocabulary_dtype)
        # tf_keras drops padding from keys and counts separately; a real key equal to the
        # padding ("unk"/-1) would misalign them there, so both follow the keys' mask here.
        return keys[keep], counts[keep]

    def update_internal_vocabulary(self, unique: Any) -> Any:
        """Count `unique` (this batch's distinct keys, first-seen order) into the LFU table."""
        unique = _as_keys(unique, self.vocabulary_dtype, f"DynamicLookup '{self.name}'")
        with self._table_lock:
            keys, counts = self._table()
            present = set(keys.tolist())
            new_keys = np.array(sorted(set(unique.tolist()) - present), dtype=keys.dtype)
            n_remove = max(keys.shape[0] - self.internal_table_size + new_keys.shape[0], 0)
            # Least frequent first, ties by position (tf.nn.top_k on the negated counts);
            # tf_keras fails when a batch brings more new keys than the table holds: evict all.
            evict = keys[np.argsort(counts, kind="stable")[: min(n_remove, keys.shape[0])]]
            keep = ~np.isin(keys, evict) if evict.size else np.ones(keys.shape, bool)
            keys, counts = keys[keep], counts[keep].copy()
            counts[np.isin(keys, unique)] += 1
            n, pad = self.internal_table_size, _pad_value(self.vocabulary_dtype)
            all_keys = np.concatenate([keys, new_keys]).astype(keys.dtype)
            all_counts = np.concatenate([counts, np.ones(new_keys.shape[0], "int32")])
            self.vocabulary_table_keys.assign(_padded(all_keys, n, pad))
            self.vocabulary_table_values.assign(_padded(all_counts.astype("int32"), n, -1))
        return unique

    def get_top_vocabulary(self, k: int) -> Any:
        """The `k` most frequent keys of the table, most frequent first (ties by position)."""
        with self._table_lock:
            keys = np.asarray(self.vocabulary_table_keys.numpy())
            counts = np.asarray(self.vocabulary_table_values.numpy())
        top = keys[np.argsort(-counts.astype(np.int64), kind="stable")[: min(int(k), len(keys))]]
        return array_ops.constant(top, dtype=self.vocabulary_dtype)

    def get_vocabulary(self) -> Any:
        return self.vocabulary

    def get_config(self) -> dict:
        vocab = [v.decode("utf-8", "replace") if isinstance(v, bytes) else int(v)
                 for v in self.initial_vocabulary.tolist()]  # fmt: skip
        return {**super().get_config(), "vocabulary_size": self.vocabulary_size,
                "initial_vocabulary": vocab, "eviction_policy": self.eviction_policy}  # fmt: skip


class DynamicEmbedding(Layer):
    """`Embedding` over a `DynamicLookup`: `input_dim` learned keys plus `num_oov_indices` OOV
    rows. `update_embeddings()` (run periodically by `UpdateEmbeddingCallback`) installs the
    current most frequent keys as the vocabulary and moves each kept key's row to its new index;
    new keys' rows (and the OOV row) come from `embedding_initializer`.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.experimental.DynamicEmbedding(
    ...     input_dim=3, output_dim=2, initial_vocabulary=tf.constant(["a", "b", "c"]))
    >>> layer(tf.constant([["a", "z"]])).shape
    TensorShape([1, 2, 2])
    """

    def __init__(self, input_dim: int, output_dim: int, initial_vocabulary: Any,
                 eviction_policy: str = "LFU", input_length: int | None = None,
                 embedding_initializer: Any = "uniform", num_oov_indices: int = 1,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if isinstance(num_oov_indices, bool) or not isinstance(num_oov_indices, int) \
                or num_oov_indices < 1:  # fmt: skip
            raise ValueError(f"DynamicEmbedding '{self.name}': num_oov_indices must be a "
                             f"positive integer, got {num_oov_indices!r}.")  # fmt: skip
        dtype = kwargs.get("dtype")
        self.embedding_layer = Embedding(input_dim=input_dim + num_oov_indices,
                                         output_dim=output_dim,
                                         embeddings_initializer=embedding_initializer,
                                         input_length=input_length, dtype=dtype)  # fmt: skip
        self.dynamic_lookup_layer = DynamicLookup(
            vocabulary_size=input_dim,
            eviction_policy=eviction_policy,
            initial_vocabulary=initial_vocabulary,
        )
        self.embedding_initializer = embedding_initializer
        self.num_oov_indices = num_oov_indices

    def build(self, input_shape: Any = None) -> None:
        self.embedding_layer.build(input_shape)
        self.dynamic_lookup_layer.build(input_shape)
        self.built = True

    def call(self, inputs: Any, learn_vocab: bool = True) -> Any:
        ids = self.dynamic_lookup_layer(inputs, learn_vocab=learn_vocab)
        return self.embedding_layer(ids)

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        return KerasTensor(self.compute_output_shape(shapes), self.dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(TensorShape(input_shape).as_list() + [self.embedding_layer.output_dim])

    def get_vocabulary(self) -> Any:
        return self.dynamic_lookup_layer.get_vocabulary()

    def get_top_vocabulary(self, keys: Any, values: Any, k: int) -> Any:
        """The `k` keys of `keys` with the largest `values`, largest first (ties by position)."""
        keys, values = np.asarray(host(keys)), np.asarray(host(values)).astype(np.int64)
        return keys[np.argsort(-values, kind="stable")[: min(int(k), len(keys))]]

    def update_embeddings(self, strategy: Any = None) -> None:
        """Install the table's `input_dim` most frequent keys as the vocabulary and remap the
        embedding rows to it (see the class docstring). Before the layer is built this only logs,
        as tf_keras does (the callback's first interval may come before the first batch)."""
        lookup = self.dynamic_lookup_layer
        if not (self.built and lookup.built and self.embedding_layer.built):
            _log.info("Time interval specified by the UpdateEmbeddingCallback may be too small, "
                      "please try increasing the value of `interval`.")  # fmt: skip
            return
        with lookup._table_lock:
            keys = lookup.vocabulary_table_keys.numpy()
            counts = lookup.vocabulary_table_values.numpy()
            old_vocab = lookup.vocabulary.numpy().tolist()
            new_vocab = self.get_top_vocabulary(keys, counts, lookup.vocabulary_size)
            # tf_keras names the OOV rows "UNK" (and fails for integer keys there); an integer
            # key can never match None, so the OOV rows are always freshly initialized.
            oov = b"UNK" if lookup.vocabulary_dtype == "string" else None
            emb = self.embedding_layer.embeddings
            matrix = warmstart_embedding_matrix(
                base_vocabulary=old_vocab,
                new_vocabulary=new_vocab.tolist() + [oov] * self.num_oov_indices,
                base_embeddings=emb.numpy()[: len(old_vocab)],
                new_embeddings_initializer=self.embedding_initializer)  # fmt: skip
            lookup.vocabulary.assign(new_vocab)
            emb.assign(matrix)

    def get_config(self) -> dict:
        lookup = self.dynamic_lookup_layer
        return {
            **super().get_config(),
            "input_dim": lookup.vocabulary_size,
            "output_dim": self.embedding_layer.output_dim,
            "input_length": self.embedding_layer.input_length,
            "eviction_policy": lookup.eviction_policy,
            "initial_vocabulary": lookup.get_config()["initial_vocabulary"],
            "embedding_initializer": initializers.serialize(
                initializers.get(self.embedding_initializer)
            ),  # fmt: skip
            "num_oov_indices": self.num_oov_indices,
        }
