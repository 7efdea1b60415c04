"""compile/fit/evaluate/predict and the single-batch methods on small synthetic data."""

import numpy as np
import pytest

import layerflow as tf

RNG = np.random.default_rng(0)


def _blobs(n=240, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 3
    y = rng.integers(0, k, n)
    x = (centers[y] + rng.standard_normal((n, d)) * 0.5).astype(np.float32)
    return x, y


def _model(k=3):
    return tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(k)])  # fmt: skip


def _compiled(**kw):
    m = _model()
    m.compile(optimizer=tf.keras.optimizers.SGD(0.1),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"], **kw)  # fmt: skip
    return m


def test_fit_learns_and_history_records_every_epoch():
    x, y = _blobs()
    m = _compiled()
    h = m.fit(x, y, batch_size=32, epochs=5, verbose=0)
    assert isinstance(h, tf.keras.callbacks.History) and m.history is h
    assert list(h.history) == ["loss", "accuracy"] and h.epoch == [0, 1, 2, 3, 4]
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert h.history["accuracy"][-1] > 0.9
    assert m.metrics_names == ["loss", "accuracy"]
    loss, acc = m.evaluate(x, y, verbose=0)
    assert acc > 0.9 and loss == pytest.approx(
        m.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    )
    # evaluate agrees with a NumPy computation of the same quantities
    logits = m.predict(x, verbose=0)
    assert isinstance(logits, np.ndarray) and logits.shape == (240, 3)
    np.testing.assert_allclose(acc, (logits.argmax(1) == y).mean(), rtol=1e-6)
    z = logits - logits.max(1, keepdims=True)
    ce = -(z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(240), y].mean()
    np.testing.assert_allclose(loss, ce, rtol=1e-4)


def test_fit_on_dataset_and_on_an_iterable_of_batches():
    x, y = _blobs()
    m = _compiled()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(240, seed=1).batch(32)
    h = m.fit(ds, epochs=3, verbose=0, validation_data=ds)
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(h.history["val_loss"]) == 3
    batches = [(x[i : i + 60], y[i : i + 60]) for i in range(0, 240, 60)]
    m2 = _compiled()
    m2.fit(batches, epochs=2, verbose=0)
    assert m2.evaluate(batches, verbose=0)[1] > 0.5
    with pytest.raises(ValueError, match="`y` must not be given"):
        m.fit(ds, y, verbose=0)


def test_validation_split_uses_the_last_samples():
    x, y = _blobs()
    m = _compiled()
    seen = []

    class Spy(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    h = m.fit(x, y, batch_size=40, epochs=1, verbose=0, validation_split=0.25, callbacks=[Spy()])
    assert seen == [0, 1, 2, 3, 4]  # 180 training samples in batches of 40
    assert "val_accuracy" in h.history
    with pytest.raises(ValueError, match="validation_split"):
        m.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(8), validation_split=0.2)


def test_steps_per_epoch_initial_epoch_and_shuffle_false_is_deterministic():
    x, y = _blobs()
    a, b = _compiled(), _compiled()
    a(x[:1]), b(x[:1])
    b.set_weights(a.get_weights())
    a.fit(x, y, batch_size=24, epochs=2, shuffle=False, verbose=0)
    b.fit(x, y, batch_size=24, epochs=2, shuffle=False, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    h = a.fit(x, y, batch_size=24, epochs=4, initial_epoch=2, steps_per_epoch=3, verbose=0)
    assert h.epoch == [2, 3] and int(a.optimizer.iterations) == 20 + 6


def test_single_batch_methods():
    x, y = _blobs(n=32)
    m = _compiled()
    first = m.train_on_batch(x, y)
    assert isinstance(first, list) and len(first) == 2
    for _ in range(30):
        last = m.train_on_batch(x, y, return_dict=True)
    assert last["loss"] < first[0]
    t = m.test_on_batch(x, y, return_dict=True)
    assert set(t) == {"loss", "accuracy"}
    out = m.predict_on_batch(x)
    np.testing.assert_allclose(out, m(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("run_eagerly", [True, False])
def test_custom_train_step_is_used_by_fit(run_eagerly):
    calls = []

    class Custom(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            calls.append(1)
            return {"my_loss": loss}

    x = RNG.standard_normal((64, 2)).astype(np.float32)
    y = (x @ np.array([[2.0], [-1.0]], np.float32) + 0.5).astype(np.float32)
    m = Custom()
    m.compile(optimizer=tf.keras.optimizers.SGD(0.1), run_eagerly=run_eagerly)
    h = m.fit(x, y, batch_size=16, epochs=20, verbose=0)
    # Compiled (Keras' default) the Python body runs only while tracing: once, and once more
    # because the first trace created the model's variables (as TF retraces then).
    assert len(calls) == (80 if run_eagerly else 2)
    assert h.history["my_loss"][-1] < 1e-3
    np.testing.assert_allclose(m.dense.kernel.numpy().ravel(), [2.0, -1.0], atol=0.02)


def test_string_identifiers_and_regression_metrics():
    x = RNG.standard_normal((64, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    m = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    m.compile(optimizer="adam", loss="mse", metrics=["mae"])
    assert isinstance(m.optimizer, tf.keras.optimizers.Adam)
    h = m.fit(x, y, epochs=2, verbose=0)
    assert set(h.history) == {"loss", "mae"}
    m.compile(optimizer="sgd", loss="mean_squared_error")
    assert m.metrics_names == ["loss"] and isinstance(m.evaluate(x, y, verbose=0), float)


def test_binary_accuracy_is_chosen_for_one_output_unit():
    x = RNG.standard_normal((100, 2)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    m = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid")])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss="binary_crossentropy",
              metrics=["accuracy"])  # fmt: skip
    h = m.fit(x, y, epochs=15, verbose=0)
    pred = m.predict(x, verbose=0)
    np.testing.assert_allclose(h.history["accuracy"][-1] > 0.85, True)
    np.testing.assert_allclose(
        m.evaluate(x, y, verbose=0)[1], ((pred > 0.5) == y).mean(), rtol=1e-6
    )


def test_sample_weight_zero_ignores_samples():
    x = np.ones((8, 1), np.float32)
    y = np.array([[1.0]] * 4 + [[100.0]] * 4, np.float32)
    sw = np.array([1.0] * 4 + [0.0] * 4, np.float32)
    m = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="zeros")])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    m.fit(x, y, sample_weight=sw, batch_size=8, epochs=100, verbose=0)
    np.testing.assert_allclose(m.predict(x, verbose=0), 1.0, atol=1e-3)


def test_errors_are_clear():
    m = _model()
    with pytest.raises(RuntimeError, match="compile"):
        m.fit(np.ones((2, 4)), np.ones(2))
    m = _compiled()
    with pytest.raises(ValueError, match="same number of samples"):
        m.fit(np.ones((4, 4), np.float32), np.ones(3), verbose=0)
    with pytest.raises(ValueError, match="Unknown optimizer"):
        m.compile(optimizer="sgdd", loss="mse")


def test_regularization_losses_are_added():
    x = np.ones((4, 2), np.float32)
    y = np.zeros((4, 1), np.float32)
    reg = tf.keras.regularizers.L2(0.5)
    dense = tf.keras.layers.Dense(1, kernel_initializer="ones", kernel_regularizer=reg)
    m = tf.keras.Sequential([dense])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")
    # mse = (1 + 1)^2 = 4, L2 = 0.5 * (1 + 1) = 1
    assert m.evaluate(x, y, verbose=0) == pytest.approx(5.0)


def test_progress_output_verbose_1_and_2(capsys):
    x, y = _blobs(n=64)
    m = _compiled()
    m.fit(x, y, batch_size=16, epochs=2, verbose=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[2] == "Epoch 2/2" and len(out) == 4
    assert out[1].startswith("4/4 - ") and "loss: " in out[1] and "accuracy: " in out[1]
    m.fit(x, y, batch_size=16, epochs=1, verbose=1)
    out = capsys.readouterr().out.splitlines()
    # Not a terminal: one finished bar line per epoch, no carriage-return updates.
    assert out[0] == "Epoch 1/1" and len(out) == 2 and "\r" not in out[1]
    assert out[1].startswith("4/4 [====") and "/step" in out[1] and "accuracy:" in out[1]


def test_progress_bar_is_live_on_a_terminal():
    import io

    from layerflow._src.keras.training.callbacks import ProgbarLogger

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    x, y = _blobs(n=64)
    m = _compiled()
    bar = ProgbarLogger()
    bar.stream = Terminal()
    m.fit(x, y, batch_size=16, epochs=1, verbose=1, callbacks=[bar])
    text = bar.stream.getvalue()
    assert "\r" in text and "4/4 [" in text and "accuracy:" in text


def test_input_that_runs_out_interrupts_training_with_keras_warning(caplog):
    x, y = _blobs()
    m = _compiled()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(48)  # 5 batches, never repeated
    seen = []

    class Spy(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    with caplog.at_level("WARNING", logger="layerflow"):
        h = m.fit(ds, steps_per_epoch=2, epochs=5, verbose=0, callbacks=[Spy()])
    # 2 + 2 + 1 batches: the third epoch ends early and no epoch restarts the data.
    assert seen == [0, 1, 0, 1, 0] and len(h.history["loss"]) == 3
    assert int(m.optimizer.iterations) == 5
    assert "Your input ran out of data; interrupting training" in caplog.text
    assert "at least `steps_per_epoch * epochs` batches (in this case, 10 batches)" in caplog.text
    # A generator that ends exactly at an epoch boundary: no empty epoch is recorded.
    gen = ((x[i : i + 60], y[i : i + 60]) for i in range(0, 240, 60))
    caplog.clear()
    with caplog.at_level("WARNING", logger="layerflow"):
        h = _compiled().fit(gen, steps_per_epoch=2, epochs=4, verbose=0)
    assert len(h.history["loss"]) == 2 and "ran out of data" in caplog.text
    # A repeated dataset never runs out: no warning.
    caplog.clear()
    with caplog.at_level("WARNING", logger="layerflow"):
        h = _compiled().fit(ds.repeat(), steps_per_epoch=3, epochs=4, verbose=0)
    assert len(h.history["loss"]) == 4 and "ran out" not in caplog.text
