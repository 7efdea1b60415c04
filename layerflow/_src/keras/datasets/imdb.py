"""`tf.keras.datasets.imdb`: 50,000 movie reviews as word-index sequences, labelled by sentiment."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.keras.datasets import keras_cache, safe_load, sequences

SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_MD5 = "bfafd718b763782e994055a2d397834f"


def load_data(path: str = "imdb.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, seed: int = 113, start_char: int | None = 1,
              oov_char: int | None = 2, index_from: int = 3, cache_dir: str | None = None,
              **kwargs: Any) -> tuple[tuple, tuple]:  # fmt: skip
    """IMDB reviews as `(x_train, y_train), (x_test, y_test)`, Keras 2's semantics.

    x: object arrays of lists of word indices (shifted by `index_from`, prefixed by
    `start_char`; words outside `[skip_top, num_words)` become `oov_char`, or are dropped when
    it is None); sequences of `maxlen` words or more are removed. y: 0/1 labels.

    >>> import layerflow as tf
    >>> (x_train, y_train), _ = tf.keras.datasets.imdb.load_data(num_words=10000)  # doctest: +SKIP
    """
    num_words = sequences.check_kwargs(kwargs, num_words)
    fpath = keras_cache.fetch(path, keras_cache.BASE_URL + "imdb.npz", SHA256, cache_dir)
    arrays = safe_load.load_npz(fpath)
    safe_load.require(arrays, ("x_train", "y_train", "x_test", "y_test"), fpath)
    x_train, labels_train = arrays["x_train"], arrays["y_train"]
    x_test, labels_test = arrays["x_test"], arrays["y_test"]
    sequences.check_sequences(x_train, labels_train, fpath, "x_train")
    sequences.check_sequences(x_test, labels_test, fpath, "x_test")

    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]

    x_train = sequences.reindex(list(x_train), start_char, index_from)
    x_test = sequences.reindex(list(x_test), start_char, index_from)
    if maxlen:
        x_train, labels_train = sequences.remove_long_seq(maxlen, x_train, labels_train)
        x_test, labels_test = sequences.remove_long_seq(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(
                f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was "
                "kept. Increase maxlen."
            )
    xs = sequences.limit_vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([np.asarray(labels_train), np.asarray(labels_test)])
    idx = len(x_train)
    return (
        (sequences.object_array(xs[:idx]), labels[:idx]),
        (sequences.object_array(xs[idx:]), labels[idx:]),
    )


def get_word_index(path: str = "imdb_word_index.json") -> dict[str, int]:
    """The word -> index mapping of `load_data` (before the `index_from` shift)."""
    fpath = keras_cache.fetch(path, keras_cache.BASE_URL + "imdb_word_index.json", WORD_INDEX_MD5)
    return sequences.read_word_index(fpath)
