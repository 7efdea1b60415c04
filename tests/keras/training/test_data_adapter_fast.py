"""`fit`'s batches from host arrays: one gather per array packed by a builder made once, the
same batches (values, dtypes, structure, order) as the general per-structure path."""

from __future__ import annotations

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.training import data_adapter as da
from layerflow._src.utils import nest


def _general(data: da.ArrayData) -> da.ArrayData:
    data._fast = None  # the general path: nest.map_structure over the arrays
    return data


def _epochs(make, n_epochs=2):
    fast, slow = make(), _general(make())
    assert fast._fast is not None
    for _ in range(n_epochs):
        a, b = list(fast.epoch()), list(slow.epoch())
        assert len(a) == len(b) == fast.steps
        for x, y in zip(a, b):
            assert nest.map_structure(lambda _: 0, x) == nest.map_structure(lambda _: 0, y)
            for u, v in zip(nest.flatten(x), nest.flatten(y)):
                assert type(u) is type(v) is tf.Tensor
                assert u.dtype == v.dtype and u.shape == v.shape
                np.testing.assert_array_equal(u.numpy(), v.numpy())


rng = np.random.default_rng(0)
X = rng.random((37, 4, 3), dtype=np.float32)
Y = rng.integers(0, 5, 37)
W = rng.random(37).astype(np.float32)


@pytest.mark.parametrize("shuffle", [False, True, "batch"])
def test_xy_batches_match_general_path(shuffle):
    tf.random.set_seed(3)  # both adapters draw the same permutations
    _epochs(lambda: da.ArrayData(X, Y, None, batch_size=8, shuffle=shuffle, steps=None))


@pytest.mark.parametrize(
    "x, y, sw",
    [
        (X, None, None),
        (X, Y, W),
        ((X, X[:, 0]), Y, None),
        ({"a": X, "b": Y.astype(np.float32)}, (Y, W), None),
        (X, {"out": Y}, W),
        (tf.constant(X), tf.constant(Y), None),  # tensors: their arrays are the sources
    ],
)
def test_structures_match_general_path(x, y, sw):
    tf.random.set_seed(5)
    _epochs(lambda: da.ArrayData(x, y, sw, batch_size=10, shuffle=True))


def test_class_weight_and_wrapping_steps_match_general_path():
    tf.random.set_seed(7)
    _epochs(lambda: da.ArrayData(X, Y, None, batch_size=16, shuffle=True, steps=5,
                                 class_weight={0: 2.0, 3: 0.5}))  # fmt: skip


def test_slices_stay_views_and_gathers_copy():
    data = da.ArrayData(X, Y, batch_size=8)
    x, _ = next(data.epoch())
    assert np.shares_memory(x._data, X)  # unshuffled: a slice of the source, as before
    data = da.ArrayData(X, Y, batch_size=8, shuffle=True)
    x, _ = next(data.epoch())
    assert not np.shares_memory(x._data, X)


def test_fast_path_only_for_host_number_arrays():
    assert da.ArrayData(np.array(["a", "b"]), np.ones(2), batch_size=1)._fast is None
    ragged = tf.ragged.constant([[1, 2], [3]])
    assert da.ArrayData(ragged, np.ones(2), batch_size=1)._fast is None
    assert da.ArrayData(X, Y, batch_size=4)._fast is not None


def test_fit_results_match_general_path(monkeypatch):
    def run(general):
        if general:
            monkeypatch.setattr(da.ArrayData, "_batch", _general_batch)
        tf.keras.utils.set_random_seed(11)
        model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
        model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])  # fmt: skip
        h = model.fit(X.reshape(37, 12), Y % 3, batch_size=8, epochs=2, verbose=0)
        return h.history, [w.numpy() for w in model.weights]

    fast = run(False)
    slow = run(True)
    assert fast[0] == slow[0]
    for a, b in zip(fast[1], slow[1]):
        np.testing.assert_array_equal(a, b)


_original_batch = da.ArrayData._batch


def _general_batch(self, idx):
    self._fast = None
    return _original_batch(self, idx)
