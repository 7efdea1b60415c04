"""tf.image flips, transpose, rot90, random flips and random crops against NumPy."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(3)
IMG = rng.standard_normal((3, 4, 2))
BATCH = rng.standard_normal((5, 3, 4, 2))


@pytest.mark.parametrize("x", [IMG, BATCH], ids=["3d", "4d"])
def test_flips_and_transpose_match_numpy_with_gradients(x):
    h = x.ndim - 3
    check_op(tf.image.flip_left_right, [x], lambda a: np.flip(a, h + 1))
    check_op(tf.image.flip_up_down, [x], lambda a: np.flip(a, h))
    check_op(tf.image.transpose, [x], lambda a: np.swapaxes(a, h, h + 1))


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("x", [IMG, BATCH], ids=["3d", "4d"])
def test_rot90_matches_numpy_for_every_k(x, k):
    h = x.ndim - 3
    check_op(lambda t: tf.image.rot90(t, k), [x], lambda a: np.rot90(a, k, axes=(h, h + 1)))
    got = tf.image.rot90(x.astype(np.float32), tf.constant(k))
    np.testing.assert_array_equal(got.numpy(), np.rot90(x.astype(np.float32), k, (h, h + 1)))


def test_rank_and_empty_errors_as_tf():
    for fn in (tf.image.flip_left_right, tf.image.flip_up_down, tf.image.transpose,
               tf.image.rot90, tf.image.random_flip_left_right):  # fmt: skip
        with pytest.raises(ValueError, match="must be at least three-dimensional"):
            fn(np.zeros((2, 3)))
        with pytest.raises(ValueError, match="must have either 3 or 4 dimensions"):
            fn(np.zeros((1, 2, 2, 2, 3)))
        with pytest.raises(ValueError, match="inner 3 dims of 'image.shape' must be > 0"):
            fn(np.zeros((2, 0, 3)))
    with pytest.raises(TypeError, match="k must be a scalar integer"):
        tf.image.rot90(IMG, 1.5)


def _flipped_or_not(out, x, axis):
    if np.array_equal(out, x):
        return False
    np.testing.assert_array_equal(out, np.flip(x, axis))
    return True


def test_random_flips_flip_each_image_of_a_batch_independently():
    x = np.arange(64 * 2 * 3, dtype=np.float32).reshape(64, 2, 3, 1)
    tf.random.set_seed(4)
    out = tf.image.random_flip_left_right(x).numpy()
    flipped = [_flipped_or_not(o, i, 1) for o, i in zip(out, x)]
    assert 16 < sum(flipped) < 48  # about half, and never all or none
    out = tf.image.random_flip_up_down(x).numpy()
    flipped = [_flipped_or_not(o, i, 0) for o, i in zip(out, x)]
    assert 16 < sum(flipped) < 48
    single = [_flipped_or_not(tf.image.random_flip_left_right(x[0]).numpy(), x[0], 1)
              for _ in range(40)]  # fmt: skip
    assert 5 < sum(single) < 35


def test_random_flip_seeds_and_gradient():
    x = np.arange(32 * 4, dtype=np.float32).reshape(32, 2, 2, 1)
    tf.random.set_seed(1)
    a = tf.image.random_flip_left_right(x, seed=3)
    tf.random.set_seed(1)
    b = tf.image.random_flip_left_right(x, seed=3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = tf.image.random_flip_up_down(t)
        loss = tf.reduce_sum(y * y)
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), 2 * x)


def test_stateless_random_flips_depend_only_on_the_seed():
    x = np.arange(32 * 4, dtype=np.float32).reshape(32, 2, 2, 1)
    for fn in (tf.image.stateless_random_flip_left_right, tf.image.stateless_random_flip_up_down):
        a = fn(x, seed=[1, 2]).numpy()
        tf.random.set_seed(99)
        np.testing.assert_array_equal(a, fn(x, seed=(1, 2)).numpy())
        assert not np.array_equal(a, fn(x, seed=[3, 4]).numpy())
        assert not np.array_equal(a, x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="seed must have shape \\[2\\]"):
        tf.image.stateless_random_flip_left_right(x, seed=[1])


def test_random_flip_inside_tf_function_draws_per_call():
    x = np.arange(16 * 2, dtype=np.float32).reshape(16, 1, 2, 1)
    f = tf.function(lambda t: tf.image.random_flip_left_right(t))
    outs = {f(tf.constant(x)).numpy().tobytes() for _ in range(6)}
    assert len(outs) > 1


def _find_crop(value, crop):
    hits = []
    for off in np.ndindex(*(np.array(value.shape) - np.array(crop.shape) + 1)):
        window = value[tuple(slice(o, o + s) for o, s in zip(off, crop.shape))]
        if np.array_equal(window, crop):
            hits.append(off)
    assert len(hits) == 1
    return hits[0]


def test_random_crop_is_a_window_and_covers_every_offset():
    value = np.arange(5 * 6 * 3).reshape(5, 6, 3)
    tf.random.set_seed(7)
    offsets = {_find_crop(value, tf.image.random_crop(value, [3, 4, 3]).numpy())
               for _ in range(120)}  # fmt: skip
    assert offsets == {(y, x, 0) for y in range(3) for x in range(3)}
    assert tf.image.random_crop(value, (5, 6, 3)).numpy().tolist() == value.tolist()
    t = tf.constant(value.astype(np.float64))
    with tf.GradientTape() as tape:
        tape.watch(t)
        loss = tf.reduce_sum(tf.image.random_crop(t, [2, 2, 3], seed=1))
    g = tape.gradient(loss, t).numpy()
    assert g.sum() == 12 and set(np.unique(g)) == {0.0, 1.0}


def test_random_crop_errors_and_stateless():
    value = np.zeros((2, 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        tf.image.random_crop(value, [3, 3])
    with pytest.raises(ValueError, match="one per dimension"):
        tf.image.random_crop(value, [1])
    v = np.arange(100).reshape(10, 10)
    a = tf.image.stateless_random_crop(v, [3, 3], seed=[5, 6]).numpy()
    tf.random.set_seed(123)
    np.testing.assert_array_equal(a, tf.image.stateless_random_crop(v, [3, 3], seed=[5, 6]))
    crops = {tf.image.stateless_random_crop(v, [3, 3], seed=[s, 0]).numpy().tobytes()
             for s in range(12)}  # fmt: skip
    assert len(crops) > 3


def test_random_crop_runs_inside_tf_function():
    value = tf.constant(np.arange(36.0).reshape(6, 6))
    f = tf.function(lambda t: tf.image.random_crop(t, [2, 3]))
    outs = {f(value).numpy().tobytes() for _ in range(8)}
    assert len(outs) > 1
    for o in outs:
        _find_crop(value.numpy(), np.frombuffer(o).reshape(2, 3))
