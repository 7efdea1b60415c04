"""`tf.keras.preprocessing.text`: `Tokenizer`, `text_to_word_sequence`, `one_hot`, `hashing_trick`.

Behaviour follows tf_keras 2.x exactly (vocabulary order, OOV handling, tf-idf formula, JSON
layout), so a tokenizer saved by either library loads in the other.
"""

from __future__ import annotations

import collections
import hashlib
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
MODES = ("binary", "count", "tfidf", "freq")


def text_to_word_sequence(
    input_text: str, filters: str = FILTERS, lower: bool = True, split: str = " "
) -> list[str]:
    """Split a text into words: lower-case it, replace every character of `filters` by `split`,
    split on `split` and drop empty pieces.

    >>> text_to_word_sequence("This is a sample sentence.")
    ['this', 'is', 'a', 'sample', 'sentence']
    """
    if not isinstance(input_text, str):
        raise TypeError(
            f"text_to_word_sequence expects a Python str, got {type(input_text).__name__}. "
            "Decode bytes first (text.decode('utf-8')) or use tf.strings ops for tensors."
        )
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [piece for piece in input_text.split(split) if piece]


def one_hot(
    input_text: str,
    n: int,
    filters: str = FILTERS,
    lower: bool = True,
    split: str = " ",
    analyzer: Callable[[str], list[str]] | None = None,
) -> list[int]:
    """Encode a text as word indices in `[1, n)` with Python's `hash` (as tf_keras).

    Python's `hash` of a str is salted per process (PYTHONHASHSEED), so the indices differ between
    runs, exactly as in tf_keras; use `hashing_trick(..., hash_function="md5")` for stable ones.
    """
    return hashing_trick(
        input_text,
        n,
        hash_function=hash,
        filters=filters,
        lower=lower,
        split=split,
        analyzer=analyzer,
    )


