"""tf.nn.embedding_lookup_sparse and safe_embedding_lookup_sparse against NumPy, gradients to
the table by finite differences, and training the table with an optimizer."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(55)
IDX = np.array([[0, 0], [0, 1], [0, 2], [2, 0], [2, 1], [3, 0]])
IDS = np.array([1, 3, 1, 0, 4, 2])
W = np.array([0.5, 2.0, 1.0, 1.5, 0.25, 3.0])


def _oracle(table, ids, weights, combiner, n_rows):
    out = np.zeros((n_rows, table.shape[1]))
    for r in range(n_rows):
        sel = IDX[:, 0] == r
        if not sel.any():
            continue
        w = weights[sel] if weights is not None else np.ones(sel.sum())
        total = (table[ids[sel]] * w[:, None]).sum(0)
        if combiner == "mean":
            total = total / w.sum()
        elif combiner == "sqrtn":
            total = total / np.sqrt((w**2).sum())
        out[r] = total
    return out


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse_forward_and_gradient(combiner, weighted):
    table = rng.standard_normal((5, 3))
    sp_ids = tf.SparseTensor(IDX, tf.constant(IDS, tf.int64), [4, 3])

    def fn(t):
        sp_w = tf.SparseTensor(IDX, tf.constant(W, t.dtype), [4, 3]) if weighted else None
        return tf.nn.embedding_lookup_sparse(t, sp_ids, sp_w, combiner=combiner)

    check_op(fn, [table], lambda t: _oracle(t, IDS, W if weighted else None, combiner, 4))


def test_embedding_lookup_sparse_rows_errors_and_default_combiner():
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([1, 3, 5], tf.int64), [4, 2])
    out = tf.nn.embedding_lookup_sparse(table, ids, None, combiner="sum")
    assert out.numpy().tolist() == [[8.0, 10.0], [0.0, 0.0], [10.0, 11.0]]  # max row + 1 rows
    mean = tf.nn.embedding_lookup_sparse(table, ids, None)
    assert mean.numpy()[0].tolist() == [4.0, 5.0]
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(table, ids, None, combiner="max")
    unordered = tf.SparseTensor([[2, 0], [0, 0]], tf.constant([1, 3], tf.int64), [4, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        tf.nn.embedding_lookup_sparse(table, unordered, None)
    other = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1.0, 1.0, 1.0], [4, 2])
    with pytest.raises(ValueError, match="same indices"):
        tf.nn.embedding_lookup_sparse(table, ids, other)


def test_embedding_lookup_sparse_trains_with_an_optimizer():
    table = tf.Variable(rng.standard_normal((5, 3)).astype(np.float32))
    sp_ids = tf.SparseTensor(IDX, tf.constant(IDS, tf.int64), [4, 3])
    target = rng.standard_normal((4, 3)).astype(np.float32)
    target[1] = 0.0  # row 1 has no ids: its output is always zero
    opt = tf.keras.optimizers.SGD(0.5)
    losses = []
    for _ in range(60):
        with tf.GradientTape() as tape:
            out = tf.nn.embedding_lookup_sparse(table, sp_ids, None, combiner="mean")
            loss = tf.reduce_mean((out - target) ** 2)
        (g,) = tape.gradient(loss, [table])
        assert g.shape == table.shape
        opt.apply_gradients([(g, table)])
        losses.append(float(loss))
    assert losses[-1] < 0.05 * losses[0]


def test_safe_embedding_lookup_sparse_as_tf():
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([1, -1, 5], tf.int64), [4, 2])
    out = tf.nn.safe_embedding_lookup_sparse(table, ids, None, default_id=2)
    assert out.numpy().tolist() == [[2.0, 3.0], [10.0, 11.0], [4.0, 5.0], [4.0, 5.0]]
    zeroed = tf.nn.safe_embedding_lookup_sparse(table, ids)
    assert zeroed.numpy().tolist() == [[2.0, 3.0], [10.0, 11.0], [0.0, 0.0], [0.0, 0.0]]
    weights = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [2.0, 1.0, -1.0], [4, 2])
    w = tf.nn.safe_embedding_lookup_sparse(table, ids, weights, combiner="sum")
    assert w.numpy().tolist() == [[4.0, 6.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]


def test_safe_embedding_lookup_sparse_rank3_ids_and_gradient():
    shape = [2, 3, 2]
    idx = np.array([[0, 0, 0], [0, 0, 1], [1, 2, 0], [0, 2, 1]])
    ids = np.array([3, 1, 0, 2])
    table = rng.standard_normal((4, 2))

    def fn(t):
        sp = tf.SparseTensor(idx, tf.constant(ids, tf.int64), shape)
        return tf.nn.safe_embedding_lookup_sparse(t, sp, combiner="sum")

    def ref(t):
        out = np.zeros((2, 3, 2))
        for i, v in zip(idx, ids):
            out[i[0], i[1]] += t[v]
        return out

    check_op(fn, [table], ref)
