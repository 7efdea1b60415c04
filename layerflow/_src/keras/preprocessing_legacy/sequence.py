"""`tf.keras.preprocessing.sequence`: `TimeseriesGenerator`, `make_sampling_table`, `skipgrams`
(and `pad_sequences`, the one in `keras.utils`). Behaviour follows tf_keras 2.x exactly, including
its use of Python's global `random` module in `skipgrams`."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np

from layerflow._src.keras.utils.sequence import Sequence
from layerflow._src.keras.utils.sequences import pad_sequences

__all__ = ["TimeseriesGenerator", "make_sampling_table", "pad_sequences", "skipgrams"]


class TimeseriesGenerator(Sequence):
    """Batches of sliding windows over `data` with the target that follows each window.

    Sample `i` of batch `b` is `data[row - length:row:sampling_rate]` with target `targets[row]`,
    rows starting at `start_index + length` and advancing by `stride`.

    >>> import numpy as np
    >>> g = TimeseriesGenerator(np.arange(10), np.arange(10), length=3, batch_size=2)
    >>> x, y = g[0]
    >>> x.tolist(), y.tolist()
    ([[0, 1, 2], [1, 2, 3]], [3, 4])
    """

    def __init__(
        self,
        data: Any,
        targets: Any,
        length: int,
        sampling_rate: int = 1,
        stride: int = 1,
        start_index: int = 0,
        end_index: int | None = None,
        shuffle: bool = False,
        reverse: bool = False,
        batch_size: int = 128,
    ) -> None:
        if len(data) != len(targets):
            raise ValueError(
                f"TimeseriesGenerator: data and targets have to be of same length. Data length is "
                f"{len(data)} while target length is {len(targets)}"
            )
        for name, v in (
            ("length", length),
            ("sampling_rate", sampling_rate),
            ("stride", stride),
            ("batch_size", batch_size),
        ):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"TimeseriesGenerator: `{name}` must be an int >= 1, got {v!r}.")
        self.data = data
        self.targets = targets
        self.length = length
        self.sampling_rate = sampling_rate
        self.stride = stride
        self.start_index = start_index + length
        if end_index is None:
            end_index = len(data) - 1
        self.end_index = end_index
        self.shuffle = shuffle
        self.reverse = reverse
        self.batch_size = batch_size
        if self.start_index > self.end_index:
            raise ValueError(
                f"`start_index+length={self.start_index} > end_index={self.end_index}` is "
                "disallowed, as no part of the sequence would be left to be used as current step."
            )

    def __len__(self) -> int:
        step = self.batch_size * self.stride
        return (self.end_index - self.start_index + step) // step

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if not -len(self) <= index < len(self):
            raise IndexError(
                f"TimeseriesGenerator index {index} out of range for {len(self)} batches"
            )
        index = index % len(self)
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            i = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(
                i, min(i + self.batch_size * self.stride, self.end_index + 1), self.stride
            )
        samples = np.array(
            [self.data[row - self.length : row : self.sampling_rate] for row in rows]
        )
        targets = np.array([self.targets[row] for row in rows])
        if self.reverse:
            return samples[:, ::-1, ...], targets
        return samples, targets

    def get_config(self) -> dict[str, Any]:
        """The configuration with `data` and `targets` as JSON strings (as tf_keras)."""
        data = self.data.tolist() if isinstance(self.data, np.ndarray) else self.data
        targets = self.targets.tolist() if isinstance(self.targets, np.ndarray) else self.targets
        try:
            json_data = json.dumps(data)
        except TypeError as e:
            raise TypeError(f"TimeseriesGenerator data is not JSON serializable: {e}") from e
        try:
            json_targets = json.dumps(targets)
        except TypeError as e:
            raise TypeError(f"TimeseriesGenerator targets are not JSON serializable: {e}") from e
        return {
            "data": json_data,
            "targets": json_targets,
            "length": self.length,
            "sampling_rate": self.sampling_rate,
            "stride": self.stride,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "shuffle": self.shuffle,
            "reverse": self.reverse,
            "batch_size": self.batch_size,
        }

    def to_json(self, **kwargs: Any) -> str:
        """`{"class_name": "TimeseriesGenerator", "config": get_config()}` as JSON."""
        return json.dumps(
            {"class_name": type(self).__name__, "config": self.get_config()}, **kwargs
        )


def make_sampling_table(size: int, sampling_factor: float = 1e-5) -> np.ndarray:
    """Probability of keeping the word of each frequency rank (word2vec's subsampling, with
    Zipf's law approximating the frequencies), for `skipgrams(sampling_table=...)`."""
    gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(
    sequence: Any,
    vocabulary_size: int,
    window_size: int = 4,
    negative_samples: float = 1.0,
    shuffle: bool = True,
    categorical: bool = False,
    sampling_table: Any = None,
    seed: int | None = None,
) -> tuple[list, list]:
    """Word2vec (word, context) couples from a sequence of word indices, label 1, plus
    `negative_samples` times as many random couples, label 0 (index 0 is skipped).

    Draws from Python's global `random` (as tf_keras); `seed` only fixes the final shuffle.

    >>> couples, labels = skipgrams([1, 2], vocabulary_size=3, negative_samples=0, shuffle=False)
    >>> couples, labels
    ([[1, 2], [2, 1]], [1, 1])
    """
    couples: list = []
    labels: list = []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i:
                wj = sequence[j]
                if not wj:
                    continue
                couples.append([wi, wj])
                labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        num_negative = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [
            [words[i % len(words)], random.randint(1, int(vocabulary_size - 1))]
            for i in range(num_negative)
        ]
        labels += ([[1, 0]] if categorical else [0]) * num_negative
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels
