"""tf.keras.callbacks.experimental.UpdateEmbeddingCallback: a TimedThread callback that updates a
DynamicEmbedding layer and resets its optimizer state; the thread never outlives its `with`
block and never leaves `fit` waiting."""

import threading
import time

import numpy as np
import pytest

import layerflow as tf

X = tf.keras.layers.experimental
Callback = tf.keras.callbacks.experimental.UpdateEmbeddingCallback
TRAIN = tf.constant(
    [["a", "j", "c", "d", "e"], ["a", "h", "i", "j", "b"], ["i", "h", "c", "j", "e"]]
)
LABELS = np.array([0, 1, 2])


def _model():
    layer = X.DynamicEmbedding(
        input_dim=5, output_dim=2, input_length=5, initial_vocabulary=["a", "b", "c", "d", "e"]
    )
    model = tf.keras.Sequential(
        [layer, tf.keras.layers.Flatten(), tf.keras.layers.Dense(3, activation="softmax")]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model, layer


def test_the_tf_keras_example_trains_and_updates_the_vocabulary():
    model, layer = _model()
    cb = Callback(model.layers[0], interval=0.01)

    def vocabulary():
        return {v.decode() for v in layer.get_vocabulary().numpy()}

    with cb:
        assert cb.is_alive()
        history = model.fit(TRAIN, LABELS, epochs=20, batch_size=1, callbacks=[cb], verbose=0)
        # The thread updates every 0.01 s; on a loaded machine fit may end before its first
        # update, so give it (boundedly) the time to run once.
        deadline = time.monotonic() + 20
        while "j" not in vocabulary() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert not cb.is_alive()
    assert np.isfinite(history.history["loss"]).all()
    # "j" is in every row, so it is counted at every step and is the most frequent key.
    assert "j" in vocabulary()


def test_on_interval_resets_the_layers_optimizer_slots():
    model, layer = _model()
    model.fit(TRAIN, LABELS, epochs=2, batch_size=1, verbose=0)
    emb = layer.embedding_layer.embeddings
    slots = [v for v in model.optimizer.variables() if v.name.endswith("/" + emb.name)]
    assert len(slots) == 2 and all(np.abs(s.numpy()).sum() > 0 for s in slots)
    dense = [v for v in model.optimizer.variables() if "dense" in v.name]
    cb = Callback(layer, interval=60)
    cb.set_model(model)
    cb.on_interval()
    assert all(np.abs(s.numpy()).sum() == 0 for s in slots)
    assert all(np.abs(v.numpy()).sum() > 0 for v in dense)  # other slots kept
    top = layer.dynamic_lookup_layer.get_top_vocabulary(5).numpy().tolist()
    assert layer.get_vocabulary().numpy().tolist() == top


def test_thread_stops_when_the_with_block_raises():
    _, layer = _model()
    cb = Callback(layer, interval=0.01)
    with pytest.raises(KeyError):
        with cb:
            raise KeyError("boom")
    assert not cb.is_alive() and cb.thread is not None


def test_no_model_yet_only_logs_and_keeps_running(caplog):
    _, layer = _model()
    cb = Callback(layer, interval=0.005)
    with caplog.at_level("INFO", logger="layerflow"):
        layer(TRAIN)  # built, but the callback has no model: AttributeError, as in tf_keras
        with cb:
            time.sleep(0.05)
            assert cb.is_alive()
    assert "too small" in caplog.text


class _Broken(X.DynamicEmbedding):
    def update_embeddings(self, strategy=None):
        raise ValueError("update failed")


def test_an_update_error_stops_the_thread_and_fails_fit():
    layer = _Broken(input_dim=5, output_dim=2, initial_vocabulary=["a", "b", "c", "d", "e"])
    model = tf.keras.Sequential([layer, tf.keras.layers.Flatten(), tf.keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    cb = Callback(layer, interval=0.0)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="update failed") as info:
        with cb:
            cb.thread.join(5)  # the failing update stops its own thread
            assert not cb.is_alive()
            model.fit(TRAIN, LABELS, epochs=5, batch_size=1, callbacks=[cb], verbose=0)
    assert isinstance(info.value.__cause__, ValueError)
    assert time.monotonic() - started < 30 and not cb.is_alive()


def test_fit_is_never_left_waiting_by_continuous_updates():
    model, layer = _model()
    cb = Callback(layer, interval=0.0)  # updates back to back while fit runs
    done = threading.Event()
    with cb:
        model.fit(TRAIN, LABELS, epochs=3, batch_size=1, callbacks=[cb], verbose=0)
        done.set()
    assert done.is_set() and not cb.is_alive()
    assert threading.active_count() < 50


def test_errors_and_facade():
    with pytest.raises(TypeError, match="DynamicEmbedding"):
        Callback(tf.keras.layers.Dense(2), interval=1)
    with pytest.raises(ValueError, match="non-negative"):
        Callback(_model()[1], interval=-1)
    assert issubclass(Callback, tf.keras.callbacks.Callback)
    assert issubclass(Callback, tf.keras.utils.TimedThread)
