"""Keras fit/predict on SparseTensor inputs (a tf.data dataset of sparse batches, or a
SparseTensor `x` sliced into batches), checked against the same model trained on dense input."""

import logging

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.ops import sparse_ops

keras = tf.keras


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    dense = ((rng.random((20, 6)) < 0.3) * rng.standard_normal((20, 6))).astype(np.float32)
    y = rng.standard_normal((20, 1)).astype(np.float32)
    return dense, y


def make(sparse):
    tf.random.set_seed(7)
    inp = keras.Input(shape=(6,), sparse=sparse)
    hidden = keras.layers.Dense(4, activation="tanh")(inp)
    model = keras.Model(inp, keras.layers.Dense(1)(hidden))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


def no_densify(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the sparse input was densified")

    monkeypatch.setattr(sparse_ops, "to_dense", fail)


def test_fit_on_a_dataset_of_sparse_batches_matches_dense(data, monkeypatch, caplog):
    dense, y = data
    ref = make(False)
    want = ref.fit(dense, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    st = tf.sparse.from_dense(dense)
    ds = tf.data.Dataset.from_tensor_slices((st, y)).batch(8)
    model = make(True)
    no_densify(monkeypatch)
    with caplog.at_level(logging.WARNING):  # sparse batches are not traced once per batch
        got = model.fit(ds, epochs=3, verbose=0).history["loss"]
    assert "retracing" not in caplog.text
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        model.predict(ds, verbose=0), ref.predict(dense, verbose=0), rtol=1e-5, atol=1e-6
    )


def test_fit_on_a_sparse_x_slices_its_rows(data, monkeypatch):
    dense, y = data
    ref = make(False)
    tf.random.set_seed(3)  # the shuffle order
    want = ref.fit(dense, y, batch_size=6, epochs=2, shuffle=True, verbose=0).history["loss"]
    model = make(True)
    st = tf.sparse.from_dense(dense)
    no_densify(monkeypatch)
    tf.random.set_seed(3)
    got = model.fit(st, y, batch_size=6, epochs=2, shuffle=True, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    out = model.predict(st, batch_size=7, verbose=0)
    np.testing.assert_allclose(out, ref.predict(dense, batch_size=7, verbose=0), rtol=1e-5,
                               atol=1e-6)  # fmt: skip
    assert out.shape == (20, 1)


def test_sparse_x_needs_canonical_order(data):
    dense, y = data
    st = tf.sparse.from_dense(dense)
    order = np.arange(int(st.indices.shape[0]))[::-1].copy()
    shuffled = tf.SparseTensor(tf.gather(st.indices, order), tf.gather(st.values, order),
                               st.dense_shape)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of order"):
        make(True).fit(shuffled, y, batch_size=4, verbose=0)


def test_sparse_input_model_round_trips_through_keras_file(data, tmp_path):
    dense, y = data
    model = make(True)
    st = tf.sparse.from_dense(dense)
    model.fit(st, y, batch_size=5, epochs=1, verbose=0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    back = keras.models.load_model(path)
    np.testing.assert_allclose(back.predict(st, verbose=0), model.predict(st, verbose=0),
                               rtol=1e-6)  # fmt: skip


def test_validation_split_of_a_sparse_x(data):
    dense, y = data
    ref = make(False)
    want = ref.fit(dense, y, batch_size=4, validation_split=0.25, shuffle=False, verbose=0)
    got = make(True).fit(
        tf.sparse.from_dense(dense), y, batch_size=4, validation_split=0.25, shuffle=False,
        verbose=0,
    )  # fmt: skip
    np.testing.assert_allclose(got.history["val_loss"], want.history["val_loss"], rtol=1e-5)
    np.testing.assert_allclose(got.history["loss"], want.history["loss"], rtol=1e-5)