def hashing_trick(
    text: str,
    n: int,
    hash_function: Any = None,
    filters: str = FILTERS,
    lower: bool = True,
    split: str = " ",
    analyzer: Callable[[str], list[str]] | None = None,
) -> list[int]:
    """Map each word to `hash_function(word) % (n - 1) + 1`, an index in `[1, n)` (0 is reserved).

    `hash_function` is None (Python's salted `hash`, not stable across runs), "md5" (stable) or a
    callable from str to int.

    >>> hashing_trick("the cat the", 10, hash_function="md5")
    [6, 3, 6]
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(
            f"hashing_trick expects the hashing space size `n` to be an int >= 2 (index 0 is "
            f"reserved), got {n!r}."
        )
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":

        def hash_function(w: str) -> int:
            return int(hashlib.md5(w.encode()).hexdigest(), 16)

    elif not callable(hash_function):
        raise ValueError(
            f"hashing_trick expects hash_function None, 'md5' or a callable, got {hash_function!r}."
        )
    seq = (
        analyzer(text)
        if analyzer is not None
        else text_to_word_sequence(text, filters, lower, split)
    )
    return [hash_function(w) % (n - 1) + 1 for w in seq]


class Tokenizer:
    """Turn texts into sequences of word indices or into vectors (binary, count, tf-idf, freq).

    Words are indexed by decreasing frequency from 1 (ties keep first-seen order); `oov_token`, when
    given, takes index 1. Only words with index < `num_words` are used when encoding.

    >>> t = Tokenizer()
    >>> t.fit_on_texts(["the cat", "the dog"])
    >>> t.word_index
    {'the': 1, 'cat': 2, 'dog': 3}
    >>> t.texts_to_sequences(["the dog barks"])
    [[1, 3]]
    """

    def __init__(
        self,
        num_words: int | None = None,
        filters: str = FILTERS,
        lower: bool = True,
        split: str = " ",
        char_level: bool = False,
        oov_token: str | None = None,
        analyzer: Callable[[str], list[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        if "nb_words" in kwargs:
            warnings.warn(
                "The `nb_words` argument in `Tokenizer` has been renamed `num_words`.", stacklevel=2
            )
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError(
                f"Tokenizer got unrecognized keyword arguments: {sorted(kwargs)}. Accepted: "
                "num_words, filters, lower, split, char_level, oov_token, analyzer."
            )
        self.word_counts: dict[str, int] = collections.OrderedDict()
        self.word_docs: dict[str, int] = collections.defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs: dict[int, int] = collections.defaultdict(int)
        self.word_index: dict[str, int] = {}
        self.index_word: dict[int, str] = {}
        self.analyzer = analyzer

    def _tokens(self, text: Any) -> Any:
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower, split=self.split)

    def fit_on_texts(self, texts: Iterable[Any]) -> None:
        """Update the vocabulary from strings (or lists of tokens); rebuilds `word_index`."""
        if isinstance(texts, str):
            raise TypeError(
                "Tokenizer.fit_on_texts expects a list (or iterable) of texts, got one str. "
                "Wrap it in a list: fit_on_texts([text])."
            )
        for text in texts:
            self.document_count += 1
            seq = self._tokens(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        wcounts = sorted(self.word_counts.items(), key=lambda x: x[1], reverse=True)  # stable
        sorted_voc = [] if self.oov_token is None else [self.oov_token]
        sorted_voc.extend(w for w, _ in wcounts)
        self.word_index = dict(zip(sorted_voc, range(1, len(sorted_voc) + 1)))
        self.index_word = {c: w for w, c in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences: list[list[int]]) -> None:
        """Update document frequencies from index sequences (for `sequences_to_matrix`)."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts: Iterable[Any]) -> list[list[int]]:
        """Encode each text as a list of word indices (unknown words dropped, or `oov_token`)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts: Iterable[Any]) -> Iterator[list[int]]:
        """Yield `texts_to_sequences` one text at a time."""
        num_words = self.num_words
        oov_index = self.word_index.get(self.oov_token)
        for text in texts:
            vect = []
            for w in self._tokens(text):
                i = self.word_index.get(w)
                if i is not None:
                    if num_words and i >= num_words:
                        if oov_index is not None:
                            vect.append(oov_index)
                    else:
                        vect.append(i)
                elif self.oov_token is not None:
                    vect.append(oov_index)
            yield vect

    def sequences_to_texts(self, sequences: Iterable[Iterable[int]]) -> list[str]:
        """Decode index sequences back to space-joined texts."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences: Iterable[Iterable[int]]) -> Iterator[str]:
        """Yield `sequences_to_texts` one sequence at a time."""
        num_words = self.num_words
        oov_index = self.word_index.get(self.oov_token)
        for seq in sequences:
            vect = []
            for num in seq:
                word = self.index_word.get(num)
                if word is not None:
                    if num_words and num >= num_words:
                        if oov_index is not None:
                            vect.append(self.index_word[oov_index])
                    else:
                        vect.append(word)
                elif self.oov_token is not None:
                    vect.append(self.index_word[oov_index])
            yield " ".join(vect)

    def texts_to_matrix(self, texts: Iterable[Any], mode: str = "binary") -> np.ndarray:
        """Encode texts as a `(len(texts), num_words)` float64 matrix in `mode`."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences: list[list[int]], mode: str = "binary") -> np.ndarray:
        """Encode index sequences as a matrix; `mode` is one of binary, count, tfidf, freq."""
        if mode not in MODES:
            raise ValueError(f"Unknown vectorization mode {mode!r}; expected one of {MODES}.")
        if not self.num_words:
            if not self.word_index:
                raise ValueError(
                    "Specify a dimension (`num_words` argument), or fit on some text data first."
                )
            num_words = len(self.word_index) + 1
        else:
            num_words = self.num_words
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for i, seq in enumerate(sequences):
            if not seq:
                continue
            counts: dict[int, int] = collections.defaultdict(int)
            for j in seq:
                if j < num_words:
                    counts[j] += 1
            for j, c in counts.items():
                if mode == "count":
                    x[i][j] = c
                elif mode == "freq":
                    x[i][j] = c / len(seq)
                elif mode == "binary":
                    x[i][j] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[i][j] = (1 + np.log(c)) * idf
        return x

    def get_config(self) -> dict[str, Any]:
        """The configuration, with the vocabulary dictionaries as JSON strings (as tf_keras)."""
        return {
            "num_words": self.num_words,
            "filters": self.filters,
            "lower": self.lower,
            "split": self.split,
            "char_level": self.char_level,
            "oov_token": self.oov_token,
            "document_count": self.document_count,
            "word_counts": json.dumps(self.word_counts),
            "word_docs": json.dumps(self.word_docs),
            "index_docs": json.dumps(self.index_docs),
            "index_word": json.dumps(self.index_word),
            "word_index": json.dumps(self.word_index),
        }

    def to_json(self, **kwargs: Any) -> str:
        """A JSON string `{"class_name": "Tokenizer", "config": ...}` (kwargs: json.dumps)."""
        return json.dumps(
            {"class_name": type(self).__name__, "config": self.get_config()}, **kwargs
        )


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """Rebuild a `Tokenizer` from `Tokenizer.to_json()` (also tf_keras's)."""
    try:
        tokenizer_config = json.loads(json_string)
        config = dict(tokenizer_config["config"])
        word_counts = json.loads(config.pop("word_counts"))
        word_docs = json.loads(config.pop("word_docs"))
        index_docs = {int(k): v for k, v in json.loads(config.pop("index_docs")).items()}
        index_word = {int(k): v for k, v in json.loads(config.pop("index_word")).items()}
        word_index = json.loads(config.pop("word_index"))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(
            "tokenizer_from_json expects the string written by Tokenizer.to_json() "
            f"({{'class_name': 'Tokenizer', 'config': {{...}}}}); could not parse it: {e!r}"
        ) from None
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = word_counts
    tokenizer.word_docs = word_docs
    tokenizer.index_docs = index_docs
    tokenizer.word_index = word_index
    tokenizer.index_word = index_word
    return tokenizer
