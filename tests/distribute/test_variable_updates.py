"""State changes go through `Variable._update`: in-place optimizers keep mirrored copies equal."""

import operator

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.distribute.train_step import distributed_train_step
from layerflow._src.distribute.values import PerReplica


@pytest.fixture
def strategy(two_cpus):
    return tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])


def _copies(v):
    return [t.numpy() for t in v.values]


def test_update_mutates_in_place_and_returns_the_variable():
    v = tf.Variable([1.0, 2.0])
    before = v._data
    assert v._update(operator.imul, np.float32(3.0)) is v
    assert v._data is before  # no new buffer: optimizers allocate nothing
    np.testing.assert_array_equal(v.numpy(), [3.0, 6.0])
    v._write(np.array([5.0, 7.0], np.float32))  # whole-value writes go through it too
    np.testing.assert_array_equal(v.numpy(), [5.0, 7.0])


class InPlaceSGD(tf.keras.optimizers.Optimizer):
    """A user's optimizer that writes the variable's array in place through `_update`."""

    def __init__(self, learning_rate=0.25, name="InPlaceSGD", **kwargs):
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)

    def update_step(self, gradient, variable):
        step = gradient.numpy() * np.float32(float(self.learning_rate))
        variable._update(operator.isub, step)


def test_in_place_custom_optimizer_keeps_every_copy_equal(strategy):
    with strategy.scope():
        w = tf.Variable([1.0, 1.0])
    opt = InPlaceSGD()
    distributed_train_step(
        strategy,
        lambda x: tf.reduce_sum(w * x),
        [w],
        opt.apply_gradients,
        PerReplica([1.0, 3.0]),
    )
    # One update of the summed gradient (0.5 * 1 + 0.5 * 3), on both copies.
    for copy in _copies(w):
        np.testing.assert_allclose(copy, [0.5, 0.5])


def test_in_place_update_inside_run_is_refused_and_changes_nothing(strategy):
    with strategy.scope():
        w = tf.Variable([1.0, 1.0])
    with pytest.raises(ValueError, match="inside strategy.run.*merge_call"):
        strategy.run(lambda: w._update(operator.isub, np.float32(1.0)))
    for copy in _copies(w):
        np.testing.assert_array_equal(copy, [1.0, 1.0])


OPTIMIZERS = [
    lambda: tf.keras.optimizers.SGD(0.1),
    lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    lambda: tf.keras.optimizers.SGD(0.1, momentum=0.5, weight_decay=0.01),
    lambda: tf.keras.optimizers.Adam(0.05, amsgrad=True),
    lambda: tf.keras.optimizers.AdamW(0.05),
    lambda: tf.keras.optimizers.RMSprop(0.05, momentum=0.5, centered=True),
    lambda: tf.keras.optimizers.Adagrad(0.1),
]


@pytest.mark.parametrize("make_optimizer", OPTIMIZERS)
def test_apply_gradients_inside_run_sums_once_and_keeps_copies_equal(strategy, make_optimizer):
    """TF's custom loop: `optimizer.apply_gradients` inside `strategy.run` all-reduces the
    replicas' gradients and applies them once; every copy then equals one-device training."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    init = rng.normal(size=(3,)).astype(np.float32)
    ref_w, ref_opt = tf.Variable(init), make_optimizer()
    with strategy.scope():
        w = tf.Variable(init)
        opt = make_optimizer()

    def loss_of(v, xs):
        return tf.reduce_sum(tf.tanh(tf.linalg.matvec(xs, v))) / 8.0

    def replica_step(xs):
        with tf.GradientTape() as tape:
            loss = loss_of(w, xs)
        opt.apply_gradients([(tape.gradient(loss, w), w)])

    for batch in strategy.experimental_distribute_dataset([x] * 3):
        strategy.run(replica_step, args=(batch,))
        with tf.GradientTape() as tape:
            loss = loss_of(ref_w, tf.constant(x))
        ref_opt.apply_gradients([(tape.gradient(loss, ref_w), ref_w)])
    assert int(opt.iterations) == 3
    first, second = _copies(w)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, ref_w.numpy(), rtol=1e-5, atol=1e-6)
