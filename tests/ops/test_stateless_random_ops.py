"""tf.random.stateless_*, split, fold_in, gamma, poisson: results depend only on the seed; TF's
shapes, dtypes and argument errors (checked against TF 2.21); moments against NumPy/SciPy-free
closed forms on large samples."""

import numpy as np
import pytest

import layerflow as tf

R = tf.random
N = 40000


def test_stateless_ops_depend_only_on_the_seed():
    for fn in [lambda s: R.stateless_uniform([5], seed=s),
               lambda s: R.stateless_normal([5], seed=s),
               lambda s: R.stateless_truncated_normal([5], seed=s),
               lambda s: R.stateless_poisson([5], seed=s, lam=3.0),
               lambda s: R.stateless_gamma([5], seed=s, alpha=2.0),
               lambda s: R.stateless_binomial([5], seed=s, counts=10, probs=0.3),
               lambda s: R.stateless_categorical([[0.0, 1.0, 2.0]], 5, seed=s)]:  # fmt: skip
        a = fn([1, 2]).numpy()
        tf.random.set_seed(99)  # the global seed plays no part
        R.uniform([3])
        np.testing.assert_array_equal(a, fn(tf.constant([1, 2])).numpy())
        assert not np.array_equal(a, fn([1, 3]).numpy())


def test_stateless_uniform_dtypes_ranges_and_errors():
    f = R.stateless_uniform([N], seed=[3, 4], minval=-2.0, maxval=3.0, dtype=tf.float64)
    x = f.numpy()
    assert f.dtype == tf.float64 and x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean() - 0.5) < 0.05 and abs(x.var() - 25 / 12) < 0.05
    i = R.stateless_uniform([N], seed=[3, 4], minval=0, maxval=10, dtype=tf.int32)
    assert i.dtype == tf.int32 and set(np.unique(i.numpy())) == set(range(10))
    full = R.stateless_uniform([N], seed=[3, 4], minval=None, maxval=None, dtype=tf.int64)
    assert full.numpy().min() < -(2**62) and full.numpy().max() > 2**62
    with pytest.raises(ValueError, match="both None or not None"):
        R.stateless_uniform([2], seed=[1, 2], dtype=tf.int32)
    with pytest.raises(ValueError, match="invalid value"):
        R.stateless_uniform([2], seed=[1, 2], dtype=tf.bool)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"seed must have shape \[2\], not \[3\]"
    ):
        R.stateless_uniform([2], seed=[1, 2, 3])


def test_stateless_normal_truncated_normal_moments():
    z = R.stateless_normal([N], seed=[5, 6], mean=1.0, stddev=2.0).numpy()
    assert z.dtype == np.float32 and abs(z.mean() - 1.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    t = R.stateless_truncated_normal([N], seed=[5, 6], mean=1.0, stddev=2.0).numpy()
    assert np.abs(t - 1.0).max() <= 4.0 + 1e-6
    assert abs(t.std() - 2.0 * 0.8796) < 0.03  # std of a standard normal truncated at +-2
    with pytest.raises(TypeError, match="floating"):
        R.stateless_normal([2], seed=[1, 2], dtype=tf.int32)


def test_stateless_categorical_poisson_gamma_binomial():
    logits = np.log([[0.2, 0.8], [0.9, 0.1]])
    c = R.stateless_categorical(logits, N, seed=[1, 1])
    assert c.shape == (2, N) and c.dtype == tf.int64
    np.testing.assert_allclose(c.numpy().mean(axis=1), [0.8, 0.1], atol=0.01)
    p = R.stateless_poisson([N, 3], seed=[1, 1], lam=[1.0, 2.0, 3.0])
    assert p.dtype == tf.int32
    np.testing.assert_allclose(p.numpy().mean(0), [1, 2, 3], rtol=0.03)
    g = R.stateless_gamma([N, 2], seed=[1, 1], alpha=[2.0, 5.0], beta=2.0)
    np.testing.assert_allclose(g.numpy().mean(0), [1.0, 2.5], rtol=0.03)  # alpha / beta
    b = R.stateless_binomial([N], seed=[1, 1], counts=10, probs=0.3)
    assert abs(b.numpy().mean() - 3.0) < 0.05
    with pytest.raises(tf.errors.InvalidArgumentError, match="must end with the shape of lam"):
        R.stateless_poisson([4, 2], seed=[1, 1], lam=[1.0, 2.0, 3.0])


def test_split_and_fold_in_make_new_distinct_seeds_of_the_seed_dtype():
    s = R.split([1, 2])
    assert s.shape == (2, 2) and s.dtype == tf.int32
    s3 = R.split(tf.constant([1, 2], tf.int64), 3)
    assert s3.shape == (3, 2) and s3.dtype == tf.int64
    assert len({tuple(r) for r in s3.numpy()}) == 3
    np.testing.assert_array_equal(R.split([1, 2], 3).numpy(), R.split([1, 2], 3).numpy())
    f5, f6 = R.fold_in([1, 2], 5), R.fold_in([1, 2], 6)
    assert f5.shape == (2,) and not np.array_equal(f5.numpy(), f6.numpy())
    np.testing.assert_array_equal(f5.numpy(), R.fold_in([1, 2], 5).numpy())
    a = R.stateless_uniform([4], seed=s[0]).numpy()
    assert not np.array_equal(a, R.stateless_uniform([4], seed=s[1]).numpy())


def test_gamma_and_poisson_shapes_dtypes_moments_and_seed_rules():
    g = R.gamma([N], alpha=[0.5, 1.5], beta=2.0, seed=1)
    assert g.shape == (N, 2) and g.dtype == tf.float32
    np.testing.assert_allclose(g.numpy().mean(0), [0.25, 0.75], rtol=0.04)
    p = R.poisson([N], lam=[0.5, 1.5])
    assert p.shape == (N, 2) and p.dtype == tf.float32
    np.testing.assert_allclose(p.numpy().mean(0), [0.5, 1.5], rtol=0.04)
    assert R.poisson([3], lam=2.0, dtype=tf.int64).dtype == tf.int64
    tf.random.set_seed(7)
    a = R.gamma([3], alpha=1.0, seed=2).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(a, R.gamma([3], alpha=1.0, seed=2).numpy())
    with pytest.raises(TypeError, match="floating"):
        R.gamma([2], alpha=1.0, dtype=tf.int32)
