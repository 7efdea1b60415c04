"""GradientTape inside a traced function (gradient program derived once) and around one."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.function import host_method


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 20)).astype(np.float32)
    y = rng.integers(0, 5, 32)
    return tf.constant(x), tf.constant(y)


def _params(seed=1):
    rng = np.random.default_rng(seed)
    return [
        tf.Variable(rng.standard_normal((20, 16)).astype(np.float32) * 0.1),
        tf.Variable(np.zeros(16, np.float32)),
        tf.Variable(rng.standard_normal((16, 5)).astype(np.float32) * 0.1),
        tf.Variable(np.zeros(5, np.float32)),
    ]


def _manual_step(params):
    def step(x, y):
        w1, b1, w2, b2 = params
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(h, w2) + b2
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(0.1 * g)
        return loss

    return step


def test_training_loop_in_tf_function_matches_eager():
    x, y = _data()
    eager_params, traced_params = _params(), _params()
    eager, traced = _manual_step(eager_params), tf.function(_manual_step(traced_params))
    for _ in range(10):
        le = eager(x, y)
        lt = traced(x, y)
        assert abs(float(le) - float(lt)) <= 1e-6
    for a, b in zip(eager_params, traced_params):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)
    assert traced.experimental_get_tracing_count() == 1


def test_keras_model_and_optimizer_in_tf_function(monkeypatch):
    from layerflow._src.keras.optimizers.optimizer import Optimizer

    # The optimizer updates arrays in place, so inside a trace it runs as a host step.
    monkeypatch.setattr(
        Optimizer, "apply_gradients",
        host_method(Optimizer.apply_gradients, result=lambda self, *a, **k: self.iterations),
    )  # fmt: skip
    x = tf.constant(np.random.default_rng(0).standard_normal((16, 4, 4)).astype(np.float32))
    y = tf.constant(np.arange(16) % 3)

    def run(compiled):
        tf.random.set_seed(3)
        model = tf.keras.models.Sequential([
            tf.keras.layers.Flatten(), tf.keras.layers.Dense(8, activation="relu"),
            tf.keras.layers.Dense(3),
        ])  # fmt: skip
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        opt = tf.keras.optimizers.SGD(0.1, momentum=0.9)

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))  # fmt: skip
            return loss

        step = tf.function(step) if compiled else step
        losses = [float(step(x, y)) for _ in range(6)]
        return losses, [w.numpy() for w in model.weights], int(opt.iterations)

    le, we, ie = run(False)
    lt, wt, it = run(True)
    np.testing.assert_allclose(le, lt, atol=1e-6)
    for a, b in zip(we, wt):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert ie == it == 6


def test_gradient_through_traced_cond():
    v = tf.Variable(3.0)

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            y = tf.cond(x > 0, lambda: v * v * x, lambda: v * 2.0)
        return tape.gradient(y, v)

    assert float(f(tf.constant(1.0))) == 6.0  # d(v^2 x)/dv = 2 v x
    assert float(f(tf.constant(-1.0))) == 2.0


def test_watched_input_and_second_order():
    @tf.function
    def f(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x
            dy = inner.gradient(y, x)
        return dy, outer.gradient(dy, x)

    dy, d2y = f(tf.constant(2.0))
    assert (float(dy), float(d2y)) == (12.0, 12.0)


def test_outer_tape_records_a_traced_function():
    w = tf.Variable([1.0, 2.0])
    f = tf.function(lambda x: tf.reduce_sum(w * x * x))
    x = tf.constant([3.0, 4.0])
    f(x)  # traced outside any tape
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gw, gx = tape.gradient(y, [w, x])
    assert gw.numpy().tolist() == [9.0, 16.0]
    assert gx.numpy().tolist() == [6.0, 16.0]


def test_training_step_with_an_unknown_batch_dimension_matches_eager():
    x, y = _data()
    eager_params, traced_params = _params(), _params()
    eager = _manual_step(eager_params)
    traced = tf.function(
        _manual_step(traced_params),
        input_signature=[tf.TensorSpec([None, 20], tf.float32), tf.TensorSpec([None], tf.int64)],
    )
    for n in (32, 7, 32):
        le, lt = eager(x[:n], y[:n]), traced(x[:n], y[:n])
        assert abs(float(le) - float(lt)) <= 1e-6
    assert traced.experimental_get_tracing_count() == 1
    for a, b in zip(eager_params, traced_params):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)


def test_keras_model_with_unknown_batch_dimension():
    model = tf.keras.models.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(3)])
    x = tf.constant(np.random.default_rng(0).standard_normal((5, 2, 2)).astype(np.float32))
    model(x)
    f = tf.function(model, input_signature=[tf.TensorSpec([None, 2, 2], tf.float32)])
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), atol=1e-6)
    np.testing.assert_allclose(f(x[:2]).numpy(), model(x[:2]).numpy(), atol=1e-6)


def test_outer_tape_replay_keeps_state_changes():
    v = tf.Variable(1.0)
    counter = tf.Variable(0)

    @tf.function
    def f(x):
        counter.assign_add(1)
        return x * v

    x = tf.constant(2.0)
    f(x)
    with tf.GradientTape() as tape:
        y = f(x)
    assert float(tape.gradient(y, v)) == 2.0
    assert int(counter.numpy()) == 2


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple"])
def test_masked_fused_rnn_with_a_traced_mask_matches_eager(kind):
    from layerflow._src.ops import rnn_ops

    rng = np.random.default_rng(4)
    units, gates = 3, {"lstm": 4, "gru": 3, "simple": 1}[kind]
    xw = tf.constant(rng.standard_normal((4, 6, gates * units)))
    h0 = tf.constant(rng.standard_normal((4, units)))
    u = tf.constant(rng.standard_normal((units, gates * units)) * 0.5)
    b = tf.constant(rng.standard_normal(gates * units))
    rdrop = tf.constant((rng.random((gates, 4, units)) > 0.3) / 0.7)

    def run(xw, h0, u, b, lengths):
        mask = tf.range(6)[None, :] < tf.expand_dims(lengths, 1)  # symbolic when traced
        with tf.GradientTape() as tape:
            tape.watch([xw, h0, u, b])
            if kind == "lstm":
                y, *_ = rnn_ops.lstm_sequence(xw, h0, h0 * 0.5, u, mask=mask,
                                              recurrent_masks=rdrop)  # fmt: skip
            elif kind == "gru":
                y, _ = rnn_ops.gru_sequence(xw, h0, u, b, mask=mask, recurrent_masks=rdrop)
            else:
                y, _ = rnn_ops.simple_rnn_sequence(xw, h0, u, mask=mask, recurrent_masks=rdrop)
            loss = tf.reduce_sum(y * y)
        grads = tape.gradient(loss, [xw, h0, u, b], unconnected_gradients="zero")
        return [loss, *grads]

    traced = tf.function(run)
    for n in ([6, 3, 1, 4], [2, 6, 6, 0]):
        args = (xw, h0, u, b, tf.constant(n))
        for t, e in zip(traced(*args), run(*args)):
            np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12)
    assert traced.experimental_get_tracing_count() == 1
