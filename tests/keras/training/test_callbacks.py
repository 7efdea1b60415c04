"""Callbacks driven by fit: early stopping, schedules, CSV, NaN guard, checkpoints."""

import csv

import numpy as np
import pytest

import layerflow as tf

CB = tf.keras.callbacks
RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 3)).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def _model(lr=0.05):
    m = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    m.compile(optimizer=tf.keras.optimizers.SGD(lr), loss="mse")
    return m


def test_callback_hooks_order_and_stop_training():
    events = []

    class Rec(CB.Callback):
        def on_train_begin(self, logs=None):
            events.append("train_begin")

        def on_epoch_begin(self, epoch, logs=None):
            events.append(f"epoch_begin {epoch}")

        def on_train_batch_end(self, batch, logs=None):
            events.append(f"batch {batch} {sorted(logs)}")

        def on_epoch_end(self, epoch, logs=None):
            events.append(f"epoch_end {epoch}")
            if epoch == 1:
                self.model.stop_training = True

        def on_train_end(self, logs=None):
            events.append("train_end")

    _model().fit(X, Y, batch_size=32, epochs=5, verbose=0, callbacks=[Rec()])
    assert events == ["train_begin", "epoch_begin 0", "batch 0 ['loss']", "batch 1 ['loss']",
                      "epoch_end 0", "epoch_begin 1", "batch 0 ['loss']", "batch 1 ['loss']",
                      "epoch_end 1", "train_end"]  # fmt: skip


def test_early_stopping_restores_best_weights():
    m = _model(lr=0.05)
    # A loss that gets worse after epoch 1: a learning rate that explodes.
    sched = CB.LearningRateScheduler(lambda epoch, lr: 0.05 if epoch < 2 else 5.0)
    stop = CB.EarlyStopping(monitor="loss", patience=1, restore_best_weights=True)
    best = []

    class Keep(CB.Callback):
        def on_epoch_end(self, epoch, logs=None):
            best.append((logs["loss"], self.model.get_weights()))

    h = m.fit(X, Y, batch_size=64, epochs=20, verbose=0, callbacks=[sched, Keep(), stop])
    assert len(h.history["loss"]) < 20 and stop.stopped_epoch > 0
    loss_best, w_best = min(best, key=lambda t: t[0])
    for a, b in zip(m.get_weights(), w_best):
        np.testing.assert_array_equal(a, b)


def test_learning_rate_scheduler_and_reduce_on_plateau():
    m = _model()
    h = m.fit(X, Y, epochs=3, verbose=0,
              callbacks=[CB.LearningRateScheduler(lambda e: 0.1 / (e + 1))])  # fmt: skip
    assert h.history["lr"] == pytest.approx([0.1, 0.05, 0.1 / 3])
    m2 = _model(lr=0.0)  # no progress at all: a plateau
    rl = CB.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_lr=0.0)
    m2.optimizer.learning_rate = 0.4
    m2.optimizer._learning_rate.assign(0.0)  # keep the loss flat
    m2.fit(X, Y, epochs=3, verbose=0, callbacks=[rl])
    assert float(m2.optimizer.learning_rate) == 0.0
    m3 = _model(lr=1e-9)
    m3.fit(X, Y, epochs=4, verbose=0, callbacks=[CB.ReduceLROnPlateau("loss", 0.5, patience=1)])
    assert float(m3.optimizer.learning_rate) < 1e-9


def test_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    _model().fit(X, Y, epochs=3, verbose=0, callbacks=[CB.CSVLogger(str(path))])
    rows = list(csv.DictReader(path.read_text().splitlines()))
    assert [r["epoch"] for r in rows] == ["0", "1", "2"] and "loss" in rows[0]
    _model().fit(X, Y, epochs=2, verbose=0, callbacks=[CB.CSVLogger(str(path), append=True)])
    assert len(list(csv.DictReader(path.read_text().splitlines()))) == 5


def test_terminate_on_nan(capsys):
    m = _model(lr=1e30)
    y = Y * 1e20
    # NumPy's overflow warnings are not TF behaviour (reported to OPS); silence them here.
    with np.errstate(over="ignore", invalid="ignore"):
        h = m.fit(X, y, batch_size=8, epochs=5, verbose=0, callbacks=[CB.TerminateOnNaN()])
    assert len(h.history["loss"]) == 1
    assert "Invalid loss" in capsys.readouterr().err


def test_model_checkpoint_best_weights(tmp_path):
    m = _model()
    path = tmp_path / "w-{epoch:02d}.weights.h5"
    ck = CB.ModelCheckpoint(str(path), monitor="loss", save_best_only=True, save_weights_only=True)
    m.fit(X, Y, epochs=3, verbose=0, callbacks=[ck])
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files[0] == "w-01.weights.h5" and len(files) >= 2
    fresh = _model()
    fresh(X[:1])
    fresh.load_weights(str(tmp_path / files[-1]))
    np.testing.assert_allclose(fresh.get_weights()[0], m.get_weights()[0])


