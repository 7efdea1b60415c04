"""Gradients through a tf.while_loop (and AutoGraph loops and ifs) traced inside tf.function.

Oracles: the same code run eagerly, central differences in float64, and TF's values.
"""

import numpy as np
import pytest

import layerflow as tf


def _fd(f, x, eps=1e-6):
    """Central differences of the scalar f at the float64 array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (f(a) - f(b)) / (2 * eps)
    return g


def test_while_loop_gradient_with_respect_to_a_variable():
    v = tf.Variable(2.0)

    def step():
        with tf.GradientTape() as tape:
            (y,) = tf.while_loop(lambda y: y < 10.0, lambda y: [y * v], [v * 1.0])
        return y, tape.gradient(y, v)

    y, g = tf.function(step)()
    assert (float(y), float(g)) == (16.0, 32.0)  # y = v^4 at v = 2: dy/dv = 4 v^3
    ye, ge = step()
    assert (float(ye), float(ge)) == (16.0, 32.0)


def _accumulate(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        s = tf.zeros_like(x)
        for i in tf.range(n):
            s = s + x * tf.cast(i, x.dtype) + tf.sin(s)
        out = tf.reduce_sum(s * s)
    return out, tape.gradient(out, x)


def test_autograph_for_over_tf_range_with_a_tensor_trip_count():
    f = tf.function(_accumulate)
    x = np.array([0.3, -0.2, 1.0])
    for n in (1, 2, 5):
        out, g = f(tf.constant(x), tf.constant(n))
        oe, ge = _accumulate(tf.constant(x), n)  # eagerly: a Python loop
        np.testing.assert_allclose(out.numpy(), oe.numpy(), rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), ge.numpy(), rtol=1e-12)
        fd = _fd(lambda a, n=n: float(_accumulate(tf.constant(a), n)[0]), x)
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-8)
    assert f.experimental_get_tracing_count() == 1  # one trace serves every trip count


def test_zero_iterations_give_zero_gradients_as_tf():
    out, g = tf.function(_accumulate)(tf.constant([0.3, -0.2, 1.0]), tf.constant(0))
    assert float(out) == 0.0
    assert g.numpy().tolist() == [0.0, 0.0, 0.0]  # TF: zeros, not None, through the loop


@pytest.mark.parametrize("as_tensor", [False, True])
def test_maximum_iterations(as_tensor):
    @tf.function
    def f(x, m):
        with tf.GradientTape() as tape:
            tape.watch(x)
            (y,) = tf.while_loop(lambda y: y < 100.0, lambda y: [y * x], [x],
                                 maximum_iterations=m)  # fmt: skip
        return y, tape.gradient(y, x)

    m = tf.constant(3) if as_tensor else 3
    y, g = f(tf.constant(1.5), m)
    assert (float(y), float(g)) == (5.0625, 13.5)  # TF's values: x^4 and 4 x^3
    y, g = f(tf.constant(20.0), m)  # the loop stops on its condition first: y = x^2
    assert (float(y), float(g)) == (400.0, 40.0)


def test_loop_reading_outer_tensors_and_variables():
    w = tf.Variable([[0.5, -0.3], [0.2, 0.8]], dtype=tf.float64)

    def run(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            h = tf.tanh(x)  # computed outside the loop, read inside
            state = x

            def body(i, s):
                return i + 1, tf.tanh(tf.matmul(s, w) + h)

            _, state = tf.while_loop(lambda i, s: i < n, body, (0, state))
            loss = tf.reduce_sum(state**2)
        return tape.gradient(loss, [x, w])

    x = np.array([[0.1, -0.4], [0.7, 0.2]])
    gx, gw = tf.function(run)(tf.constant(x), tf.constant(3))
    ex, ew = run(tf.constant(x), tf.constant(3))
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-12)

    def loss_of_x(a):
        s = np.tanh(a)
        h, st = s, a
        for _ in range(3):
            st = np.tanh(st @ w.numpy() + h)
        return float(np.sum(st**2))

    np.testing.assert_allclose(gx.numpy(), _fd(loss_of_x, x), rtol=1e-6)


def test_if_inside_a_loop_and_gradient_of_autograph_if():
    def run(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            s = x
            for _ in tf.range(n):
                if tf.reduce_sum(s) > 1.0:
                    s = s * 0.5
                else:
                    s = s * s + 1.0
        return s, tape.gradient(s, x)

    f = tf.function(run)
    for v in (0.2, 3.0):
        s, g = f(tf.constant(v), tf.constant(4))
        se, ge = run(tf.constant(v), tf.constant(4))
        assert float(s) == pytest.approx(float(se)) and float(g) == pytest.approx(float(ge))


def test_autograph_if_gradient_keeps_the_names_after_it():
    # The gradient re-traces the branches after the `if`; `y` must still be the if's result.
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            if x > 0:
                y = x * x
            else:
                y = x
        g = tape.gradient(y, x)
        return y, g

    assert [float(t) for t in f(tf.constant(3.0))] == [9.0, 6.0]  # TF's values
    assert [float(t) for t in f(tf.constant(-3.0))] == [-3.0, 1.0]


def test_autograph_loop_gradient_keeps_the_names_after_it():
    @tf.function
    def f(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            s = x
            for _ in tf.range(n):
                s = s * x
        g = tape.gradient(s, x)
        return s, g  # `s` is the loop's result, not a tensor of the gradient's program

    s, g = f(tf.constant(2.0), tf.constant(3))
    assert (float(s), float(g)) == (16.0, 32.0)


def test_tape_outside_a_function_with_a_loop():
    w = tf.Variable(1.5)

    @tf.function
    def f(x, n):
        (y,) = tf.while_loop(lambda y: tf.abs(y) < 1e4, lambda y: [y * w + x], [x],
                             maximum_iterations=n)  # fmt: skip
        return y

    x = tf.constant(0.5)
    with tf.GradientTape() as tape:
        y = f(x, tf.constant(3))
    # three iterations from y = x: y = x (w^3 + w^2 + w + 1); dy/dw = x (3 w^2 + 2 w + 1)
    assert float(y) == pytest.approx(0.5 * (1.5**3 + 1.5**2 + 1.5 + 1))
    assert float(tape.gradient(y, w)) == pytest.approx(0.5 * (3 * 1.5**2 + 2 * 1.5 + 1))


def test_training_a_recurrence_in_tf_function_matches_eager():
    rng = np.random.default_rng(0)
    xs = tf.constant(rng.standard_normal((6, 4, 3)).astype(np.float32))  # time, batch, features
    target = tf.constant(rng.standard_normal((4, 5)).astype(np.float32))

    def make():
        wx = tf.Variable(rng_w.standard_normal((3, 5)).astype(np.float32) * 0.3)
        wh = tf.Variable(rng_w.standard_normal((5, 5)).astype(np.float32) * 0.3)
        return wx, wh

    def step_fn(wx, wh):
        def step(xs, target):
            with tf.GradientTape() as tape:
                h = tf.zeros([4, 5])
                for t in tf.range(tf.shape(xs)[0]):
                    h = tf.tanh(tf.matmul(tf.gather(xs, t), wx) + tf.matmul(h, wh))
                loss = tf.reduce_mean((h - target) ** 2)
            for v, g in zip((wx, wh), tape.gradient(loss, [wx, wh])):
                v.assign_sub(0.5 * g)
            return loss

        return step

    rng_w = np.random.default_rng(1)
    eager_vars = make()
    rng_w = np.random.default_rng(1)
    traced_vars = make()
    eager, traced = step_fn(*eager_vars), tf.function(step_fn(*traced_vars))
    for _ in range(5):
        le, lt = eager(xs, target), traced(xs, target)
        assert float(lt) == pytest.approx(float(le), rel=1e-5)
    for a, b in zip(eager_vars, traced_vars):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert traced.experimental_get_tracing_count() == 1


def test_second_order_through_a_traced_loop_says_unsupported():
    @tf.function
    def f(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                (y,) = tf.while_loop(lambda y: y < 10.0, lambda y: [y * x], [x])
            dy = inner.gradient(y, x)
        return outer.gradient(dy, x)

    with pytest.raises(tf.errors.UnimplementedError, match="Second-order gradients"):
        f(tf.constant(2.0))


def test_outer_tape_around_a_function_that_takes_a_loop_gradient():
    w = tf.Variable(1.5)

    @tf.function
    def f(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            (y,) = tf.while_loop(lambda y: y < 1e4, lambda y: [y * w + x], [x],
                                 maximum_iterations=n)  # fmt: skip
        return y, tape.gradient(y, x)

    x = tf.constant(0.5)
    f(x, tf.constant(3))  # traced outside any tape; the call below replays it
    with tf.GradientTape() as outer:
        y, dydx = f(x, tf.constant(3))
    assert float(dydx) == pytest.approx(1.5**3 + 1.5**2 + 1.5 + 1)
    assert float(outer.gradient(y, w)) == pytest.approx(0.5 * (3 * 1.5**2 + 2 * 1.5 + 1))
