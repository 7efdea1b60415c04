"""split_dataset and timeseries_dataset_from_array; expected values from tf_keras 2.21."""

import numpy as np
import pytest

import layerflow as tf


def _items(ds):
    return [tuple(int(v) for v in e) if isinstance(e, tuple) else e.tolist()
            for e in ds.as_numpy_iterator()]  # fmt: skip


def test_split_dataset_sizes_and_order():
    left, right = tf.keras.utils.split_dataset(np.arange(10), left_size=0.8)
    assert _items(left) == list(range(8)) and _items(right) == [8, 9]
    left, right = tf.keras.utils.split_dataset(np.arange(10), right_size=3)
    assert _items(left) == list(range(7)) and _items(right) == [7, 8, 9]
    left, right = tf.keras.utils.split_dataset(np.arange(10), left_size=2, right_size=0.3)
    assert _items(left) == [0, 1] and _items(right) == [7, 8, 9]  # the middle is dropped


def test_split_dataset_shuffle_with_seed_matches_keras():
    data = (np.arange(10), np.arange(10) * 2)
    left, right = tf.keras.utils.split_dataset(
        data, left_size=3, right_size=2, shuffle=True, seed=1
    )
    assert _items(left) == [(6, 12), (8, 16), (9, 18)] and _items(right) == [(1, 2), (2, 4)]
    again, _ = tf.keras.utils.split_dataset(data, left_size=3, shuffle=True, seed=1)
    assert _items(again) == _items(left)


def test_split_dataset_of_a_batched_dataset_stays_batched():
    ds = tf.data.Dataset.from_tensor_slices((np.arange(10), np.arange(10.0))).batch(3)
    left, right = tf.keras.utils.split_dataset(ds, right_size=0.3)
    batches = list(left.as_numpy_iterator())
    assert [b[0].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(right.as_numpy_iterator())[0][1].tolist() == [7.0, 8.0, 9.0]
    left, _ = tf.keras.utils.split_dataset(np.eye(4), left_size=1)  # rows of a 2-D array
    assert _items(left) == [[1.0, 0.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    "kwargs, match, error",
    [
        ({}, "At least one", ValueError),
        ({"left_size": 0, "right_size": 0}, "Both", ValueError),
        ({"left_size": 10}, "positive integer smaller than 10", ValueError),
        ({"left_size": 1.5}, "left_size", ValueError),
        ({"left_size": 0.6, "right_size": 0.6}, "greater than 1", ValueError),
        ({"left_size": 6, "right_size": 6}, "should be smaller", ValueError),
        ({"left_size": 0.01}, "will be empty", ValueError),
        ({"left_size": "half"}, "Invalid `left_size` Type", TypeError),
    ],
)
def test_split_dataset_errors(kwargs, match, error):
    with pytest.raises(error, match=match):
        tf.keras.utils.split_dataset(np.arange(10), **kwargs)
    with pytest.raises(TypeError, match="list/tuple of arrays"):
        tf.keras.utils.split_dataset("not data", left_size=1)


def test_timeseries_windows_targets_stride_rate_and_bounds():
    ds = tf.keras.utils.timeseries_dataset_from_array(
        np.arange(20.0), np.arange(20), 3, sequence_stride=2, sampling_rate=2,
        batch_size=None, start_index=2, end_index=15,
    )  # fmt: skip
    got = [(x.numpy().tolist(), int(y)) for x, y in ds]
    assert got == [
        ([2.0, 4.0, 6.0], 2), ([4.0, 6.0, 8.0], 4), ([6.0, 8.0, 10.0], 6),
        ([8.0, 10.0, 12.0], 8), ([10.0, 12.0, 14.0], 10),
    ]  # fmt: skip
    assert next(iter(ds))[0].dtype == tf.float64
    batched = tf.keras.utils.timeseries_dataset_from_array(np.arange(6), None, 3, batch_size=2)
    assert [b.tolist() for b in batched.as_numpy_iterator()] == [
        [[0, 1, 2], [1, 2, 3]], [[2, 3, 4], [3, 4, 5]],
    ]  # fmt: skip


def test_timeseries_targets_shorter_than_data_limit_the_windows():
    ds = tf.keras.utils.timeseries_dataset_from_array(
        np.arange(10).reshape(10, 1), np.arange(3), 2, batch_size=8
    )
    x, y = next(iter(ds))
    assert x.shape == (3, 2, 1) and y.numpy().tolist() == [0, 1, 2]


def test_timeseries_shuffle_is_seeded_and_complete():
    def firsts(seed):
        ds = tf.keras.utils.timeseries_dataset_from_array(
            np.arange(30), np.arange(30) * 10, 4, batch_size=5, shuffle=True, seed=seed
        )
        out = []
        for x, y in ds:
            np.testing.assert_array_equal(y.numpy(), x.numpy()[:, 0] * 10)
            out += x.numpy()[:, 0].tolist()
        return out

    a = firsts(3)
    assert sorted(a) == list(range(27)) and a != list(range(27)) and firsts(3) == a


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sequence_length": 0}, "sequence_length"),
        ({"sampling_rate": -1}, "sampling_rate"),
        ({"sequence_stride": 0}, "sequence_stride"),
        ({"batch_size": 0}, "batch_size"),
        ({"start_index": 12}, "start_index"),
        ({"end_index": 11}, "end_index"),
        ({"start_index": 5, "end_index": 4}, "smaller than `end_index`"),
    ],
)
def test_timeseries_argument_errors(kwargs, match):
    args = {"sequence_length": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        tf.keras.utils.timeseries_dataset_from_array(np.arange(10), None, **args)
