"""Random sparse inputs and their dense NumPy oracles, shared by the tests of tf.sparse."""

import numpy as np


def random_sparse(rng, shape, nnz, *, ordered=False, duplicates=False, dtype=np.float64):
    """(indices [N, rank] int64, values [N], dense oracle); duplicates add up in the oracle."""
    size = int(np.prod(shape))
    flat = rng.choice(size, size=min(nnz, size), replace=False)
    if duplicates and flat.size:
        flat = np.concatenate([flat, flat[: max(1, flat.size // 3)]])
    if ordered:
        flat = np.sort(flat)
    else:
        rng.shuffle(flat)
    indices = np.stack(np.unravel_index(flat, shape), axis=1).astype(np.int64)
    indices = indices.reshape(flat.size, len(shape))
    values = (rng.standard_normal(flat.size) + 0.1).astype(dtype)
    dense = np.zeros(shape, dtype)
    np.add.at(dense, tuple(indices.T), values)
    return indices, values, dense
