"""What `imdb` and `reuters` share: checking word-index sequences and Keras's re-indexing."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np


def check_sequences(x: np.ndarray, y: np.ndarray, path: Any, what: str) -> None:
    """x must be a 1-D array of integer lists, y integer labels of the same length."""
    if not isinstance(x, np.ndarray) or x.ndim != 1:
        raise ValueError(f"{path}: {what} must be a 1-D array of sequences.")
    if not isinstance(y, np.ndarray) or y.shape != x.shape or y.dtype.kind not in "iu":
        raise ValueError(
            f"{path}: the labels for {what} must be {x.shape[0]} integers, got "
            f"{getattr(y, 'shape', None)} of {getattr(y, 'dtype', type(y).__name__)}."
        )
    for seq in x:
        if not isinstance(seq, list | np.ndarray) or not all(
            isinstance(w, int | np.integer) and not isinstance(w, bool) for w in seq
        ):
            raise ValueError(f"{path}: every sequence of {what} must be a list of integers.")


def remove_long_seq(maxlen: int, seq: list, label: Any) -> tuple[list, list]:
    """Keep only the sequences shorter than `maxlen` (and their labels), as Keras does."""
    new_seq, new_label = [], []
    for x, y in zip(seq, label, strict=True):
        if len(x) < maxlen:
            new_seq.append(x)
            new_label.append(y)
    return new_seq, new_label


def reindex(xs: list, start_char: int | None, index_from: int) -> list:
    if start_char is not None:
        return [[start_char] + [int(w) + index_from for w in x] for x in xs]
    if index_from:
        return [[int(w) + index_from for w in x] for x in xs]
    return [[int(w) for w in x] for x in xs]


def limit_vocabulary(xs: list, num_words: int | None, skip_top: int,
                     oov_char: int | None) -> list:  # fmt: skip
    if not num_words:
        num_words = max(max(x) for x in xs if x) if any(xs) else 0
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def object_array(xs: list) -> np.ndarray:
    out = np.empty(len(xs), dtype=object)
    out[:] = xs
    return out


def check_kwargs(kwargs: dict, num_words: int | None) -> int | None:
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}.")
    return num_words


def read_word_index(path: str | os.PathLike) -> dict[str, int]:
    with open(path, encoding="utf-8") as f:
        index = json.load(f)
    if not isinstance(index, dict) or not all(
        isinstance(k, str) and isinstance(v, int) for k, v in index.items()
    ):
        raise ValueError(f"{path} is not a word index (a JSON object of word -> integer).")
    return index
