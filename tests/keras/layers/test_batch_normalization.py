"""BatchNormalization's flags do what they say: synchronized, adjustment, and the rest refused."""

import logging

import numpy as np
import pytest

import layerflow as tf

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((8, 3)) * [1.0, 3.0, 0.5] + [2.0, -1.0, 5.0]).astype("float32")
# Each replica gets half of the batch; the halves have very different statistics.
X[4:] += 3.0
W = RNG.standard_normal((8, 3)).astype("float32")


def _bn(**kwargs):
    return tf.keras.layers.BatchNormalization(
        momentum=0.5, gamma_initializer=tf.keras.initializers.Constant(1.5), **kwargs
    )


def _single_device():
    bn = _bn()
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = bn(x, training=True)
        loss = tf.reduce_sum(y * W)
    grads = tape.gradient(loss, [x, bn.gamma, bn.beta])
    return bn, y.numpy(), [g.numpy() for g in grads]


def _two_replicas(synchronized):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        bn = _bn(synchronized=synchronized)
        bn.build((None, 3))

    def part(array):
        return strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.constant(array[4 * ctx.replica_id_in_sync_group :][:4])
        )

    def step(x, w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = bn(x, training=True)
            loss = tf.reduce_sum(y * w)
        return (y, *tape.gradient(loss, [x, bn.gamma, bn.beta]))

    out = strategy.run(step, args=(part(X), part(W)))
    y, dx, dgamma, dbeta = (
        [t.numpy() for t in strategy.experimental_local_results(o)] for o in out
    )
    return bn, np.concatenate(y), np.concatenate(dx), sum(dgamma), sum(dbeta)


def test_synchronized_replicas_normalize_as_one_device_over_the_whole_batch(two_cpus):
    ref, y_ref, (dx_ref, dgamma_ref, dbeta_ref) = _single_device()
    bn, y, dx, dgamma, dbeta = _two_replicas(synchronized=True)
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-5)
    # The gradient crosses replicas: each replica's loss depends on the other's inputs.
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dgamma, dgamma_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dbeta, dbeta_ref, rtol=1e-4, atol=1e-5)
    for moving, want in (
        (bn.moving_mean, ref.moving_mean),
        (bn.moving_variance, ref.moving_variance),
    ):
        for copy in moving.values:
            np.testing.assert_allclose(copy.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_unsynchronized_replicas_use_their_own_statistics(two_cpus):
    _, y_ref, _ = _single_device()
    _, y, *_ = _two_replicas(synchronized=False)
    assert not np.allclose(y, y_ref, atol=1e-2)
    halves = [(X[:4] - X[:4].mean(0)) / np.sqrt(X[:4].var(0) + 1e-3) * 1.5,
              (X[4:] - X[4:].mean(0)) / np.sqrt(X[4:].var(0) + 1e-3) * 1.5]  # fmt: skip
    np.testing.assert_allclose(y, np.concatenate(halves), rtol=1e-4, atol=1e-4)


def test_unsynchronized_replicas_keep_one_moving_average_in_every_copy(two_cpus):
    # The moving statistics are written through the Variable with aggregation MEAN: every copy
    # holds the mean of the replicas' updates, never each replica's own (issue 9).
    bn, *_ = _two_replicas(synchronized=False)
    m = 0.5  # _bn's momentum
    for moving, start, stat in (
        (bn.moving_mean, 0.0, lambda a: a.mean(0)),
        (bn.moving_variance, 1.0, lambda a: a.var(0)),
    ):
        want = m * start + (1 - m) * (stat(X[:4]) + stat(X[4:])) / 2
        for copy in moving.values:
            np.testing.assert_allclose(copy.numpy(), want, rtol=1e-5, atol=1e-6)


def test_synchronized_without_a_strategy_is_plain_batch_norm():
    x = tf.constant(X)
    np.testing.assert_allclose(
        _bn(synchronized=True)(x, training=True).numpy(), _bn()(x, training=True).numpy()
    )


def test_adjustment_scales_and_shifts_the_normalized_values_in_training_only():
    scale = np.array([0.9, 1.1, 1.05], "float32")
    bias = np.array([0.1, -0.2, 0.05], "float32")
    seen = []

    def adjustment(shape):
        seen.append(tuple(int(d) for d in shape.numpy()))
        return tf.constant(scale), tf.constant(bias)

    bn = _bn(adjustment=adjustment, beta_initializer=tf.keras.initializers.Constant(0.3))
    y = bn(tf.constant(X), training=True).numpy()
    x_hat = (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-3)
    np.testing.assert_allclose(y, (x_hat * scale + bias) * 1.5 + 0.3, rtol=1e-5, atol=1e-5)
    assert seen == [(8, 3)]
    plain = _bn(beta_initializer=tf.keras.initializers.Constant(0.3))
    plain(tf.constant(X), training=True)
    plain.set_weights(bn.get_weights())
    np.testing.assert_allclose(
        bn(tf.constant(X), training=False).numpy(), plain(tf.constant(X), training=False).numpy()
    )
    assert seen == [(8, 3)]


def test_adjustment_with_a_channel_axis_that_is_not_last():
    x = RNG.standard_normal((4, 2, 3, 3)).astype("float32")
    scale = np.array([0.5, 2.0], "float32").reshape(1, 2, 1, 1)

    def adjustment(shape):
        return tf.constant(scale), tf.zeros((1, 2, 1, 1))

    y = tf.keras.layers.BatchNormalization(axis=1, adjustment=adjustment)(
        tf.constant(x), training=True
    )
    mean, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(
        y.numpy(), (x - mean) / np.sqrt(var + 1e-3) * scale, rtol=1e-4, atol=1e-5
    )


def test_adjustment_is_left_out_of_the_config_with_a_warning(caplog):
    bn = _bn(adjustment=lambda shape: (1.0, 0.0))
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        config = bn.get_config()
    assert "adjustment" not in config and "cannot be serialized" in caplog.text


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"trainable_statistics": True}, TypeError, "trainable_statistics"),
        ({"synchronized": True, "fused": True}, ValueError, "fused=True is not supported"),
        ({"adjustment": 3}, TypeError, "adjustment must be a function"),
    ],
)
def test_unsupported_or_bad_arguments_are_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        tf.keras.layers.BatchNormalization(**kwargs)


def test_fit_with_synchronized_batch_norm_matches_one_device(two_cpus):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((32, 4)) * 3 + 1).astype("float32")
    y = rng.standard_normal((32, 1)).astype("float32")

    def fit(strategy, synchronized):
        with strategy.scope():
            tf.keras.utils.set_random_seed(1)
            model = tf.keras.Sequential(
                [
                    tf.keras.Input((4,)),
                    tf.keras.layers.Dense(5),
                    tf.keras.layers.BatchNormalization(synchronized=synchronized),
                    tf.keras.layers.Dense(1),
                ]
            )
            model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return [w.numpy() for w in model.weights]

    one = fit(tf.distribute.get_strategy(), False)
    synced = fit(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), True)
    for got, want in zip(synced, one):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
