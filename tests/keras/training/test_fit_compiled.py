"""fit/evaluate/predict run compiled steps by default (Keras' run_eagerly=False), with the same
results as eager steps; steps_per_execution; opting out."""

import numpy as np
import pytest

import layerflow as tf

RNG = np.random.default_rng(7)


def _data(n=100, d=4):
    x = RNG.standard_normal((n, d)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [1.5]], np.float32) > 0).astype(np.float32)
    return x, y


def _model(weights=None, **compile_kwargs):
    model = tf.keras.Sequential(
        [
            tf.keras.Input((4,)),
            tf.keras.layers.Dense(8, activation="relu"),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    if weights is not None:
        model.set_weights(weights)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.05),
        loss="binary_crossentropy",
        metrics=["accuracy", tf.keras.metrics.AUC(name="auc")],
        **compile_kwargs,
    )
    return model


def test_run_eagerly_is_false_by_default_and_fit_compiles():
    x, y = _data()
    model = _model()
    assert model.run_eagerly is False
    model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    fn = model.train_function
    assert fn.function is not None and not fn.eager
    # 100 = 3 x 32 + 4: one trace for the full batches, one for the last partial batch; the
    # later epochs add none (the model was built by its Input, so no trace made variables).
    assert fn.function.experimental_get_tracing_count() == 2


def test_compiled_fit_matches_eager_fit():
    """Same initial weights and data: compiled and eager training give the same history,
    weights, BatchNorm moving statistics and metrics (sample weights, validation included)."""
    x, y = _data()
    sw = RNG.uniform(0.5, 2.0, size=len(x)).astype(np.float32)
    init = _model().get_weights()
    runs = {}
    for eager in (True, False):
        model = _model(init, run_eagerly=eager)
        hist = model.fit(
            x, y, sample_weight=sw, batch_size=16, epochs=3, shuffle=False, verbose=0,
            validation_data=(x[:30], y[:30]),
        )  # fmt: skip
        runs[eager] = (model, hist.history)
    (eager_model, eager_hist), (comp_model, comp_hist) = runs[True], runs[False]
    assert comp_model.train_function.function is not None
    assert eager_model.train_function.function is None
    assert comp_hist.keys() == eager_hist.keys()
    for key in eager_hist:
        np.testing.assert_allclose(comp_hist[key], eager_hist[key], rtol=2e-4, atol=2e-5)
    for a, b in zip(comp_model.get_weights(), eager_model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)  # moving stats are weights too
    bn = comp_model.layers[1]
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)  # updated inside the compiled step
    np.testing.assert_allclose(
        comp_model.evaluate(x, y, verbose=0), eager_model.evaluate(x, y, verbose=0), rtol=1e-4
    )
    np.testing.assert_allclose(
        comp_model.predict(x, verbose=0), eager_model.predict(x, verbose=0), rtol=1e-4, atol=1e-6
    )
    assert int(comp_model.optimizer.iterations.numpy()) == 3 * 7


def test_compile_run_eagerly_true_and_run_functions_eagerly_opt_out():
    x, y = _data()
    model = _model(run_eagerly=True)
    assert model.run_eagerly is True
    model.fit(x, y, epochs=1, verbose=0)
    assert model.train_function.eager and model.train_function.function is None
    model = _model()
    tf.config.run_functions_eagerly(True)
    try:
        assert model.run_eagerly is True
        model.fit(x, y, epochs=1, verbose=0)
        assert model.train_function.function is None
    finally:
        tf.config.run_functions_eagerly(False)
    assert model.run_eagerly is False
    model.fit(x, y, epochs=1, verbose=0)  # the mode changed: a compiled function is made
    assert model.train_function.function is not None
    model.run_eagerly = True
    assert model.make_train_function().eager


def test_make_functions_are_cached_until_compile_or_force():
    x, y = _data()
    model = _model()
    train = model.make_train_function()
    assert model.make_train_function() is train
    assert model.make_train_function(force=True) is not train
    test, predict = model.make_test_function(), model.make_predict_function()
    logs = test(iter([(x[:8], y[:8])]))
    assert sorted(logs) == ["accuracy", "auc", "loss"]
    assert predict(iter([(x[:8],)])).shape == (8, 1)
    model.compile("sgd", "mse")
    assert model.train_function is None and model.test_function is None
    assert model.predict_function is None


def test_user_set_train_function_is_kept():
    x, y = _data()
    model = _model()
    seen = []

    def train_function(iterator):
        seen.append(next(iterator))
        return {"loss": 0.5}

    model.train_function = train_function
    hist = model.fit(x, y, batch_size=50, epochs=1, verbose=0)
    assert len(seen) == 2 and hist.history["loss"] == [0.5]


