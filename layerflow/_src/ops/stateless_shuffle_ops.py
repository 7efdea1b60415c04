"""`tf.random.experimental.index_shuffle` and `stateless_shuffle`: permutations determined by a
seed alone.

`index_shuffle(index, seed, max_index)` is a bijection of [0, max_index] computed one index at a
time (no permutation is materialised): a four-round Feistel network over the smallest power of
two above max_index, its round keys drawn from Philox under the seed, with cycle walking back
into range. TF uses the same construction with other round functions, so the permutation is a
different one; the contract (a bijection that depends only on the seed) is TF's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import philox
from layerflow._src.ops.gather_ops import gather
from layerflow._src.ops.random_ops import _num, _place
from layerflow._src.ops.stateless_random_ops import _seed

_ROUNDS = 4


def _round_keys(seed: Any, opname: str) -> np.ndarray:
    s, _ = _seed(seed, opname)
    words = s.astype(np.int64).view(np.uint64)
    bits = philox.blocks(int(words[1]), int(words[0]), 1).reshape(-1)  # 4 x uint32
    return bits.astype(np.uint64)


def _feistel(x: np.ndarray, keys: np.ndarray, half: int) -> np.ndarray:
    mask = np.uint64((1 << half) - 1)
    left, right = x >> np.uint64(half), x & mask
    for k in keys[:_ROUNDS]:
        f = (right * np.uint64(0x9E3779B97F4A7C15) + k) & np.uint64(philox.MASK64)
        f = (f ^ (f >> np.uint64(29))) & mask
        left, right = right, left ^ f
    return (left << np.uint64(half)) | right


def index_shuffle(index: Any, seed: Any, max_index: Any) -> Tensor:
    """The position of `index` in a seed-determined permutation of [0, max_index].

    `index` is a scalar or a vector (with `max_index` a scalar or a vector of the same length);
    the result has `index`'s shape and dtype.

    >>> import layerflow as tf
    >>> out = [int(index_shuffle(i, seed=[1, 2], max_index=9)) for i in range(10)]
    >>> sorted(out) == list(range(10))
    True
    """
    idx = np.asarray(_num(index))
    top = np.asarray(_num(max_index))
    if idx.dtype.kind not in "iu" or top.dtype.kind not in "iu":
        raise errors.InvalidArgumentError(
            None, "RandomIndexShuffle", "index_shuffle: index and max_index must be integers."
        )
    if np.any(idx < 0) or np.any(top < 0) or np.any(idx > top):
        raise errors.InvalidArgumentError(
            None,
            "RandomIndexShuffle",
            f"index_shuffle: index {idx.tolist()} must lie in [0, max_index={top.tolist()}].",
        )
    keys = _round_keys(seed, "index_shuffle")
    flat_idx = idx.reshape(-1).astype(np.uint64)
    flat_top = np.broadcast_to(top, idx.shape).reshape(-1).astype(np.uint64)
    out = np.empty_like(flat_idx)
    for i, (value, limit) in enumerate(zip(flat_idx.tolist(), flat_top.tolist(), strict=True)):
        bits = max(2, int(limit).bit_length() + (int(limit).bit_length() & 1))
        x = np.array([value], np.uint64)
        while True:  # cycle walking: stays in [0, limit] and terminates (a bijection)
            x = _feistel(x, keys, bits // 2)
            if int(x[0]) <= limit:
                break
        out[i] = x[0]
    return _place(out.astype(idx.dtype).reshape(idx.shape))


def stateless_shuffle(value: Any, seed: Any, alg: Any = "auto_select",
                      name: str | None = None) -> Tensor:  # fmt: skip
    """`value` with its first dimension permuted as `seed` alone determines.

    >>> import layerflow as tf
    >>> a = stateless_shuffle(tf.range(6), seed=[1, 2])
    >>> b = stateless_shuffle(tf.range(6), seed=[1, 2])
    >>> bool(tf.reduce_all(a == b)), sorted(a.numpy().tolist())
    (True, [0, 1, 2, 3, 4, 5])
    """
    arr_shape = np.shape(_num(value))
    if not arr_shape:
        raise errors.InvalidArgumentError(
            None, "StatelessShuffle", "stateless_shuffle: value must have rank >= 1, got a scalar."
        )
    n = arr_shape[0]
    if n <= 1:
        return gather(value, np.arange(n, dtype=np.int64))
    perm = index_shuffle(np.arange(n, dtype=np.int64), seed, n - 1)
    return gather(value, perm)
