"""meshgrid, repeat, roll and sequence_mask against NumPy, with numerical gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(3)
A = rng.standard_normal((3, 4))


def test_meshgrid_xy_and_ij():
    x, y, z = rng.standard_normal(2), rng.standard_normal(3), rng.standard_normal(4)
    for indexing in ("xy", "ij"):
        check_op(lambda *t, i=indexing: tf.meshgrid(*t, indexing=i), [x, y, z],
                 lambda *a, i=indexing: np.meshgrid(*a, indexing=i), grad=False)  # fmt: skip
        for k in range(3):
            check_op(lambda *t, i=indexing, k=k: tf.meshgrid(*t, indexing=i)[k], [x, y, z],
                     lambda *a, i=indexing, k=k: np.meshgrid(*a, indexing=i)[k])  # fmt: skip
    with pytest.raises(ValueError, match="'xy' or 'ij'"):
        tf.meshgrid(x, y, indexing="xz")


def test_repeat_counts_per_element_and_flattened():
    check_op(lambda t: tf.repeat(t, [2, 0, 1], axis=0), [A],
             lambda a: np.repeat(a, [2, 0, 1], axis=0))  # fmt: skip
    check_op(lambda t: tf.repeat(t, 2, axis=-1), [A], lambda a: np.repeat(a, 2, axis=-1))
    check_op(lambda t: tf.repeat(t, 3), [A], lambda a: np.repeat(a, 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="one entry per element"):
        tf.repeat(A, [1, 2], axis=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.repeat(A, -1, axis=0)


def test_roll_one_and_several_axes():
    check_op(lambda t: tf.roll(t, 1, 0), [A], lambda a: np.roll(a, 1, 0))
    check_op(lambda t: tf.roll(t, [-1, 5], [0, 1]), [A], lambda a: np.roll(a, (-1, 5), (0, 1)))
    check_op(lambda t: tf.roll(t, [1, 2], [1, 1]), [A], lambda a: np.roll(a, 3, 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of entries"):
        tf.roll(A, [1, 2], 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2 is out of range"):
        tf.roll(A, 1, 2)


def test_sequence_mask():
    lengths = np.array([[1, 3], [0, 2]])
    got = tf.sequence_mask(lengths, 4)
    assert got.dtype == tf.bool and got.shape == [2, 2, 4]
    np.testing.assert_array_equal(got.numpy(), np.arange(4) < lengths[..., None])
    got = tf.sequence_mask([1, 3, 2], dtype=tf.float32)
    assert got.dtype == tf.float32
    np.testing.assert_array_equal(got.numpy(), [[1, 0, 0], [1, 1, 1], [1, 1, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="maxlen must be >= 0"):
        tf.sequence_mask([1], -1)
    with pytest.raises(TypeError, match="integers"):
        tf.sequence_mask([1.5])
