"""tf.keras.metrics.experimental.PyMetric: Python state, host steps in a compiled fit."""

import numpy as np
import pytest

import layerflow as tf


class MaxAbsError(tf.keras.metrics.experimental.PyMetric):
    def __init__(self, name="max_abs_error", **kwargs):
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.seen.append(int(y_true.shape[0]))
        self.worst = max(self.worst, float(np.max(np.abs(np.asarray(y_true) - np.asarray(y_pred)))))

    def reset_state(self):
        self.worst = 0.0
        self.seen = []

    def result(self):
        return self.worst


def test_eager_update_result_reset():
    m = MaxAbsError()
    assert m.seen == [] and float(m.result()) == 0.0  # reset_state ran in __init__
    m.update_state(np.array([1.0, 2.0]), np.array([1.5, -1.0]))
    r = m.result()
    assert isinstance(r, tf.Tensor) and r.dtype == tf.float32 and float(r) == 3.0
    m.reset_state()
    assert float(m.result()) == 0.0
    assert tf.metrics.experimental.PyMetric is tf.keras.metrics.experimental.PyMetric


def test_runs_every_step_of_a_compiled_fit():
    x = np.random.default_rng(0).normal(size=(20, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
    metric = MaxAbsError()
    model.compile("sgd", "mse", metrics=[metric])
    assert not model.run_eagerly
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert model.train_function.function is not None  # still compiled, not fallen back
    # 3 batches (8, 8, 4) in each epoch; reset at each epoch start.
    assert metric.seen == [8, 8, 4]
    pred = model.predict(x, verbose=0)
    logs = model.evaluate(x, y, batch_size=20, verbose=0, return_dict=True)
    assert logs["max_abs_error"] == pytest.approx(float(np.max(np.abs(y - pred))), rel=1e-5)
    assert len(hist.history["max_abs_error"]) == 2


def test_result_must_be_a_scalar():
    class Bad(tf.keras.metrics.experimental.PyMetric):
        def update_state(self, *a, **k):
            pass

        def reset_state(self):
            pass

        def result(self):
            return [1.0, 2.0]

    with pytest.raises(ValueError, match="scalar"):
        Bad().result()


def test_reset_state_must_be_implemented():
    class NoReset(tf.keras.metrics.experimental.PyMetric):
        def update_state(self, *a, **k):
            pass

        def result(self):
            return 0.0

    with pytest.raises(NotImplementedError, match="reset_state"):
        NoReset()
