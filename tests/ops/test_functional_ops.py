"""tf.map_fn / scan / foldl / foldr / vectorized_map: NumPy oracles, TF 2.21's structures,
dtype checks and errors, and gradients through every slice."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(11)
X = rng.uniform(0.5, 1.5, (4, 3))
W = rng.uniform(-1.0, 1.0, (4, 3))


def test_map_fn_forward_and_gradient():
    check_op(lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r) * r, x),
             [X], lambda x: (x * x).sum(1, keepdims=True) * x)  # fmt: skip

    def pairs(x, w):
        return tf.map_fn(lambda p: tf.sin(p[0]) * p[1], (x, w), fn_output_signature=x.dtype)

    check_op(pairs, [X, W], lambda x, w: np.sin(x) * w)


def test_map_fn_structures_and_signatures():
    a, b = tf.constant([1, 2]), tf.constant([3, 4])
    out = tf.map_fn(lambda p: p[0] + p[1], (a, b), fn_output_signature=tf.int32)
    np.testing.assert_array_equal(out.numpy(), [4, 6])
    x = tf.constant([1.0, 2.0])
    spec = (tf.float32, tf.TensorSpec([], tf.float32))
    u, v = tf.map_fn(lambda t: (t, t * 2.0), x, fn_output_signature=spec)
    np.testing.assert_array_equal(v.numpy(), [2.0, 4.0])
    d = tf.map_fn(lambda e: {"y": e["a"] * 2}, {"a": a}, fn_output_signature={"y": tf.int32})
    np.testing.assert_array_equal(d["y"].numpy(), [2, 4])
    ones = tf.map_fn(lambda t: 1, a)  # a Python result takes the expected dtype
    assert ones.dtype == tf.int32
    cast = tf.map_fn(lambda t: tf.cast(t, tf.float32), a, dtype=tf.float32)
    assert cast.dtype == tf.float32
    empty = tf.map_fn(lambda t: t * 2.0, tf.zeros([0, 3]))
    assert empty.shape == (0,) and empty.dtype == tf.float32  # TF's shape for no slices


def test_map_fn_errors():
    a = tf.constant([1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32.*int32"):
        tf.map_fn(lambda t: tf.cast(t, tf.float32), a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32.*float32"):
        tf.map_fn(lambda t: t, a, fn_output_signature=tf.float32)
    with pytest.raises(ValueError, match="structure"):
        tf.map_fn(lambda p: p[0] + p[1], (a, a))
    with pytest.raises(ValueError, match="not scalars"):
        tf.map_fn(lambda t: t, tf.constant(3.0))
    with pytest.raises(ValueError, match="Dimensions 2 and 3"):
        tf.map_fn(lambda p: p[0], (a, tf.constant([1, 2, 3])), fn_output_signature=tf.int32)
    with pytest.raises(ValueError, match="Incompatible shape"):
        tf.map_fn(lambda t: tf.range(t), a)
    with pytest.raises(ValueError, match="Only one of"):
        tf.map_fn(lambda t: t, a, dtype=tf.int32, fn_output_signature=tf.int32)
    with pytest.raises(TypeError, match="callable"):
        tf.map_fn(1, a)


def test_scan_forward_reverse_initializer_and_structures():
    v = tf.constant([1, 2, 3, 4])
    np.testing.assert_array_equal(tf.scan(lambda a, x: a + x, v).numpy(), [1, 3, 6, 10])
    np.testing.assert_array_equal(tf.scan(lambda a, x: a + x, v, initializer=10).numpy(),
                                  [11, 13, 16, 20])  # fmt: skip
    np.testing.assert_array_equal(tf.scan(lambda a, x: a + x, v, reverse=True).numpy(),
                                  [10, 9, 7, 4])  # fmt: skip
    s, p = tf.scan(lambda a, x: (a[0] + x, a[1] * x), tf.constant([1, 2, 3]), initializer=(0, 1))
    np.testing.assert_array_equal(s.numpy(), [1, 3, 6])
    np.testing.assert_array_equal(p.numpy(), [1, 2, 6])
    pairs = (tf.constant([1, 2, 3]), tf.constant([1, 1, 2]))
    np.testing.assert_array_equal(
        tf.scan(lambda a, x: a + x[0] * x[1], pairs, initializer=0).numpy(), [1, 3, 9]
    )
    empty = tf.scan(lambda a, x: a + x, tf.zeros([0]), initializer=0.0)
    assert empty.shape == (0,) and empty.dtype == tf.float32
    with pytest.raises(tf.errors.OutOfRangeError, match="index 0"):
        tf.scan(lambda a, x: a + x, tf.zeros([0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32"):
        tf.scan(lambda a, x: tf.cast(a, tf.float32), v)


def test_scan_gradient_matches_a_recurrence():
    def f(x, w):
        return tf.scan(
            lambda h, xw: tf.tanh(h * xw[1] + xw[0]), (x, w), initializer=tf.zeros_like(x[0])
        )

    def ref(x, w):
        h, out = np.zeros_like(x[0]), []
        for i in range(len(x)):
            h = np.tanh(h * w[i] + x[i])
            out.append(h)
        return np.stack(out)

    check_op(f, [X, W], ref)
    check_op(lambda x: tf.scan(lambda a, r: a * r, x, reverse=True), [X],
             lambda x: np.cumprod(x[::-1], axis=0)[::-1])  # fmt: skip


def test_foldl_foldr_forward_gradient_and_errors():
    v = tf.constant([1, 2, 3, 4])
    assert int(tf.foldl(lambda a, x: a + x, v)) == 10
    assert int(tf.foldl(lambda a, x: a - x, v, initializer=0)) == -10
    assert int(tf.foldr(lambda a, x: a - x, v)) == -2  # 4 - 3 - 2 - 1
    assert int(tf.foldr(lambda a, x: a - x, v, initializer=0)) == -10
    assert float(tf.foldl(lambda a, x: a + x, tf.zeros([0]), initializer=1.0)) == 1.0
    with pytest.raises(tf.errors.OutOfRangeError):
        tf.foldr(lambda a, x: a + x, tf.zeros([0]))
    check_op(lambda x: tf.foldl(lambda a, r: a * r + 1.0, x), [X],
             lambda x: ((x[0] * x[1] + 1) * x[2] + 1) * x[3] + 1)  # fmt: skip

    def right(x):
        return tf.foldr(lambda a, r: tf.sin(a) * r, x, initializer=tf.ones_like(x[0]))

    check_op(right, [X], lambda x: np.sin(np.sin(np.sin(np.sin(1.0) * x[3]) * x[2]) * x[1]) * x[0])


def test_vectorized_map_forward_structures_and_gradient():
    np.testing.assert_array_equal(
        tf.vectorized_map(lambda r: tf.reduce_sum(r), tf.ones([3, 2])).numpy(), [2.0, 2.0, 2.0]
    )
    out = tf.vectorized_map(lambda p: tf.cast(p[0], tf.float32) * p[1],
                            (tf.constant([1, 2]), tf.constant([3.0, 4.0])))  # fmt: skip
    np.testing.assert_array_equal(out.numpy(), [3.0, 8.0])
    assert tf.vectorized_map(lambda r: 1.0, tf.constant([1, 2])).dtype == tf.float32
    empty = tf.vectorized_map(lambda r: tf.reduce_sum(r, keepdims=True), tf.zeros([0, 3]))
    assert empty.shape == (0, 1)
    with pytest.raises(ValueError, match="Dimensions 2 and 3"):
        tf.vectorized_map(lambda p: p[0], (tf.constant([1, 2]), tf.constant([1, 2, 3])))
    check_op(lambda x, w: tf.vectorized_map(lambda p: tf.tensordot(p[0], p[1], 1), (x, w)),
             [X, W], lambda x, w: (x * w).sum(1))  # fmt: skip
