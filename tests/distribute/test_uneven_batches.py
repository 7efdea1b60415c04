"""A global batch that does not split evenly: mirrored training equals one-device training."""

import numpy as np
import pytest

import layerflow as tf


@pytest.fixture
def strategy(two_cpus):
    return tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])


def _data(rows):
    rng = np.random.default_rng(rows)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)


def _model():
    tf.keras.utils.set_random_seed(3)
    net = tf.keras.Sequential(
        [tf.keras.layers.Dense(3, activation="tanh"), tf.keras.layers.Dense(1)]
    )
    net.compile(optimizer=tf.keras.optimizers.SGD(0.2), loss="mse")
    return net


@pytest.mark.parametrize("rows, batch_size", [(7, 4), (9, 3), (5, 5), (10, 4)])
def test_fit_matches_one_device_on_any_batch_size(strategy, rows, batch_size):
    x, y = _data(rows)
    ref = _model()
    ref.fit(x, y, batch_size=batch_size, epochs=3, shuffle=False, verbose=0)
    with strategy.scope():
        net = _model()
    history = net.fit(x, y, batch_size=batch_size, epochs=3, shuffle=False, verbose=0)
    for got, want in zip(net.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(history.history["loss"], ref.history.history["loss"], rtol=1e-5)


def test_a_replica_without_rows_contributes_nothing(strategy):
    x, y = _data(5)
    ref = _model()
    ref.fit(x[:1], y[:1], batch_size=1, epochs=2, verbose=0)
    with strategy.scope():
        net = _model()
    net.fit(x[:1], y[:1], batch_size=1, epochs=2, verbose=0)  # replica 1 gets 0 rows
    for got, want in zip(net.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_custom_loop_as_in_tf_docs_matches_one_device_with_a_short_last_batch(strategy):
    """TF's custom-training tutorial: per-example losses, compute_average_loss, and
    apply_gradients inside strategy.run; the last global batch (3 of 7 rows) splits 2 + 1."""
    x, y = _data(7)
    batches = [(x[i : i + 4], y[i : i + 4]) for i in range(0, 7, 4)]
    mse = tf.keras.losses.MeanSquaredError(reduction="none")

    def train(net, opt, run, dataset):
        def step(xs, ys):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(mse(ys, net(xs, training=True)))
            grads = tape.gradient(loss, net.trainable_variables)
            opt.apply_gradients(zip(grads, net.trainable_variables))
            return loss

        return [float(run(step, batch)) for batch in dataset]

    ref = _model()
    ref_losses = train(ref, tf.keras.optimizers.SGD(0.2), lambda f, b: f(*b), batches)
    with strategy.scope():
        net = _model()
        opt = tf.keras.optimizers.SGD(0.2)
    net(x[:1])

    def run(fn, batch):
        per_replica = strategy.run(fn, args=batch)
        return strategy.reduce("SUM", per_replica, axis=None)

    losses = train(net, opt, run, strategy.experimental_distribute_dataset(batches))
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for got, want in zip(net.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_compute_average_loss_weights_and_global_batch_size():
    per_example = tf.constant([1.0, 2.0, 3.0, 6.0])
    assert float(tf.nn.compute_average_loss(per_example)) == 3.0
    assert float(tf.nn.compute_average_loss(per_example, global_batch_size=8)) == 1.5
    weighted = tf.nn.compute_average_loss(per_example, sample_weight=[1.0, 0.0, 0.0, 0.5])
    assert float(weighted) == 1.0
    assert float(tf.nn.compute_average_loss(per_example, global_batch_size=0)) == 0.0
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(2.0))
    with pytest.raises(TypeError, match="scalar integer"):
        tf.nn.compute_average_loss(per_example, global_batch_size=2.5)
    with pytest.raises(ValueError, match="non-negative"):
        tf.nn.compute_average_loss(per_example, global_batch_size=-1)


def test_compute_average_loss_in_cross_replica_context_is_an_error(strategy):
    with strategy.scope(), pytest.raises(RuntimeError, match="cross replica context"):
        tf.nn.compute_average_loss(tf.constant([1.0]))


def test_scale_regularization_loss_counts_it_once_over_replicas(strategy):
    out = strategy.run(
        lambda: tf.nn.scale_regularization_loss([tf.constant(1.0), tf.constant(3.0)])
    )
    assert float(strategy.reduce("SUM", out, axis=None)) == 4.0
