"""The built-in optimizers' `apply_gradients` is traced into a compiled step (no host step):
compiled and eager fit give the same weights and `iterations`, and the per-step scalars
(learning rate, schedules, a callback's changes, bias corrections, EMA) are read at every
call, never frozen by the trace. Python optimizers still run as a host step."""

import numpy as np
import pytest

import layerflow as tf

RNG = np.random.default_rng(3)
X = RNG.standard_normal((48, 5)).astype(np.float32)
Y = (X @ RNG.standard_normal((5, 1)) + 0.1).astype(np.float32)


def _host_step_names(function):
    names = []
    for concrete in {id(c): c for c in function._traces.values()}.values():
        names += [getattr(s.fn, "__name__", "") for s in concrete._plan.program_steps
                  if s.kind == "host"]  # fmt: skip
    return names


def _fit(make_optimizer, eager, epochs=3, callbacks=(), steps_per_execution=1):
    tf.keras.utils.set_random_seed(11)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((5,)),
            tf.keras.layers.Dense(6, activation="tanh"),
            tf.keras.layers.Dense(1),
        ]  # fmt: skip
    )
    opt = make_optimizer()
    model.compile(opt, "mse", run_eagerly=eager, steps_per_execution=steps_per_execution)
    hist = model.fit(X, Y, batch_size=16, epochs=epochs, shuffle=False, verbose=0,
                     callbacks=list(callbacks))  # fmt: skip
    return model, opt, hist.history


