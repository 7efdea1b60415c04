"""tf.random.stateless_parameterized_truncated_normal: TF's broadcasting, dtype and parameter
rules (checked against TF 2.21), determinism, and the distribution against the exact truncated
normal CDF (Kolmogorov-Smirnov) in each of the three sampling regimes."""

import math

import numpy as np
import pytest

import layerflow as tf

f = tf.random.stateless_parameterized_truncated_normal
N = 20000


def _truncnorm_cdf(x, mean, std, lo, hi):
    phi = np.vectorize(lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))))
    a, b = phi((lo - mean) / std), phi((hi - mean) / std)
    return (phi((x - mean) / std) - a) / (b - a)


@pytest.mark.parametrize(
    "mean,std,lo,hi",
    [
        (0.0, 1.0, -2.0, 2.0),  # the defaults: plain normal draws, rejected
        (1.0, 2.0, 0.5, 1.5),  # narrow: uniform proposals
        (0.0, 1.0, 3.0, np.inf),  # a right tail: exponential proposals
        (5.0, 0.5, -np.inf, 2.0),  # a left tail (mirrored)
        (0.0, 1.0, 2.5, 2.7),  # narrow and in the tail
    ],
)
def test_distribution_matches_the_truncated_normal(mean, std, lo, hi):
    x = f([N], seed=[7, 11], means=mean, stddevs=std, minvals=lo, maxvals=hi).numpy()
    assert x.dtype == np.float32 and x.min() >= lo and x.max() <= hi
    xs = np.sort(x.astype(np.float64))
    cdf = _truncnorm_cdf(xs, mean, std, lo, hi)
    emp_hi = np.arange(1, N + 1) / N
    ks = max(np.max(emp_hi - cdf), np.max(cdf - (emp_hi - 1.0 / N)))
    assert ks < 1.95 / math.sqrt(N), ks  # KS at the 0.1% level


def test_per_element_parameters_broadcast_over_leading_dimensions():
    means = tf.constant([0.0, 10.0, 20.0], tf.float64)
    x = f([4000, 3], seed=[1, 2], means=means, stddevs=tf.constant([1.0, 2.0, 0.1], tf.float64),
          minvals=tf.constant([-1.0, 9.0, 19.0], tf.float64),
          maxvals=tf.constant([1.0, 11.0, 21.0], tf.float64))  # fmt: skip
    assert x.dtype == tf.float64 and x.shape == (4000, 3)
    v = x.numpy()
    assert (np.abs(v - [0.0, 10.0, 20.0]) <= 1.0).all()
    # column 2 is N(20, 0.1) inside [19, 21]: untruncated in practice
    assert abs(v[:, 2].mean() - 20.0) < 0.01 and abs(v[:, 2].std() - 0.1) < 0.01
    # column 1 is N(10, 2) cut to [9, 11]: nearly uniform, variance near 1/3
    assert abs(v[:, 1].var() - 0.31) < 0.03


def test_depends_only_on_the_seed():
    a = f([5], seed=[1, 2]).numpy()
    tf.random.set_seed(3)
    np.testing.assert_array_equal(a, f([5], seed=tf.constant([1, 2], tf.int64)).numpy())
    assert not np.array_equal(a, f([5], seed=[1, 3]).numpy())


def test_errors_as_tf():
    err = tf.errors.InvalidArgumentError
    for kw in [dict(minvals=1.0, maxvals=1.0), dict(minvals=2.0, maxvals=1.0),
               dict(stddevs=-1.0), dict(stddevs=0.0),
               dict(minvals=-np.inf, maxvals=np.inf)]:  # fmt: skip
        with pytest.raises(err, match="Invalid parameters"):
            f([2], seed=[1, 2], **kw)
    for means, shape in [([1.0, 2.0, 3.0], [2]), ([1.0], [2]), ([1.0, 2.0], [2, 1])]:
        with pytest.raises(err, match="must end with broadcasted shape"):
            f(shape, seed=[1, 2], means=means)
    assert f([3, 2], seed=[1, 2], means=[1.0, 2.0]).shape == (3, 2)
    assert f([2, 1], seed=[1, 2], means=[[1.0], [2.0]]).shape == (2, 1)
    with pytest.raises(err, match="share one dtype"):
        f([2], seed=[1, 2], means=tf.constant(0.0, tf.float64))  # float32 stddevs etc.
    with pytest.raises(err, match="int32"):
        f([2], seed=[1, 2], means=0, stddevs=1, minvals=-1, maxvals=1)
    with pytest.raises(err, match=r"seed must have shape \[2\], not \[3\]"):
        f([2], seed=[1, 2, 3])
