"""`tf.keras.preprocessing.sequence` against real tf_keras outputs."""

import json
import random

import numpy as np
import pytest

import layerflow as tf

sequence = tf.keras.preprocessing.sequence


def test_pad_sequences_is_keras_utils_one():
    assert sequence.pad_sequences is tf.keras.utils.pad_sequences
    assert sequence.pad_sequences([[1, 2], [3]]).tolist() == [[1, 2], [0, 3]]


@pytest.mark.parametrize("name", ["basic", "rate_stride", "bounds_rev"])
def test_timeseries_generator_matches_tf_keras(ref, name):
    r = ref["timeseries"][name]
    data = np.arange(50).reshape(25, 2).astype("float32")
    g = sequence.TimeseriesGenerator(data, np.arange(25) * 10, **r["kwargs"])
    assert isinstance(g, tf.keras.utils.Sequence)
    assert len(g) == r["len"]
    for i, (x, y) in enumerate(r["batches"]):
        gx, gy = g[i]
        np.testing.assert_array_equal(gx, x)
        np.testing.assert_array_equal(gy, y)
    assert json.loads(g.to_json()) == json.loads(r["json"])


def test_timeseries_generator_errors_and_shuffle():
    with pytest.raises(ValueError, match="same length"):
        sequence.TimeseriesGenerator(np.zeros(5), np.zeros(4), length=2)
    with pytest.raises(ValueError, match="end_index"):
        sequence.TimeseriesGenerator(np.zeros(5), np.zeros(5), length=5)
    with pytest.raises(ValueError, match="length"):
        sequence.TimeseriesGenerator(np.zeros(5), np.zeros(5), length=0)
    g = sequence.TimeseriesGenerator(np.arange(20), np.arange(20), length=3, batch_size=4)
    with pytest.raises(IndexError):
        g[len(g)]
    np.random.seed(1)
    g = sequence.TimeseriesGenerator(np.arange(20), np.arange(20), 3, shuffle=True, batch_size=6)
    x, y = g[0]
    np.testing.assert_array_equal(x[:, -1] + 1, y)  # each window ends just before its target


def test_make_sampling_table_matches_tf_keras(ref):
    np.testing.assert_allclose(sequence.make_sampling_table(12, 1e-2), ref["sampling_table"])


def test_skipgrams_match_tf_keras(ref):
    random.seed(3)
    c, lab = sequence.skipgrams([1, 2, 0, 3, 4, 2], 6, window_size=2, seed=7)
    random.seed(3)
    c2, lab2 = sequence.skipgrams(
        [1, 2, 3, 4], 5, window_size=1, negative_samples=0.5, categorical=True, shuffle=False
    )
    random.seed(5)
    st = sequence.make_sampling_table(8, sampling_factor=0.3)
    c3, lab3 = sequence.skipgrams(
        [1, 2, 3, 4, 5, 6, 7], 8, window_size=1, sampling_table=st, seed=1
    )
    assert [[c, lab], [c2, lab2], [c3, lab3]] == ref["skipgrams"]
