"""Optimizers against hand-computed update rules, in place, with clipping, decay, schedules."""

import numpy as np
import pytest

import layerflow as tf

G = [np.array([0.5, -1.0, 2.0], np.float32), np.array([-0.25, 0.5, 1.0], np.float32),
     np.array([1.0, 1.0, -3.0], np.float32)]  # fmt: skip
W0 = np.array([1.0, 2.0, -1.0], np.float32)


def _run(opt, steps=3):
    v = tf.Variable(W0.copy())
    before = v._data
    for g in G[:steps]:
        opt.apply_gradients([(tf.constant(g), v)])
    assert v._data is before  # updated in place, never rebound
    return v.numpy()


def test_sgd_plain_momentum_nesterov():
    np.testing.assert_allclose(_run(tf.keras.optimizers.SGD(0.1)), W0 - 0.1 * sum(G), rtol=1e-6)
    w, m = W0.astype(np.float64), np.zeros(3)
    wn, mn = w.copy(), np.zeros(3)
    for g in G:
        m = 0.9 * m - 0.1 * g
        w = w + m
        mn = 0.9 * mn - 0.1 * g
        wn = wn + 0.9 * mn - 0.1 * g
    np.testing.assert_allclose(_run(tf.keras.optimizers.SGD(0.1, momentum=0.9)), w, rtol=1e-5)
    got = _run(tf.keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True))
    np.testing.assert_allclose(got, wn, rtol=1e-5)


def test_adam_and_amsgrad():
    def ref(amsgrad):
        w, m, v, vh = W0.astype(np.float64), np.zeros(3), np.zeros(3), np.zeros(3)
        for t, g in enumerate(G, 1):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            vh = np.maximum(vh, v)
            alpha = 0.01 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
            w = w - alpha * m / (np.sqrt(vh if amsgrad else v) + 1e-7)
        return w

    np.testing.assert_allclose(_run(tf.keras.optimizers.Adam(0.01)), ref(False), rtol=1e-5)
    np.testing.assert_allclose(
        _run(tf.keras.optimizers.Adam(0.01, amsgrad=True)), ref(True), rtol=1e-5
    )


def test_adamw_decays_before_the_adam_step():
    w, m, v = W0.astype(np.float64), np.zeros(3), np.zeros(3)
    for t, g in enumerate(G, 1):
        w = w - 0.01 * 0.1 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.01 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t) * m / (np.sqrt(v) + 1e-7)
    got = _run(tf.keras.optimizers.AdamW(0.01, weight_decay=0.1))
    np.testing.assert_allclose(got, w, rtol=1e-5)


def test_rmsprop_plain_centered_momentum():
    def ref(centered, momentum):
        w, ms, mg, mom = W0.astype(np.float64), np.zeros(3), np.zeros(3), np.zeros(3)
        for g in G:
            ms = 0.9 * ms + 0.1 * g * g
            mg = 0.9 * mg + 0.1 * g
            denom = ms - mg * mg if centered else ms
            inc = 0.01 * g / np.sqrt(denom + 1e-7)
            mom = momentum * mom + inc
            w = w - (mom if momentum else inc)
        return w

    for centered, momentum in ((False, 0.0), (True, 0.0), (False, 0.5)):
        opt = tf.keras.optimizers.RMSprop(0.01, centered=centered, momentum=momentum)
        np.testing.assert_allclose(_run(opt), ref(centered, momentum), rtol=1e-5)


def test_adagrad():
    w, acc = W0.astype(np.float64), np.full(3, 0.1)
    for g in G:
        acc = acc + g * g
        w = w - 0.1 * g / np.sqrt(acc + 1e-7)
    np.testing.assert_allclose(_run(tf.keras.optimizers.Adagrad(0.1)), w, rtol=1e-5)


def test_clipping_variants():
    g = np.array([3.0, 4.0], np.float32)  # norm 5

    def step(**kw):
        v = tf.Variable([0.0, 0.0])
        tf.keras.optimizers.SGD(1.0, **kw).apply_gradients([(tf.constant(g), v)])
        return v.numpy()

    np.testing.assert_allclose(step(clipnorm=1.0), [-0.6, -0.8], rtol=1e-6)
    np.testing.assert_allclose(step(clipvalue=3.5), [-3.0, -3.5], rtol=1e-6)
    np.testing.assert_allclose(step(global_clipnorm=2.5), [-1.5, -2.0], rtol=1e-6)
    with pytest.raises(ValueError, match="at most one"):
        tf.keras.optimizers.SGD(clipnorm=1.0, clipvalue=1.0)


