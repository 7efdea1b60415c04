"""Compiled fit on batches holding a RaggedTensor: the steps run eagerly (a trace would hold
each batch's values as constants and trace again for every batch), with one warning, and give
eager fit's results."""

import logging

import numpy as np

import layerflow as tf

RNG = np.random.default_rng(5)
ROWS = [list(RNG.integers(1, 10, RNG.integers(1, 6))) for _ in range(40)]
Y = RNG.standard_normal(40).astype(np.float32)


def _fit(eager):
    tf.keras.utils.set_random_seed(0)
    inp = tf.keras.Input(shape=(None,), ragged=True, dtype="int32")
    h = tf.keras.layers.LSTM(3)(tf.keras.layers.Embedding(10, 4)(inp))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(h))
    model.compile("adam", "mse", run_eagerly=eager)
    x = tf.ragged.constant(ROWS, dtype=tf.int32)
    hist = model.fit(x, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    return model, hist.history["loss"]


def test_compiled_fit_on_ragged_batches_runs_the_steps_eagerly_once_warned(caplog):
    eager_model, eager_loss = _fit(True)
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        model, loss = _fit(False)
    notes = [r.getMessage() for r in caplog.records if "RaggedTensor" in r.getMessage()]
    assert len(notes) == 1, notes
    assert not any("retracing" in r.getMessage() for r in caplog.records)
    assert model.train_function.function.experimental_get_tracing_count() == 0
    assert loss == eager_loss
    for a, b in zip(model.get_weights(), eager_model.get_weights()):
        np.testing.assert_array_equal(a, b)
