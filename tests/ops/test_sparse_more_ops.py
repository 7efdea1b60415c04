"""tf.sparse reductions, softmax, segment ops, fill_empty_rows, bincount, maximum/minimum,
to_indicator, mask and sampled_addmm, against NumPy oracles."""

import numpy as np
import pytest
from sparse_helpers import random_sparse

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(34)


def _max_oracle(idx, vals, shape, axes):
    """Max over the stored entries only; 0 where a cell has none (TF's semantics)."""
    kept = [d for d in range(len(shape)) if d not in axes]
    out = np.full([shape[d] for d in kept], -np.inf)
    for i, v in zip(idx, vals):
        key = tuple(i[kept])
        out[key] = max(out[key], v)
    return np.where(np.isinf(out), 0.0, out)


@pytest.mark.parametrize("shape,axis", [((4, 5), 1), ((4, 5), 0), ((3, 2, 4), (0, 2)),
                                        ((3, 2, 4), None), ((3, 2, 4), -1)])  # fmt: skip
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_sum_and_max(shape, axis, keepdims):
    idx, vals, d = random_sparse(rng, shape, 9, duplicates=True)  # unordered, repeated
    st = tf.SparseTensor(idx, vals, shape)
    np_axis = axis if axis is None or isinstance(axis, int) else tuple(axis)
    got = tf.sparse.reduce_sum(st, axis, keepdims=keepdims)
    np.testing.assert_allclose(got, d.sum(axis=np_axis, keepdims=keepdims), atol=1e-12)
    sp = tf.sparse.reduce_sum(st, axis, keepdims=keepdims, output_is_sparse=True)
    np.testing.assert_allclose(
        tf.sparse.to_dense(sp), d.sum(axis=np_axis, keepdims=keepdims), atol=1e-12
    )
    uniq_idx, uniq_vals, _ = random_sparse(rng, shape, 9)
    st2 = tf.SparseTensor(uniq_idx, uniq_vals, shape)
    axes = (
        list(range(len(shape)))
        if axis is None
        else sorted({a % len(shape) for a in np.atleast_1d(axis)})
    )
    expect = _max_oracle(uniq_idx, uniq_vals, shape, axes)
    if keepdims:
        expect = np.expand_dims(expect, tuple(axes))
    np.testing.assert_allclose(tf.sparse.reduce_max(st2, axis, keepdims=keepdims), expect)
    smax = tf.sparse.reduce_max(st2, axis, keepdims=keepdims, output_is_sparse=True)
    np.testing.assert_allclose(tf.sparse.to_dense(smax), expect)


def test_reduce_max_ignores_implicit_zeros_as_tf():
    n = tf.SparseTensor([[0, 0], [1, 1]], [-1.0, -2.0], [2, 3])
    assert tf.sparse.reduce_max(n, 1).numpy().tolist() == [-1.0, -2.0]
    assert tf.sparse.reduce_max(n, 0).numpy().tolist() == [-1.0, -2.0, 0.0]
    assert float(tf.sparse.reduce_max(n)) == -1.0
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="Invalid reduction dimension 2, for input with 2"
    ):
        tf.sparse.reduce_sum(n, 2)


def test_reduce_sum_gradient():
    idx = np.array([[0, 1], [1, 2], [0, 1], [1, 0]])
    check_op(lambda v: tf.sparse.reduce_sum(tf.SparseTensor(idx, v, [2, 3]), 1),
             [rng.standard_normal(4)], lambda v: np.array([v[0] + v[2], v[1] + v[3]]))  # fmt: skip


def test_softmax_matches_numpy_per_row_with_gradient():
    shape = (3, 2, 5)
    idx, vals, _ = random_sparse(rng, shape, 12)

    def ref(v):
        out = np.empty_like(v)
        for key in {tuple(i[:-1]) for i in idx}:
            rows = [j for j, i in enumerate(idx) if tuple(i[:-1]) == key]
            e = np.exp(v[rows] - v[rows].max())
            out[rows] = e / e.sum()
        return out

    check_op(lambda v: tf.sparse.softmax(tf.SparseTensor(idx, v, shape)).values, [vals], ref)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        tf.sparse.softmax(tf.SparseTensor([[0]], [1.0], [3]))


@pytest.mark.parametrize("num_segments", [None, 5])
def test_segment_ops(num_segments):
    data = rng.standard_normal((6, 3))
    indices = np.array([0, 2, 2, 5, 1])
    ids = np.array([0, 0, 1, 3, 3])
    n = 4 if num_segments is None else num_segments
    sums = np.zeros((n, 3))
    counts = np.zeros(n)
    for i, s in zip(indices, ids):
        sums[s] += data[i]
        counts[s] += 1
    safe = np.maximum(counts, 1)[:, None]
    for fn, expect in [(tf.sparse.segment_sum, sums), (tf.sparse.segment_mean, sums / safe),
                       (tf.sparse.segment_sqrt_n, sums / np.sqrt(safe))]:  # fmt: skip
        check_op(lambda d, fn=fn: fn(d, indices, ids, num_segments=num_segments), [data],
                 lambda d, e=expect: e)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        tf.sparse.segment_sum(data, [0, 1], [1, 0])


