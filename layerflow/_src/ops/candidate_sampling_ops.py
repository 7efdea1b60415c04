"""Candidate samplers (`tf.random.*_candidate_sampler`), `compute_accidental_hits`, and the
sampled losses built on them, `nce_loss` and `sampled_softmax_loss`.

A sampler draws `num_sampled` class ids from its distribution P (with `unique`, draws are
repeated until that many distinct ids came up) and reports the expected count of each true and
sampled id in the draws: `num_sampled * P(c)` when no draw was rejected, else
`1 - (1 - P(c)) ** num_tries` (TF's `ExpectedCountHelper`). Draws come from layerflow's seeded
streams (`tf.random.set_seed` and `seed=` as for other random ops), so the ids differ from TF's.
The learned unigram sampler keeps its counts between calls made with the same arguments and an
op seed, as TF's cached kernel does; without an op seed every call starts from uniform.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.ops import random_ops
from layerflow._src.ops.array_ops import concat, constant, stop_gradient
from layerflow._src.ops.compare_ops import cast
from layerflow._src.ops.gather_ops import embedding_lookup
from layerflow._src.ops.math_ops import _as_tensor, log, matmul, reduce_sum, reshape
from layerflow._src.ops.nn_ops import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
)

__all__ = [
    "all_candidate_sampler",
    "compute_accidental_hits",
    "fixed_unigram_candidate_sampler",
    "learned_unigram_candidate_sampler",
    "log_uniform_candidate_sampler",
    "nce_loss",
    "sampled_softmax_loss",
    "uniform_candidate_sampler",
]

CandidateSample = collections.namedtuple(
    "CandidateSample", ["sampled_candidates", "true_expected_count", "sampled_expected_count"]
)
ComputeAccidentalHits = collections.namedtuple(
    "ComputeAccidentalHits", ["indices", "ids", "weights"]
)


def _true_classes(true_classes: Any, num_true: int, opname: str) -> np.ndarray:
    arr = np.asarray(backend.to_host(_as_tensor(true_classes)._data))
    if arr.dtype.kind not in "iu" or arr.ndim != 2 or arr.shape[1] != num_true:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: true_classes must be int64 [batch, num_true={num_true}], "
            f"got {arr.dtype} {arr.shape}.",
        )  # fmt: skip
    return arr.astype(np.int64)


def _expected(p: np.ndarray, num_sampled: int, num_tries: int) -> np.ndarray:
    if num_tries == num_sampled:
        return p * num_sampled
    return -np.expm1(num_tries * np.log1p(-p))


def _sample(probs: np.ndarray, true: np.ndarray, num_sampled: int, unique: bool,
            seed: Any, opname: str) -> CandidateSample:  # fmt: skip
    range_max = len(probs)
    if num_sampled < 1:
        raise ValueError(f"{opname}: num_sampled must be positive, got {num_sampled}.")
    if unique and num_sampled > int((probs > 0).sum()):
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: cannot draw {num_sampled} unique candidates from "
            f"{int((probs > 0).sum())} ids with non-zero probability (range_max={range_max}).",
        )  # fmt: skip
    rng = random_ops.generator(seed)
    if unique:
        seen: dict[int, None] = {}
        tries = 0
        while len(seen) < num_sampled:
            block = rng.choice(range_max, size=num_sampled, p=probs)
            for v in block.tolist():
                tries += 1
                seen.setdefault(v)
                if len(seen) == num_sampled:
                    break
        sampled = np.array(list(seen), np.int64)
    else:
        sampled = rng.choice(range_max, size=num_sampled, p=probs).astype(np.int64)
        tries = num_sampled
    safe = np.clip(true, 0, range_max - 1)
    return CandidateSample(
        constant(sampled),
        constant(_expected(probs[safe], num_sampled, tries).astype(np.float32)),
        constant(_expected(probs[sampled], num_sampled, tries).astype(np.float32)),
    )


def uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: Any = None,
    name: str | None = None,
) -> Any:
    """Sample `num_sampled` ids uniformly from [0, range_max).

    >>> import layerflow as tf
    >>> s, t, e = tf.random.uniform_candidate_sampler([[1]], 1, 4, True, 10, seed=1)
    >>> len(set(s.numpy().tolist())), s.dtype.name
    (4, 'int64')
    """
    true = _true_classes(true_classes, num_true, "uniform_candidate_sampler")
    probs = np.full(int(range_max), 1.0 / int(range_max))
    return _sample(probs, true, num_sampled, unique, seed, "uniform_candidate_sampler")


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                  unique: bool, range_max: int, seed: Any = None,
                                  name: str | None = None) -> Any:  # fmt: skip
    """Sample from the log-uniform (Zipfian) distribution
    P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1), for ids sorted by falling frequency.

    >>> import layerflow as tf
    >>> _, t, _ = tf.random.log_uniform_candidate_sampler([[0]], 1, 1, False, 10, seed=1)
    >>> round(float(t[0, 0]), 4)   # log(2) / log(11)
    0.2891
    """
    true = _true_classes(true_classes, num_true, "log_uniform_candidate_sampler")
    c = np.arange(int(range_max), dtype=np.float64)
    probs = (np.log(c + 2) - np.log(c + 1)) / np.log(range_max + 1)
    return _sample(probs, true, num_sampled, unique, seed, "log_uniform_candidate_sampler")


_learned_lock = threading.Lock()
_learned_counts: dict[tuple, np.ndarray] = {}


def learned_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                      unique: bool, range_max: int, seed: Any = None,
                                      name: str | None = None) -> Any:  # fmt: skip
    """Sample from the unigram distribution of the true classes seen so far (every id starts
    with a count of 1; the true classes of a call are counted after it samples).

    >>> import layerflow as tf
    >>> _, t, _ = tf.random.learned_unigram_candidate_sampler([[0]], 1, 4, False, 5, seed=1)
    >>> round(float(t[0, 0]), 2)   # uniform at first: 4 * 1/5
    0.8
    """
    opname = "learned_unigram_candidate_sampler"
    true = _true_classes(true_classes, num_true, opname)
    key = None
    if seed is not None:
        key = (num_true, num_sampled, bool(unique), int(range_max), random_ops.get_global_seed(),
               int(seed))  # fmt: skip
    with _learned_lock:
        counts = _learned_counts.get(key) if key is not None else None
        if counts is None:
            counts = np.ones(int(range_max))
            if key is not None:
                _learned_counts[key] = counts
        probs = counts / counts.sum()
        out = _sample(probs, true, num_sampled, unique, seed, opname)
        np.add.at(counts, true[(true >= 0) & (true < range_max)], 1.0)
    return out


def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                    unique: bool, range_max: int, vocab_file: str = "",
                                    distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0, unigrams: Any = (),
                                    seed: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """Sample from given unigram counts (`unigrams`, or the last comma-separated field of each
    line of `vocab_file`) raised to `distortion`; the first `num_reserved_ids` ids have weight 0;
    with `num_shards`, only the ids `i % num_shards == shard` form this shard's range.

    >>> import layerflow as tf
    >>> _, t, _ = tf.random.fixed_unigram_candidate_sampler(
    ...     [[1]], 1, 4, False, 5, unigrams=[1, 4, 9, 16], distortion=0.5, num_reserved_ids=1)
    >>> round(float(t[0, 0]), 2)   # P(1) = 1 / (1 + 2 + 3 + 4), times 4 draws
    0.4
    """
    opname = "fixed_unigram_candidate_sampler"
    true = _true_classes(true_classes, num_true, opname)
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError(f"{opname}: give exactly one of vocab_file and unigrams.")
    if vocab_file:
        with open(vocab_file, encoding="utf-8") as fh:
            counts = [float(line.rsplit(",", 1)[-1]) for line in fh if line.strip()]
    else:
        counts = [float(u) for u in unigrams]
    weights = [0.0] * int(num_reserved_ids) + [c**distortion for c in counts]
    weights = np.array([w for i, w in enumerate(weights) if i % num_shards == shard])
    if len(weights) != int(range_max):
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: range is {range_max} must be equal to weights size "
            f"{len(weights)} (num_reserved_ids + len(unigrams), in this shard).",
        )  # fmt: skip
    return _sample(weights / weights.sum(), true, num_sampled, unique, seed, opname)


def all_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                          seed: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """The "sampler" that returns every id in [0, num_sampled), each with expected count 1.

    >>> import layerflow as tf
    >>> tf.random.all_candidate_sampler([[1]], 1, 3, True)[0].numpy()
    array([0, 1, 2])
    """
    true = _true_classes(true_classes, num_true, "all_candidate_sampler")
    return CandidateSample(
        constant(np.arange(num_sampled, dtype=np.int64)),
        constant(np.ones(true.shape, np.float32)),
        constant(np.ones(num_sampled, np.float32)),
    )


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int,
                            seed: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """Where a sampled candidate equals one of a row's true classes: `(indices, ids, weights)`,
    the row (int32), the position in `sampled_candidates` (int64) and -FLT_MAX (float32), to be
    added to those sampled logits.

    >>> import layerflow as tf
    >>> hits = tf.nn.compute_accidental_hits([[1, 2]], [2, 3, 1], 2)
    >>> hits.indices.numpy(), hits.ids.numpy()
    (array([0, 0], dtype=int32), array([2, 0]))
    """
    true = _true_classes(true_classes, num_true, "compute_accidental_hits")
    sampled = np.asarray(backend.to_host(_as_tensor(sampled_candidates)._data)).reshape(-1)
    rows, ids = [], []
    for i, row in enumerate(true):
        for c in row.tolist():
            for j in np.nonzero(sampled == c)[0].tolist():
                rows.append(i)
                ids.append(j)
    return ComputeAccidentalHits(
        constant(np.array(rows, np.int32)),
        constant(np.array(ids, np.int64)),
        constant(np.full(len(rows), np.finfo(np.float32).min, np.float32)),
    )


def _sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                    num_classes: int, num_true: int, sampled_values: Any,
                    subtract_log_q: bool, remove_accidental_hits: bool, seed: Any,
                    opname: str) -> tuple:  # fmt: skip
    """TF's `_compute_sampled_logits`: ([batch, num_true + num_sampled] logits, labels)."""
    w = concat(list(weights), 0) if isinstance(weights, list | tuple) else _as_tensor(weights)
    b = concat(list(biases), 0) if isinstance(biases, list | tuple) else _as_tensor(biases)
    x = _as_tensor(inputs)
    lab = _true_classes(labels, num_true, opname)
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(lab, num_true, num_sampled, True,
                                                       num_classes, seed=seed)  # fmt: skip
    sampled, true_expected, sampled_expected = (stop_gradient(_as_tensor(v))
                                                for v in sampled_values)  # fmt: skip
    sampled_ids = np.asarray(backend.to_host(sampled._data)).reshape(-1).astype(np.int64)
    ids = constant(np.concatenate([lab.reshape(-1), sampled_ids]))
    all_w, all_b = embedding_lookup(w, ids), embedding_lookup(b, ids)
    n_true = lab.size
    dim = int(w._data.shape[1])
    true_w, sampled_w = all_w[:n_true], all_w[n_true:]
    true_b, sampled_b = all_b[:n_true], all_b[n_true:]
    sampled_logits = matmul(x, sampled_w, transpose_b=True) + sampled_b
    true_w = reshape(true_w, (-1, num_true, dim))
    true_logits = reduce_sum(reshape(x, (-1, 1, dim)) * true_w, axis=2)
    true_logits = true_logits + reshape(true_b, (-1, num_true))
    if remove_accidental_hits:
        hits = compute_accidental_hits(lab, sampled_ids, num_true)
        mask = np.zeros((lab.shape[0], len(sampled_ids)), x._data.dtype)
        mask[hits.indices.numpy(), hits.ids.numpy()] = np.finfo(np.float32).min
        sampled_logits = sampled_logits + constant(mask)
    if subtract_log_q:
        # The samplers give float32 counts; float64 logits take them cast (TF would refuse).
        true_logits = true_logits - log(cast(true_expected, x.dtype))
        sampled_logits = sampled_logits - log(cast(sampled_expected, x.dtype))
    logits = concat([true_logits, sampled_logits], 1)
    targets = np.concatenate([np.full(lab.shape, 1.0 / num_true),
                              np.zeros((lab.shape[0], len(sampled_ids)))], 1)  # fmt: skip
    return logits, constant(targets.astype(x._data.dtype))


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None,
             remove_accidental_hits: bool = False, name: str = "nce_loss") -> Any:  # fmt: skip
    """Noise-contrastive estimation loss per example: logistic regression of the true classes
    against `num_sampled` classes from `sampled_values` (default: the log-uniform sampler),
    logits corrected by -log(expected count). `weights` [num_classes, dim] (or a list of
    shards, concatenated), `biases` [num_classes], `labels` [batch, num_true], `inputs`
    [batch, dim].

    >>> import layerflow as tf
    >>> tf.nn.nce_loss(tf.zeros((10, 3)), tf.zeros(10), [[1], [2]], tf.ones((2, 3)), 4, 10).shape
    TensorShape([2])
    """
    logits, targets = _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                      num_true, sampled_values, True, remove_accidental_hits,
                                      None, "nce_loss")  # fmt: skip
    return reduce_sum(sigmoid_cross_entropy_with_logits(labels=targets, logits=logits), axis=1)


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                         num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, seed: Any = None,
                         name: str = "sampled_softmax_loss") -> Any:  # fmt: skip
    """Softmax cross-entropy over the true classes and `num_sampled` sampled classes (logits
    corrected by -log(expected count); sampled classes equal to a true class removed by
    default): a cheap estimate of the full softmax loss for training.

    >>> import layerflow as tf
    >>> tf.nn.sampled_softmax_loss(tf.zeros((10, 3)), tf.zeros(10), [[1], [2]],
    ...                            tf.ones((2, 3)), 4, 10, seed=1).shape
    TensorShape([2])
    """
    logits, targets = _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                      num_true, sampled_values, True, remove_accidental_hits,
                                      seed, "sampled_softmax_loss")  # fmt: skip
    return softmax_cross_entropy_with_logits(labels=targets, logits=logits)
