"""tensor_scatter_nd_*, embedding_lookup, cumprod, band_part and divide_no_nan against NumPy,
with numerical gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(17)
A = rng.standard_normal((4, 3))
IDX = np.array([[2], [0]])
U = rng.standard_normal((2, 3))


def _scatter(a, u, op):
    out = a.copy()
    for (i,), row in zip(IDX, u):
        out[i] = op(out[i], row)
    return out


def test_tensor_scatter_nd_update_add_sub():
    check_op(lambda t, u: tf.tensor_scatter_nd_update(t, IDX, u), [A, U],
             lambda a, u: _scatter(a, u, lambda old, new: new))  # fmt: skip
    check_op(lambda t, u: tf.tensor_scatter_nd_add(t, IDX, u), [A, U],
             lambda a, u: _scatter(a, u, np.add))  # fmt: skip
    check_op(lambda t, u: tf.tensor_scatter_nd_sub(t, IDX, u), [A, U],
             lambda a, u: _scatter(a, u, np.subtract))  # fmt: skip
    elems = np.array([[0, 1], [3, 2], [0, 1]])  # element updates; a repeated index adds twice
    ref = A.copy()
    np.add.at(ref, (elems[:, 0], elems[:, 1]), [1.0, 2.0, 3.0])
    got = tf.tensor_scatter_nd_add(A, elems, [1.0, 2.0, 3.0])
    assert got.dtype == tf.float64  # the Python updates took the tensor's dtype
    np.testing.assert_allclose(got.numpy(), ref)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"updates must have shape.*\[2, 3\]"):
        tf.tensor_scatter_nd_update(A, IDX, np.ones((2, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 4 is not in"):
        tf.tensor_scatter_nd_update(A, [[4]], np.ones((1, 3)))


def test_embedding_lookup_table_shards_and_max_norm():
    ids = np.array([[3, 0], [3, 1]])
    check_op(lambda t: tf.nn.embedding_lookup(t, ids), [A], lambda a: a[ids])
    # "div" sharding: 4 rows over 3 shards are [0, 1], [2], [3].
    shards = [A[:2], A[2:3], A[3:]]
    got = tf.nn.embedding_lookup([tf.constant(s) for s in shards], ids)
    np.testing.assert_allclose(got.numpy(), A[ids])
    with pytest.raises(ValueError, match="'div' partition strategy"):
        tf.nn.embedding_lookup([tf.constant(A[:1]), tf.constant(A[1:])], ids)

    def clipped(a):
        rows = a[ids]
        n = np.linalg.norm(rows, axis=-1, keepdims=True)
        return rows * 0.5 / np.maximum(n, 0.5)

    check_op(lambda t: tf.nn.embedding_lookup(t, ids, max_norm=0.5), [A], clipped)


def _cumprod_ref(a, axis, exclusive, reverse):
    b = np.flip(a, axis) if reverse else a
    out = np.cumprod(b, axis)
    if exclusive:
        out = np.concatenate([np.ones_like(np.take(out, [0], axis)), np.delete(out, -1, axis)],
                             axis)  # fmt: skip
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("with_zeros", [False, True])
def test_cumprod_all_modes_with_and_without_zeros(with_zeros):
    x = rng.uniform(0.5, 1.5, (3, 4))
    if with_zeros:  # out / x is undefined here: the exact gradient path runs
        x[1, 1] = x[2, 0] = x[2, 2] = 0.0
    for axis in (0, 1):
        for exclusive in (False, True):
            for reverse in (False, True):
                mode = (axis, exclusive, reverse)
                check_op(lambda t, m=mode: tf.math.cumprod(t, *m), [x],
                         lambda v, m=mode: _cumprod_ref(v, *m))  # fmt: skip
    assert tf.math.cumprod([2, 3]).dtype == tf.int32


def test_band_part():
    x = rng.standard_normal((2, 4, 5))
    i, j = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    for lower, upper in [(-1, 0), (0, -1), (1, 2), (0, 0), (-1, -1)]:
        keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
        check_op(lambda t, lo=lower, up=upper: tf.linalg.band_part(t, lo, up), [x],
                 lambda a, k=keep: np.where(k, a, 0.0))  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        tf.linalg.band_part([1.0, 2.0], 0, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_lower=5 must be <= 4"):
        tf.linalg.band_part(x, 5, 0)


def test_divide_no_nan():
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((3, 4))
    y[0, 1] = y[2, 3] = 0.0

    def ref(a, b):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))

    # Finite differences across y == 0 are meaningless (a jump): check y's gradient away from it.
    check_op(tf.math.divide_no_nan, [x, y], ref, grad=[0])
    check_op(tf.math.divide_no_nan, [x, np.where(y == 0, 1.5, y)], ref)
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(tf.math.divide_no_nan(v, tf.constant([0.0, 4.0])))
    np.testing.assert_allclose(tape.gradient(out, v).numpy(), [0.0, 0.25])
    assert float(tf.math.divide_no_nan(np.inf, 0.0)) == 0.0
    with pytest.raises(TypeError, match="floating point"):
        tf.math.divide_no_nan([1, 2], [0, 1])