def _same(make_optimizer, **kwargs):
    """Compiled and eager fit agree bit for bit; returns the compiled run."""
    em, eopt, ehist = _fit(make_optimizer, True, **kwargs)
    cm, copt, chist = _fit(make_optimizer, False, **kwargs)
    for a, b in zip(cm.get_weights(), em.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(copt.variables, eopt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(copt.iterations) == int(eopt.iterations) > 0
    np.testing.assert_array_equal(chist["loss"], ehist["loss"])
    return cm, copt


OPTIMIZERS = {
    "sgd": lambda: tf.keras.optimizers.SGD(0.05),
    "momentum": lambda: tf.keras.optimizers.SGD(0.05, momentum=0.9),
    "nesterov": lambda: tf.keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "adam": lambda: tf.keras.optimizers.Adam(0.01),
    "amsgrad": lambda: tf.keras.optimizers.Adam(0.01, amsgrad=True),
    "adamw": lambda: tf.keras.optimizers.AdamW(0.01, weight_decay=0.1),
    "rmsprop": lambda: tf.keras.optimizers.RMSprop(0.01),
    "rmsprop_centered_momentum": lambda: tf.keras.optimizers.RMSprop(
        0.01, momentum=0.5, centered=True
    ),
    "adagrad": lambda: tf.keras.optimizers.Adagrad(0.1),
    "adamax": lambda: tf.keras.optimizers.Adamax(0.01),
    "nadam": lambda: tf.keras.optimizers.Nadam(0.01),
    "adadelta": lambda: tf.keras.optimizers.Adadelta(1.0),
    "ftrl": lambda: tf.keras.optimizers.Ftrl(0.1, l1_regularization_strength=0.01, beta=0.1),
    "lion": lambda: tf.keras.optimizers.Lion(0.001),
    "clipnorm": lambda: tf.keras.optimizers.Adam(0.01, clipnorm=0.05),
    "global_clipnorm": lambda: tf.keras.optimizers.SGD(0.05, global_clipnorm=0.1),
    "clipvalue": lambda: tf.keras.optimizers.RMSprop(0.01, clipvalue=0.01),
    "ema": lambda: tf.keras.optimizers.SGD(
        0.05, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=2
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_fit_traces_apply_gradients_and_matches_eager(name):
    model, _ = _same(OPTIMIZERS[name])
    names = _host_step_names(model.train_function.function)
    assert "_host_apply_gradients" not in names
    assert "apply_gradients" not in names


def test_a_learning_rate_schedule_is_evaluated_at_every_compiled_step():
    def make():
        schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5)
        return tf.keras.optimizers.Adam(schedule)

    _, opt = _same(make, steps_per_execution=2)
    assert int(opt.iterations) == 9
    assert float(opt.learning_rate) == pytest.approx(0.1 * 0.5**9)


def test_a_callback_changing_the_learning_rate_takes_effect_in_compiled_fit():
    def schedule(epoch, lr):
        return 0.2 if epoch == 0 else lr * 0.1

    def fit(eager):
        cb = tf.keras.callbacks.LearningRateScheduler(schedule)
        return _fit(lambda: tf.keras.optimizers.SGD(0.01, momentum=0.5), eager, callbacks=[cb])

    (em, _, _), (cm, copt, _) = fit(True), fit(False)
    for a, b in zip(cm.get_weights(), em.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert float(copt.learning_rate) == pytest.approx(0.002)
    # A frozen learning rate (0.01 from the trace) gives other weights than the changed one.
    frozen, _, _ = _fit(lambda: tf.keras.optimizers.SGD(0.01, momentum=0.5), False)
    assert not np.allclose(frozen.get_weights()[0], cm.get_weights()[0])


def test_setting_the_learning_rate_between_compiled_steps_is_read_by_the_next_step():
    v = tf.Variable([1.0, 2.0])
    opt = tf.keras.optimizers.SGD(0.5)

    @tf.function
    def step():
        return opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])

    step()
    opt.learning_rate = 0.25
    step()
    np.testing.assert_allclose(v.numpy(), [0.25, 1.25])
    assert int(opt.iterations) == 2
    assert step.experimental_get_tracing_count() == 1
    assert _host_step_names(step) == ["run"]  # the step's scalars, read at every call


class PlainSGD(tf.keras.optimizers.Optimizer):
    def __init__(self, learning_rate=0.1, name="PlainSGD", **kwargs):
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)

    def update_step(self, gradient, variable):
        variable.assign_sub(gradient * float(self.learning_rate))


def test_a_python_optimizer_still_runs_as_a_host_step_at_every_call():
    v = tf.Variable([1.0])
    opt = PlainSGD(0.5)

    @tf.function
    def step():
        opt.apply_gradients([(tf.constant([1.0]), v)])

    step()
    opt.learning_rate = 0.25
    step()
    np.testing.assert_allclose(v.numpy(), [0.25])
    assert _host_step_names(step) == ["_host_apply_gradients"]


def test_a_subclass_overriding_a_rule_is_a_host_step():
    class LoggedSGD(tf.keras.optimizers.SGD):
        def _apply(self, clipped, grads, variables, lr):
            self.seen = float(lr)
            super()._apply(clipped, grads, variables, self._step_scalars())

    v = tf.Variable([1.0])
    opt = LoggedSGD(0.5)

    @tf.function
    def step():
        opt.apply_gradients([(tf.constant([1.0]), v)])

    step()
    assert opt.seen == 0.5 and _host_step_names(step) == ["_host_apply_gradients"]


def test_adafactor_runs_as_a_host_step_and_matches_eager():
    model, _ = _same(lambda: tf.keras.optimizers.Adafactor(0.1))
    assert _host_step_names(model.train_function.function) == ["_host_apply_gradients"]


def test_mirrored_variables_in_a_traced_step_update_every_copy_as_eager(two_cpus):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
        opt = tf.keras.optimizers.SGD(0.5, momentum=0.5)

    def replica_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * v)
        opt.apply_gradients([(tape.gradient(loss, v), v)])

    @tf.function
    def step():
        strategy.run(replica_step)

    @tf.function
    def cross_replica_step():
        replica_step()

    step()
    step()  # the values below are those of the same steps run eagerly
    with strategy.scope():
        cross_replica_step()
    np.testing.assert_array_equal(v.numpy(), [-1.5, -3.0])
    assert [c.numpy().tolist() for c in v.values] == [[-1.5, -3.0]] * 2
    assert int(opt.iterations) == 3
