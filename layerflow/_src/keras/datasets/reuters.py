"""`tf.keras.datasets.reuters`: 11,228 newswires as word-index sequences, 46 topics."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.keras.datasets import keras_cache, safe_load, sequences

SHA256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_MD5 = "4d44cc38712099c9e383dc6e5f11a921"

LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply",
    "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas",
    "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin",
    "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber", "heat", "jobs",
    "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead",
)  # fmt: skip


def load_data(path: str = "reuters.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, test_split: float = 0.2, seed: int = 113,
              start_char: int | None = 1, oov_char: int | None = 2, index_from: int = 3,
              cache_dir: str | None = None, **kwargs: Any) -> tuple[tuple, tuple]:  # fmt: skip
    """Reuters newswires as `(x_train, y_train), (x_test, y_test)`, split by `test_split`.

    Same index semantics as `imdb.load_data`; y holds topic indices 0-45 (`get_label_names`).

    >>> import layerflow as tf
    >>> (x_train, y_train), _ = tf.keras.datasets.reuters.load_data()  # doctest: +SKIP
    """
    num_words = sequences.check_kwargs(kwargs, num_words)
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1), got {test_split}.")
    fpath = keras_cache.fetch(path, keras_cache.BASE_URL + "reuters.npz", SHA256, cache_dir)
    arrays = safe_load.load_npz(fpath)
    safe_load.require(arrays, ("x", "y"), fpath)
    xs, labels = arrays["x"], arrays["y"]
    sequences.check_sequences(xs, labels, fpath, "x")

    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs, labels = xs[indices], labels[indices]
    xs = sequences.reindex(list(xs), start_char, index_from)
    if maxlen:
        xs, labels = sequences.remove_long_seq(maxlen, xs, labels)
    xs = sequences.limit_vocabulary(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    labels = np.asarray(labels)
    return (
        (sequences.object_array(xs[:idx]), np.array(labels[:idx])),
        (sequences.object_array(xs[idx:]), np.array(labels[idx:])),
    )


def get_word_index(path: str = "reuters_word_index.json") -> dict[str, int]:
    """The word -> index mapping of `load_data` (before the `index_from` shift)."""
    origin = keras_cache.BASE_URL + "reuters_word_index.json"
    return sequences.read_word_index(keras_cache.fetch(path, origin, WORD_INDEX_MD5))


def get_label_names() -> tuple[str, ...]:
    """The 46 topic names, indexed like the labels.

    >>> import layerflow as tf
    >>> tf.keras.datasets.reuters.get_label_names()[3]
    'earn'
    """
    return LABEL_NAMES
