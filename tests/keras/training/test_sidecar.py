"""SidecarEvaluator evaluates the checkpoints a trainer writes (CheckpointManager or
ModelCheckpoint files); SidecarEvaluatorModelExport keeps the best evaluated model."""

from __future__ import annotations

import os

import numpy as np
import pytest

import layerflow as tf


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    return x, x @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def _ds(x, y):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(8)


def _model():
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(4, activation="tanh"), tf.keras.layers.Dense(1)]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    return model


class _Count(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.results = []

    def on_test_end(self, logs=None):
        self.results.append(dict(logs))


def test_evaluates_checkpoint_manager_checkpoints_until_max_evaluations(tmp_path):
    x, y = _data()
    trainer = _model()
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=trainer, optimizer=trainer.optimizer), str(tmp_path), 5
    )
    for _ in range(3):
        trainer.fit(x, y, epochs=1, batch_size=8, verbose=0)
        manager.save()
    expected = trainer.evaluate(x, y, verbose=0, return_dict=True)
    evaluator_model = _model()
    count = _Count()
    sidecar = tf.keras.utils.SidecarEvaluator(
        evaluator_model, _ds(x, y), tmp_path, max_evaluations=3, callbacks=[count], timeout=5
    )
    sidecar.start()
    assert len(count.results) == 1  # the latest (ckpt-3) is the last: it stops there
    assert sidecar.results["loss"] == pytest.approx(expected["loss"], rel=1e-6)
    assert sidecar.results["mae"] == pytest.approx(expected["mae"], rel=1e-6)
    assert int(evaluator_model.optimizer.iterations.numpy()) == 12


def test_model_checkpoint_files_and_best_model_export(tmp_path):
    x, y = _data()
    ckpt_dir = tmp_path / "ckpts"
    trainer = _model()
    saver = tf.keras.callbacks.ModelCheckpoint(
        str(ckpt_dir / "ckpt-{epoch}"), save_weights_only=True
    )
    trainer.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[saver])
    export = tf.keras.callbacks.SidecarEvaluatorModelExport(
        export_filepath=str(tmp_path / "best-{epoch}.weights"),
        checkpoint_filepath=str(ckpt_dir / "ckpt-{epoch}"),
        monitor="loss",
        save_weights_only=True,
    )
    count = _Count()
    evaluator_model = _model()
    sidecar = tf.keras.utils.SidecarEvaluator(
        evaluator_model, _ds(x, y), ckpt_dir, callbacks=[count, export], timeout=0.5
    )
    sidecar.start()  # one checkpoint, then no new one within the timeout: it stops
    assert len(count.results) == 1
    assert export.export_index == 1
    assert os.path.exists(tmp_path / "best-1.weights")
    restored = _model()
    restored.load_weights(str(tmp_path / "best-1.weights"))
    restored.build((None, 3))
    for a, b in zip(restored.get_weights(), trainer.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_no_checkpoint_within_timeout_stops(tmp_path):
    x, y = _data()
    count = _Count()
    tf.keras.utils.SidecarEvaluator(
        _model(), _ds(x, y), tmp_path, callbacks=[count], timeout=0.3
    ).start()
    assert count.results == []
