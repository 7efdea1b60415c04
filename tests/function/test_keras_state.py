"""Keras state inside a traced function: metrics (host steps whose results are outputs), the
optimizer, BatchNormalization's moving statistics, and operators a compiled fit step uses."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.function import host_method


def test_host_method_with_outputs_computes_them_at_every_call():
    class Counter:
        def __init__(self):
            self.n = 0

        @host_method
        def bump(self):
            self.n += 1

        @host_method(outputs=True)
        def value(self):
            return {"n": tf.constant(float(self.n)), "twice": tf.constant([2.0 * self.n])}

    c = Counter()

    @tf.function
    def f():
        c.bump()
        return c.value()

    outs = [f() for _ in range(3)]
    assert [float(o["n"]) for o in outs] == [1.0, 2.0, 3.0]  # not frozen at trace time
    assert [o["twice"].numpy().tolist() for o in outs] == [[2.0], [4.0], [6.0]]
    assert f.experimental_get_tracing_count() == 1


def test_host_method_with_outputs_refuses_symbolic_arguments():
    @host_method(outputs=True)
    def read(x):
        return x

    with pytest.raises(TypeError, match="cannot take symbolic tensors"):
        tf.function(lambda x: read(x))(tf.constant(1.0))


def test_metric_update_and_result_run_at_every_call():
    m = tf.keras.metrics.Mean()
    acc = tf.keras.metrics.SparseCategoricalAccuracy()

    @tf.function
    def step(x, y, p):
        m.update_state(x)
        acc.update_state(y, p)
        return m.result(), acc.result()

    y = tf.constant([0, 1])
    r1 = step(tf.constant([1.0, 3.0]), y, tf.constant([[0.9, 0.1], [0.8, 0.2]]))
    r2 = step(tf.constant([5.0, 7.0]), y, tf.constant([[0.9, 0.1], [0.1, 0.9]]))
    assert float(r1[0]) == 2.0 and float(r2[0]) == 4.0
    assert float(r1[1]) == 0.5 and float(r2[1]) == 0.75
    assert step.experimental_get_tracing_count() == 1


def test_batch_norm_moving_statistics_update_inside_a_trace():
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32) * 2 + 1
    eager, traced = tf.keras.layers.BatchNormalization(), tf.keras.layers.BatchNormalization()
    eager.build((None, 3))
    traced.build((None, 3))
    f = tf.function(lambda t: traced(t, training=True))
    for _ in range(3):
        eager(x, training=True)
        f(x)
    for a, b in zip(eager.weights, traced.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(traced.moving_mean.numpy(), 0.0)


def test_division_with_python_and_variable_operands_traces():
    v = tf.Variable([4.0])

    @tf.function
    def f(x):
        return x / 2.0, 2.0 / x, v / x, tf.math.divide(x, v)

    out = f(tf.constant([1.0]))
    assert [float(o[0]) for o in out] == [0.5, 2.0, 4.0, 0.25]


@pytest.mark.parametrize("labels", [[[0.0, 1.0]], [[-1.0, 1.0]], [[0.0, 2.0]]])
def test_hinge_label_conversion_inside_a_trace(labels):
    p = tf.constant([[0.5, 0.5]])
    eager = tf.keras.losses.hinge(tf.constant(labels), p)
    traced = tf.function(tf.keras.losses.hinge)(tf.constant(labels), p)
    np.testing.assert_allclose(traced.numpy(), eager.numpy())


_L = tf.keras.layers


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: _L.Conv2D(2, 3), (2, 6, 6, 1)),
        (lambda: _L.Conv2D(2, 3, activation="relu"), (2, 6, 6, 1)),
        (lambda: _L.Conv1D(2, 2), (2, 5, 3)),
        (lambda: _L.DepthwiseConv2D(2), (2, 5, 5, 2)),
        (lambda: _L.LSTM(3), (2, 5, 2)),
        (lambda: _L.GRU(3, return_sequences=True), (2, 5, 2)),
        (lambda: _L.SimpleRNN(3), (2, 5, 2)),
    ],
)
def test_layers_with_array_kernel_gradients_train_inside_a_trace(make, shape):
    """Convolutions and fused RNNs compute their gradients on arrays: inside a trace the
    gradient becomes a host step and equals the eager one."""
    layer = make()
    x = tf.constant(np.random.default_rng(1).random(shape, dtype=np.float32))
    layer(x)

    def grads(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(layer(x, training=True) ** 2)
        return tape.gradient(y, [x, *layer.trainable_variables])

    traced = tf.function(grads)
    for a, b in zip(traced(x), grads(x)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    assert traced.experimental_get_tracing_count() == 1


def _host_steps(function):
    """The names of the host steps of a tf.function's (only) traced program."""
    (concrete,) = {id(c): c for c in function._traces.values()}.values()
    return [getattr(s.fn, "__name__", "") for s in concrete._plan.program_steps
            if s.kind == "host"]  # fmt: skip


def test_metrics_written_with_ops_are_traced_not_host_steps():
    m = tf.keras.metrics.Mean()
    acc = tf.keras.metrics.SparseCategoricalAccuracy()

    @tf.function
    def step(x, y, p):
        m.update_state(x)
        acc.update_state(y, p)
        return m.result(), acc.result()

    y = tf.constant([0, 1])
    step(tf.constant([1.0, 3.0]), y, tf.constant([[0.9, 0.1], [0.8, 0.2]]))
    assert _host_steps(step) == []  # one program: the updates and results are its steps
    r = step(tf.constant([5.0, 7.0]), y, tf.constant([[0.9, 0.1], [0.1, 0.9]]))
    assert (float(r[0]), float(r[1])) == (4.0, 0.75)


class NumpyMean(tf.keras.metrics.Metric):
    """A metric that computes on values (like Keras 3's PyMetric): not traceable."""

    def __init__(self, name="numpy_mean", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_weight("total")
        self.count = self.add_weight("count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        err = np.abs(np.asarray(y_true, np.float32) - np.asarray(y_pred, np.float32))
        self.total.assign_add(float(err.sum()))
        self.count.assign_add(float(err.size))

    def result(self):
        return tf.constant(float(self.total.numpy()) / max(float(self.count.numpy()), 1.0))


def test_a_metric_computing_on_values_runs_as_a_host_step_at_every_call():
    m = NumpyMean()

    @tf.function
    def step(y, p):
        m.update_state(y, p)
        return m.result()

    y = tf.constant([[1.0], [2.0]])
    assert float(step(y, tf.constant([[0.0], [2.0]]))) == 0.5
    assert float(step(y, tf.constant([[1.0], [0.0]]))) == 0.75  # state kept across calls
    assert _host_steps(step) == ["update_state", "run"]
    assert step.experimental_get_tracing_count() == 1


def test_compiled_fit_with_a_host_metric_matches_eager():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [0.5]], np.float32)

    def run(eager):
        tf.keras.utils.set_random_seed(2)
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile("sgd", "mse", metrics=[NumpyMean(), "mae"], run_eagerly=eager)
        return model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False).history

    compiled, eager = run(False), run(True)
    for key in ("loss", "numpy_mean", "mae"):
        np.testing.assert_allclose(compiled[key], eager[key], rtol=1e-5)
