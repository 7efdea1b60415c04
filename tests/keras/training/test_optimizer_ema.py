"""`use_ema`: the optimizer keeps an exponential moving average of the variables (tf_keras)."""

import numpy as np
import pytest

import layerflow as tf


def _sgd_doc_example(**extra):
    opt = tf.keras.optimizers.SGD(learning_rate=1.0, use_ema=True, ema_momentum=0.5, **extra)
    a, b = tf.Variable(2.0), tf.Variable(2.0)
    seen = []
    for _ in range(4):
        opt.apply_gradients([(tf.constant(1.0), a), (tf.constant(1.0), b)])
        seen.append((float(a), float(opt.get_slot(a, "average"))))
    return opt, a, b, seen


def test_overwrite_frequency_matches_tf_keras():
    # tf_keras 2.21's own numbers for its documented example (lr 1, momentum 0.5, every 3).
    opt, a, b, seen = _sgd_doc_example(ema_overwrite_frequency=3)
    assert seen == [(1.0, 1.5), (0.0, 0.75), (-0.125, -0.125), (-1.125, -0.625)]
    assert float(b) == float(a)
    opt.finalize_variable_values([a, b])
    assert float(a) == float(b) == -0.625


def test_without_overwrite_the_variables_train_as_without_ema():
    _, a, _, seen = _sgd_doc_example()
    assert [v for v, _ in seen] == [1.0, 0.0, -1.0, -2.0]
    expected, average = [], 2.0
    for v, _ in seen:
        average = 0.5 * average + 0.5 * v
        expected.append(average)
    assert [avg for _, avg in seen] == expected


def test_averages_are_optimizer_variables_created_from_the_initial_values():
    opt = tf.keras.optimizers.Adam(0.1, use_ema=True)
    w = tf.Variable([1.0, 2.0])
    opt.build([w])
    average = opt.get_slot(w, "average")
    np.testing.assert_array_equal(average.numpy(), [1.0, 2.0])
    assert any(v is average for v in opt.variables)
    assert "ema_momentum" in opt.get_config() and opt.get_config()["use_ema"] is True


def test_adam_average_follows_the_trajectory():
    rng = np.random.default_rng(0)
    plain = tf.keras.optimizers.Adam(0.05)
    ema = tf.keras.optimizers.Adam(0.05, use_ema=True, ema_momentum=0.9)
    w_plain, w_ema = tf.Variable([0.5, -0.5]), tf.Variable([0.5, -0.5])
    average = w_plain.numpy().astype(np.float64)
    for _ in range(5):
        g = rng.standard_normal(2).astype(np.float32)
        plain.apply_gradients([(tf.constant(g), w_plain)])
        ema.apply_gradients([(tf.constant(g), w_ema)])
        average = 0.9 * average + 0.1 * w_plain.numpy()
    np.testing.assert_allclose(w_ema.numpy(), w_plain.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ema.get_slot(w_ema, "average").numpy(), average, rtol=1e-5)


def test_fit_ends_with_the_averaged_weights():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 3)).astype("float32")
    y = rng.standard_normal((32, 1)).astype("float32")

    def model(opt):
        tf.keras.utils.set_random_seed(3)
        m = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        m.compile(optimizer=opt, loss="mse")
        m(x[:1])
        return m

    plain = model(tf.keras.optimizers.SGD(0.1))
    start = [w.numpy().astype(np.float64) for w in plain.trainable_weights]
    averages = [s.copy() for s in start]

    class Track(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            for i, w in enumerate(plain.trainable_weights):
                averages[i] = 0.8 * averages[i] + 0.2 * w.numpy()

    plain.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[Track()])
    averaged = model(tf.keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.8))
    averaged.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for got, want, trained in zip(averaged.trainable_weights, averages, plain.trainable_weights):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-7)
        assert not np.allclose(got.numpy(), trained.numpy())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ema_momentum": 1.5}, "ema_momentum must be in the range"),
        ({"ema_momentum": -0.1}, "ema_momentum must be in the range"),
        ({"ema_overwrite_frequency": -2}, "ema_overwrite_frequency must be an integer"),
        ({"ema_overwrite_frequency": 2.5}, "ema_overwrite_frequency must be an integer"),
    ],
)
def test_bad_ema_arguments_are_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tf.keras.optimizers.SGD(0.1, use_ema=True, **kwargs)


def test_finalize_before_any_step_says_so():
    with pytest.raises(ValueError, match="after apply_gradients"):
        tf.keras.optimizers.SGD(0.1, use_ema=True).finalize_variable_values([tf.Variable(1.0)])


def test_finalize_without_ema_changes_nothing():
    opt = tf.keras.optimizers.SGD(1.0)
    v = tf.Variable(2.0)
    opt.apply_gradients([(tf.constant(1.0), v)])
    opt.finalize_variable_values([v])
    assert float(v) == 1.0


def test_ema_under_mirrored_strategy_keeps_replicas_equal(two_cpus):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 3)).astype("float32")
    y = rng.standard_normal((16, 1)).astype("float32")

    def fit(strategy):
        with strategy.scope():
            tf.keras.utils.set_random_seed(4)
            m = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
            m.compile(optimizer=tf.keras.optimizers.SGD(0.1, use_ema=True), loss="mse")
        m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return m

    single = fit(tf.distribute.get_strategy())
    mirrored = fit(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    for got, want in zip(mirrored.trainable_weights, single.trainable_weights):
        for copy in getattr(got, "values", [got]):
            np.testing.assert_allclose(copy.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)