def test_fill_empty_rows_as_tf():
    st = tf.SparseTensor([[1, 0], [3, 1], [1, 2]], [5.0, 6.0, 7.0], [5, 3])
    out, empty = tf.sparse.fill_empty_rows(st, -1.0)
    assert out.indices.numpy().tolist() == [[0, 0], [1, 0], [1, 2], [2, 0], [3, 1], [4, 0]]
    assert out.values.numpy().tolist() == [-1.0, 5.0, 7.0, -1.0, 6.0, -1.0]
    assert empty.numpy().tolist() == [True, False, True, False, True]

    def fn(v):
        return tf.sparse.fill_empty_rows(tf.SparseTensor([[1, 0]], v, [2, 2]), 0.0)[0].values

    check_op(fn, [np.array([3.0])], lambda v: np.array([0.0, v[0]]))


def test_bincount_dense_sparse_axis_weights():
    vals = np.array([[1, 2, 2], [3, 3, 3]])
    out = tf.sparse.bincount(tf.constant(vals), axis=-1)
    assert out.indices.numpy().tolist() == [[0, 1], [0, 2], [1, 3]]
    assert out.values.numpy().tolist() == [1, 2, 3] and out.shape == [2, 4]
    flat = tf.sparse.bincount(tf.constant([1, 2, 2, 7]), minlength=10, maxlength=5)
    np.testing.assert_array_equal(tf.sparse.to_dense(flat), np.bincount([1, 2, 2], minlength=5))
    w = np.array([0.5, 1.5, 2.0], np.float32)
    wc = tf.sparse.bincount(tf.constant([0, 3, 3]), weights=w)
    np.testing.assert_allclose(tf.sparse.to_dense(wc), [0.5, 0, 0, 3.5])
    sp_in = tf.SparseTensor([[0, 0], [1, 1], [1, 2]], tf.constant([4, 4, 1], tf.int64), [2, 3])
    per_row = tf.sparse.bincount(sp_in, axis=-1, binary_output=True)
    np.testing.assert_array_equal(tf.sparse.to_dense(per_row), [[0, 0, 0, 0, 1], [0, 1, 0, 0, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.sparse.bincount(tf.constant([-1, 2]))


@pytest.mark.parametrize("fn,np_fn", [(tf.sparse.maximum, np.maximum),
                                      (tf.sparse.minimum, np.minimum)])  # fmt: skip
def test_maximum_minimum(fn, np_fn):
    ia, va, da = random_sparse(rng, (4, 5), 7)
    ib, vb, db = random_sparse(rng, (4, 5), 7)
    out = fn(tf.SparseTensor(ia, va, [4, 5]), tf.SparseTensor(ib, vb, [4, 5]))
    union = {tuple(r) for r in np.concatenate([ia, ib])}
    expect = np.zeros((4, 5))
    for k in union:
        expect[k] = np_fn(da[k], db[k])
    np.testing.assert_allclose(tf.sparse.to_dense(out), expect)
    assert out.values.shape[0] == len(union)
    with pytest.raises(tf.errors.InvalidArgumentError, match="do not match"):
        fn(tf.SparseTensor(ia, va, [4, 5]), tf.SparseTensor(ib, vb, [4, 6]))


def test_to_indicator_mask_sampled_addmm():
    st = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([0, 3, 2], tf.int64), [2, 2])
    ind = tf.sparse.to_indicator(st, 4).numpy()
    assert ind.tolist() == [[True, False, False, True], [False, False, True, False]]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"in \[0, 3\)"):
        tf.sparse.to_indicator(st, 3)
    slices = tf.IndexedSlices(tf.constant([[1.0], [2.0], [3.0]]), tf.constant([0, 4, 2]), [5, 1])
    kept = tf.sparse.mask(slices, [4])
    assert kept.indices.numpy().tolist() == [0, 2] and kept.values.numpy().tolist() == [
        [1.0],
        [3.0],
    ]
    m1, m2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    idx = np.array([[0, 1], [2, 4], [1, 0]])
    vals = rng.standard_normal(3)
    _, out, shape = tf.sparse.sampled_addmm(idx, vals, [3, 5], m1, m2, beta=0.5, alpha=2.0,
                                            output_type=tf.float64)  # fmt: skip
    prod = m1 @ m2
    np.testing.assert_allclose(out, 2.0 * prod[tuple(idx.T)] + 0.5 * vals, rtol=1e-12)
