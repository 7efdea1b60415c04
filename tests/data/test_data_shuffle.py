"""Dataset.shuffle: TF's buffer semantics and seeding rules, on both the fast and generic paths."""

import numpy as np
import pytest

import layerflow as tf


def _order(ds):
    return [int(x) for x in ds]


def _generic(ds):
    return ds.map(lambda x: x)


@pytest.mark.parametrize("buffer_size", [1, 2, 7, 50, 1000])
def test_shuffle_is_a_permutation(buffer_size):
    order = _order(tf.data.Dataset.range(50).shuffle(buffer_size, seed=4))
    assert sorted(order) == list(range(50))


def test_buffer_of_one_keeps_the_order():
    assert _order(tf.data.Dataset.range(20).shuffle(1, seed=9)) == list(range(20))


@pytest.mark.parametrize("buffer_size", [2, 5])
def test_an_element_leaves_the_buffer_no_earlier_than_it_can_enter_it(buffer_size):
    # With a buffer of k, output position i can only hold an input element below i + k.
    firsts = set()
    for seed in range(60):
        order = _order(tf.data.Dataset.range(30).shuffle(buffer_size, seed=seed))
        assert all(x < i + buffer_size for i, x in enumerate(order)), order
        firsts.add(order[0])
    assert firsts == set(range(buffer_size))  # the first output is any of the first k


def test_a_full_buffer_shuffle_is_uniform():
    counts = np.zeros((5, 5))
    for seed in range(2000):
        for pos, x in enumerate(_order(tf.data.Dataset.range(5).shuffle(5, seed=seed))):
            counts[x, pos] += 1
    assert counts.min() > 330 and counts.max() < 470  # expected 400 each


@pytest.mark.parametrize("buffer_size", [3, 40, 500])
def test_fast_and_generic_paths_give_the_same_order(buffer_size):
    fast = tf.data.Dataset.range(100).shuffle(buffer_size, seed=11)
    slow = _generic(tf.data.Dataset.range(100)).shuffle(buffer_size, seed=11)
    assert _order(fast) == _order(slow)
    assert _order(fast) == _order(slow)  # the second pass too


def test_same_op_seed_same_order_across_datasets():
    a = _order(tf.data.Dataset.range(40).shuffle(40, seed=5))
    b = _order(tf.data.Dataset.range(40).shuffle(40, seed=5))
    c = _order(tf.data.Dataset.range(40).shuffle(40, seed=6))
    assert a == b and a != c


def test_reshuffle_each_iteration():
    ds = tf.data.Dataset.range(40).shuffle(40, seed=1)
    first, second = _order(ds), _order(ds)
    assert first != second and sorted(first) == sorted(second)
    fixed = tf.data.Dataset.range(40).shuffle(40, seed=1, reshuffle_each_iteration=False)
    assert _order(fixed) == _order(fixed)


def test_repeat_after_shuffle_reshuffles_each_pass():
    order = _order(tf.data.Dataset.range(30).shuffle(30, seed=2).repeat(2))
    assert sorted(order[:30]) == sorted(order[30:]) == list(range(30))
    assert order[:30] != order[30:]


def test_global_seed_makes_unseeded_shuffles_reproducible():
    try:
        tf.random.set_seed(123)
        a = [_order(tf.data.Dataset.range(40).shuffle(40)) for _ in range(2)]
        tf.random.set_seed(123)
        b = [_order(tf.data.Dataset.range(40).shuffle(40)) for _ in range(2)]
    finally:
        tf.random.set_seed(None)
    assert a == b
    assert a[0] != a[1]  # two shuffle ops after one set_seed draw different op seeds


def test_unseeded_shuffles_differ():
    orders = {tuple(_order(tf.data.Dataset.range(40).shuffle(40))) for _ in range(3)}
    assert len(orders) == 3


def test_shuffle_of_batches_moves_whole_batches():
    ds = tf.data.Dataset.range(12).batch(4).shuffle(3, seed=0)
    batches = sorted(b.tolist() for b in ds.as_numpy_iterator())
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_shuffle_then_batch_gathers_the_shuffled_rows():
    x = np.arange(20) * 10
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(20))).shuffle(20, seed=8).batch(6)
    seen = []
    for values, index in ds.as_numpy_iterator():
        np.testing.assert_array_equal(values, x[index])
        seen.extend(index.tolist())
    assert sorted(seen) == list(range(20)) and seen != list(range(20))


def test_shuffle_validates_buffer_size():
    with pytest.raises(tf.errors.InvalidArgumentError, match="buffer_size"):
        tf.data.Dataset.range(3).shuffle(0)