class _Hooks(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.begin, self.end = [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.begin.append(batch)

    def on_train_batch_end(self, batch, logs=None):
        self.end.append(batch)


def test_steps_per_execution_runs_n_steps_per_call_with_hooks_per_execution():
    x, y = _data()
    init = _model().get_weights()
    one = _model(init)
    three = _model(init, steps_per_execution=3)
    assert three.steps_per_execution == 3
    hooks = _Hooks()
    one.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0)
    three.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0, callbacks=[hooks])
    # 10 batches per epoch: executions of 3, 3, 3 and 1 batches (tf_keras's batch numbers).
    assert hooks.begin == [0, 3, 6, 9] * 2 and hooks.end == [2, 5, 8, 9] * 2
    assert int(three.optimizer.iterations.numpy()) == 20
    for a, b in zip(one.get_weights(), three.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    # Executions of three batches and of one: one trace each (not one per step).
    assert three.train_function.function.experimental_get_tracing_count() == 2
    predicted = three.predict(x, batch_size=10, verbose=0)  # 3 batches per call, concatenated
    np.testing.assert_allclose(predicted, one.predict(x, verbose=0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_steps_per_execution_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="steps_per_execution must be a positive integer"):
        _model(steps_per_execution=bad)


def test_random_ops_draw_anew_at_every_compiled_step():
    """Dropout in a compiled train_step: training=True inside the trace, a new mask per call;
    evaluate runs with training=False (no dropout)."""

    class DropModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.drop = tf.keras.layers.Dropout(0.5)
            self.dense = tf.keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)

        def call(self, x, training=None):
            return self.dense(self.drop(x, training=training))

        def train_step(self, data):
            x, _ = data
            kept = tf.reduce_mean(tf.cast(self.drop(x, training=True) != 0.0, tf.float32))
            return {"kept": kept, "first": self(x, training=True)[0, 0]}

    model = DropModel()
    model.compile("sgd", "mse")
    x = np.ones((64, 50), np.float32)
    logs = []
    cb = tf.keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, lg: logs.append(lg))
    model.fit(x, x[:, :1], batch_size=64, epochs=6, verbose=0, callbacks=[cb])
    assert model.train_function.function is not None
    kept = [lg["kept"] for lg in logs]
    assert all(0.3 < k < 0.7 for k in kept) and len(set(kept)) > 1
    assert len({lg["first"] for lg in logs}) > 1
    np.testing.assert_allclose(model.predict(x[:4], verbose=0), 50.0)  # no dropout


def test_tensor_control_flow_in_a_user_call_is_converted_when_compiled():
    class Gate(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1)

        def call(self, x):
            y = self.dense(x)
            if tf.reduce_sum(y) > 0:  # AutoGraph makes this a tf.cond, as in tf_keras
                y = y * 2.0
            return y

    x, y = _data(64)
    init = None
    results = []
    for eager in (True, False):
        model = Gate()
        model(x[:1])
        if init is None:
            init = model.get_weights()
        model.set_weights(init)
        model.compile("sgd", "mse", run_eagerly=eager)
        hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        results.append(hist.history["loss"])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5)


def test_train_and_test_on_batch_run_compiled():
    x, y = _data()
    model = _model()
    loss = model.train_on_batch(x[:20], y[:20], return_dict=True)
    assert set(loss) == {"loss", "accuracy", "auc"}
    assert model.train_function.function is not None
    assert model.test_on_batch(x[:20], y[:20], return_dict=True).keys() == loss.keys()
    assert model.predict_on_batch(x[:5]).shape == (5, 1)
    assert int(model.optimizer.iterations.numpy()) == 1


def test_fit_under_mirrored_strategy_runs_eagerly_by_design(two_cpus):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = _model()
    x, y = _data()
    model.fit(x, y, batch_size=20, epochs=1, verbose=0)
    assert model.run_eagerly is False  # the setting; the strategy's replicas run eagerly
    assert model.train_function.eager and model.train_function.strategy is strategy


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN", "subclass"])
def test_a_masked_fused_rnn_fit_runs_compiled_as_eager(kind, caplog):
    """The mask is a traced input of the fused RNN op: fit compiles (no eager fallback, no
    warning) and gives the eager run's losses and weights."""
    x = RNG.integers(1, 6, size=(24, 7))
    x[:, 5:] = 0  # padding, masked
    x[::3, 2:] = 0
    y = RNG.integers(0, 2, size=(24, 1)).astype(np.float32)

    def make(eager):
        tf.keras.utils.set_random_seed(3)
        if kind == "subclass":

            class Masked(tf.keras.Model):
                def __init__(self):
                    super().__init__()
                    self.embed = tf.keras.layers.Embedding(6, 4)
                    self.rnn = tf.keras.layers.LSTM(3)
                    self.out = tf.keras.layers.Dense(1, activation="sigmoid")

                def call(self, x):
                    return self.out(self.rnn(self.embed(x), mask=tf.not_equal(x, 0)))

            model = Masked()
        else:
            model = tf.keras.Sequential([
                tf.keras.layers.Embedding(6, 4, mask_zero=True),
                getattr(tf.keras.layers, kind)(3, return_sequences=True),
                tf.keras.layers.GlobalAveragePooling1D(),
                tf.keras.layers.Dense(1, activation="sigmoid"),
            ])  # fmt: skip
        model.compile("adam", "binary_crossentropy", run_eagerly=eager)
        return model

    with caplog.at_level("WARNING", logger="layerflow"):
        compiled = make(False)
        hist = compiled.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert compiled.train_function.function is not None and not compiled.train_function.eager
    assert "runs eagerly" not in caplog.text
    eager = make(True)
    ref = eager.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(hist.history["loss"], ref.history["loss"], rtol=1e-5)
    for a, b in zip(compiled.weights, eager.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_a_step_that_cannot_be_traced_falls_back_to_eager_with_a_warning(caplog):
    class HostDouble(tf.keras.layers.Layer):  # computes on host arrays: not traceable
        def call(self, x):
            return tf.constant(np.asarray(x) * 2.0)

    x, y = _data()
    model = tf.keras.Sequential([HostDouble(), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with caplog.at_level("WARNING", logger="layerflow"):
        model.fit(x, y, batch_size=20, epochs=1, verbose=0)
    assert model.train_function.function is None and not model.train_function.eager
    assert "train_function of Sequential runs eagerly" in caplog.text


def test_freezing_a_layer_between_fits_retraces():
    x, y = _data()
    model = _model()
    model.fit(x, y, batch_size=50, epochs=1, verbose=0)
    first = model.train_function.function
    model.layers[0].trainable = False
    frozen = model.layers[0].kernel.numpy().copy()
    model.fit(x, y, batch_size=50, epochs=1, verbose=0)
    assert model.train_function.function is not first  # traced anew for the new variable list
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), frozen)