def test_none_grads_skipped_iterations_slots_and_errors():
    a, b = tf.Variable([1.0]), tf.Variable([2.0])
    opt = tf.keras.optimizers.Adam()
    opt.apply_gradients([(tf.constant([1.0]), a), (None, b)])
    assert int(opt.iterations) == 1 and float(b[0]) == 2.0
    assert len(opt.variables) == 1 + 2  # iterations, m and v for `a`
    assert len(opt.variables()) == 3  # TF 2.10's method form works too
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, a)])
    with pytest.raises(ValueError, match="shape"):
        opt.apply_gradients([(tf.constant([1.0, 2.0]), a)])


def test_minimize_with_callable_and_tape():
    v = tf.Variable(3.0)
    opt = tf.keras.optimizers.SGD(0.1)
    opt.minimize(lambda: v * v, [v])
    assert float(v) == pytest.approx(3.0 - 0.1 * 6.0)
    with tf.GradientTape() as tape:
        loss = v * v
    opt.minimize(loss, [v], tape=tape)
    assert float(v) == pytest.approx(2.4 - 0.1 * 4.8)
    with pytest.raises(ValueError, match="tape"):
        opt.minimize(loss, [v])


def test_constraint_is_applied_after_the_update():
    v = tf.Variable([1.0, -1.0], constraint=lambda x: tf.maximum(x, 0.0))
    tf.keras.optimizers.SGD(1.0).apply_gradients([(tf.constant([0.5, 0.5]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5, 0.0])


def test_schedules_and_learning_rate_setter():
    s = tf.keras.optimizers.schedules
    assert float(s.ExponentialDecay(0.1, 10, 0.5)(20)) == pytest.approx(0.025)
    assert float(s.ExponentialDecay(0.1, 10, 0.5, staircase=True)(15)) == pytest.approx(0.05)
    pw = s.PiecewiseConstantDecay([2, 4], [1.0, 0.5, 0.1])
    assert [float(pw(k)) for k in (0, 2, 3, 5)] == pytest.approx([1.0, 1.0, 0.5, 0.1])
    cd = s.CosineDecay(1.0, 10, alpha=0.1)
    assert float(cd(5)) == pytest.approx(0.1 + 0.9 * 0.5)
    assert float(cd(20)) == pytest.approx(0.1)
    v = tf.Variable([0.0])
    opt = tf.keras.optimizers.SGD(pw)
    for _ in range(4):
        opt.apply_gradients([(tf.constant([1.0]), v)])
    # steps 0, 1, 2 use lr 1.0; step 3 uses 0.5
    assert float(v[0]) == pytest.approx(-3.5)
    opt2 = tf.keras.optimizers.SGD(0.1)
    opt2.learning_rate = 0.5
    assert float(opt2.learning_rate) == 0.5 and float(opt2.lr) == 0.5
    with pytest.raises(TypeError, match="schedule"):
        opt.learning_rate = 0.1


def test_user_subclass_and_get_config():
    class SignSGD(tf.keras.optimizers.Optimizer):
        def __init__(self, learning_rate=0.1, name="SignSGD", **kwargs):
            super().__init__(name=name, **kwargs)
            self._learning_rate = self._build_learning_rate(learning_rate)

        def build(self, var_list):
            super().build(var_list)
            for v in var_list:
                self.add_variable_from_reference(v, "count")

        def update_step(self, gradient, variable):
            variable.assign_sub(tf.sign(gradient) * self.learning_rate)
            self.get_slot(variable, "count").assign_add(tf.ones_like(variable))

    v = tf.Variable([1.0, 1.0])
    opt = SignSGD()
    opt.apply_gradients([(tf.constant([3.0, -0.1]), v)])
    np.testing.assert_allclose(v.numpy(), [0.9, 1.1], rtol=1e-6)
    assert opt.get_slot(v, "count").numpy().tolist() == [1.0, 1.0]
    conf = tf.keras.optimizers.Adam(0.003, beta_1=0.8).get_config()
    again = tf.keras.optimizers.Adam.from_config(conf)
    assert again.beta_1 == 0.8 and float(again.learning_rate) == pytest.approx(0.003)
    assert isinstance(tf.keras.optimizers.get("sgd"), tf.keras.optimizers.SGD)
    assert tf.optimizers.Adam is tf.keras.optimizers.Adam
    assert tf.keras.optimizers.legacy.SGD is tf.keras.optimizers.SGD


def test_explicit_build_is_not_repeated_by_apply_gradients():
    v = tf.Variable([1.0, 2.0])
    opt = tf.keras.optimizers.Adam()
    opt.build([v])
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    assert len(opt.variables) == 3  # iterations, m, v: no duplicate slots