def test_history_plot_and_lambda_callback(tmp_path):
    seen = []
    cb = CB.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    h = _model().fit(X, Y, epochs=2, verbose=0, callbacks=[cb])
    assert seen == [0, 1]
    pytest.importorskip("matplotlib")
    out = tmp_path / "curves.png"
    h.plot(str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _val_model():
    inputs = tf.keras.Input((3,))
    out = tf.keras.layers.Dense(1, name="out")(tf.keras.layers.Dense(4, name="h")(inputs))
    m = tf.keras.Model(inputs, out)
    m.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    return m


@pytest.mark.parametrize("suffix", [".safetensors", ".weights.h5"])
def test_model_checkpoint_weights_only_files_load_back(tmp_path, suffix):
    if suffix.endswith(".h5"):
        pytest.importorskip("h5py")
    m = _val_model()
    path = tmp_path / f"ck-{{epoch:02d}}{suffix}"
    ck = CB.ModelCheckpoint(str(path), save_weights_only=True)
    m.fit(X, Y, batch_size=16, epochs=2, verbose=0, callbacks=[ck])
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"ck-01{suffix}", f"ck-02{suffix}"]
    fresh = _val_model()
    fresh.load_weights(str(tmp_path / f"ck-02{suffix}"))
    np.testing.assert_array_equal(fresh.predict(X, verbose=0), m.predict(X, verbose=0))
    fresh.load_weights(str(tmp_path / f"ck-01{suffix}"))  # an earlier epoch: other weights
    assert not np.array_equal(fresh.predict(X, verbose=0), m.predict(X, verbose=0))


def test_model_checkpoint_whole_model_best_on_val_loss(tmp_path):
    m = _val_model()
    path = tmp_path / "best.keras"
    ck = CB.ModelCheckpoint(str(path), monitor="val_loss", save_best_only=True)
    snapshots = []

    class Snap(CB.Callback):  # runs after the checkpoint: what the model was at each epoch end
        def on_epoch_end(self, epoch, logs=None):
            snapshots.append((logs["val_loss"], self.model.predict(X, verbose=0)))

    # A negative learning rate after epoch 3 climbs the loss: later epochs are worse.
    sched = CB.LearningRateScheduler(lambda epoch, lr: 0.05 if epoch < 3 else -0.05)
    h = m.fit(X[:48], Y[:48], batch_size=16, epochs=6, verbose=0,
              validation_data=(X[48:], Y[48:]), callbacks=[sched, ck, Snap()])  # fmt: skip
    best_epoch = int(np.argmin(h.history["val_loss"]))
    assert best_epoch == 2 and ck.best == pytest.approx(min(h.history["val_loss"]))
    loaded = tf.keras.models.load_model(str(path))
    np.testing.assert_allclose(
        loaded.predict(X, verbose=0), snapshots[best_epoch][1], rtol=1e-6, atol=1e-6
    )
    # The file holds the compiled configuration too: evaluate reproduces the best val_loss.
    assert loaded.evaluate(X[48:], Y[48:], verbose=0) == pytest.approx(
        h.history["val_loss"][best_epoch], rel=1e-5
    )


def test_model_checkpoint_without_the_monitored_value_warns_and_keeps_going(tmp_path, capsys):
    ck = CB.ModelCheckpoint(str(tmp_path / "w.weights.h5"), monitor="val_loss",
                            save_best_only=True, save_weights_only=True)  # fmt: skip
    h = _model().fit(X, Y, epochs=2, verbose=0, callbacks=[ck])  # no validation data
    assert len(h.history["loss"]) == 2 and list(tmp_path.iterdir()) == []
    assert "'val_loss' available" in capsys.readouterr().err


def test_learning_rate_scheduler_changes_the_rate_each_epoch_in_the_step():
    m = _model(lr=0.1)
    m(X[:1])  # built, so the probe can read the weights before the first epoch
    rates, deltas = [], []

    class Probe(CB.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            rates.append(float(self.model.optimizer.learning_rate))
            self.before = self.model.get_weights()[0].copy()

        def on_epoch_end(self, epoch, logs=None):
            deltas.append(np.abs(self.model.get_weights()[0] - self.before).max())

    sched = CB.LearningRateScheduler(lambda epoch, lr: [0.1, 0.0, 0.01][epoch])
    m.fit(X, Y, batch_size=64, epochs=3, shuffle=False, verbose=0, callbacks=[sched, Probe()])
    assert rates == pytest.approx([0.1, 0.0, 0.01])
    # One full-batch SGD step per epoch: lr 0 leaves the weights alone, the others move them.
    assert deltas[0] > 0 and deltas[1] == 0.0 and deltas[2] > 0


def test_early_stopping_on_val_loss_restores_the_best_epoch():
    m = _val_model()
    stop = CB.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    kept = []

    class Keep(CB.Callback):
        def on_epoch_end(self, epoch, logs=None):
            kept.append(self.model.get_weights())

    sched = CB.LearningRateScheduler(lambda epoch, lr: 0.05 if epoch < 3 else -0.05)
    h = m.fit(X[:48], Y[:48], batch_size=16, epochs=30, verbose=0,
              validation_data=(X[48:], Y[48:]), callbacks=[sched, Keep(), stop])  # fmt: skip
    n = len(h.history["val_loss"])
    best = int(np.argmin(h.history["val_loss"]))
    assert best == 2 and n == best + 3  # patience 2 after the best epoch
    assert stop.stopped_epoch == n - 1
    for a, b in zip(m.get_weights(), kept[best]):
        np.testing.assert_array_equal(a, b)
