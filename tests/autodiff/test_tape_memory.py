"""A non-persistent tape lets go of what its backward walk no longer needs (autodiff/tape.py).

Each node is dropped (inputs, output, residuals) as soon as its gradient has run, and each
accumulated gradient as soon as its consumer has run, so a training step does not hold every
activation and gradient until `tape.gradient` returns. A persistent tape keeps everything.
Weak references to the arrays tell, from inside a later gradient, what is still alive.
"""

import gc
import weakref

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.op import op
from layerflow._src.ops import conv_kernels

seen: list = []


@op("probe_test")
def probe(xp, x):
    return x.copy()


@probe.grad
def _(dy, out, x):
    # Runs after the gradients of everything computed from `x`: report what is still alive.
    gc.collect()
    seen.append({name: ref() is not None for name, ref in probe.watch.items()})
    return tf.multiply(dy, 1.0)


probe.watch = {}


@pytest.fixture(autouse=True)
def _reset():
    seen.clear()
    probe.watch.clear()
    yield
    probe.watch.clear()


def _chain(persistent):
    x = tf.Variable(np.linspace(0.1, 1.0, 1000))
    tape = tf.GradientTape(persistent=persistent)
    with tape:
        a = probe(x)  # its gradient runs last
        b = tf.exp(a)  # exp's gradient reads its output b
        c = tf.sin(b)  # sin's gradient reads its input b
        d = probe(c)  # its gradient makes a fresh gradient array for c
        loss = tf.reduce_sum(d * d)
    probe.watch.update(b=weakref.ref(b._data), c=weakref.ref(c._data))
    del a, b, c, d
    return tape, x, loss


def test_a_non_persistent_tape_drops_activations_as_the_walk_passes_them():
    tape, x, loss = _chain(persistent=False)
    g = tape.gradient(loss, x)
    # The last probe's gradient (the first to run) still sees both activations alive; by the
    # time the first probe's gradient runs, exp and sin have run and both are gone.
    assert seen == [{"b": True, "c": True}, {"b": False, "c": False}]
    xs = np.linspace(0.1, 1.0, 1000)
    expected = 2 * np.sin(np.exp(xs)) * np.cos(np.exp(xs)) * np.exp(xs)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)


def test_a_persistent_tape_keeps_everything_and_can_be_asked_again():
    tape, x, loss = _chain(persistent=True)
    g1 = tape.gradient(loss, x)
    assert seen == [{"b": True, "c": True}, {"b": True, "c": True}]
    g2 = tape.gradient(loss, x)
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    del tape
    gc.collect()
    assert probe.watch["b"]() is None and probe.watch["c"]() is None


def test_a_conv_output_is_released_before_the_conv_gradient_runs(monkeypatch):
    """conv's gradient does not read its output (`grad_uses_out=False`; the fused relu keeps a
    bit mask): once the op that consumed the output has run, nothing holds it."""
    alive = []
    real = conv_kernels.conv_backward

    def spy(*args, **kwargs):
        gc.collect()
        alive.append(ref() is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(conv_kernels, "conv_backward", spy)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)))
    layer = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
    layer.build(x.shape)
    results = []
    for persistent in (False, True):
        with tf.GradientTape(persistent=persistent) as tape:
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        ref = weakref.ref(y._data)
        del y
        results.append(tape.gradient(loss, layer.trainable_variables))
        del tape
    assert alive == [False, True]
    for a, b in zip(*results):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
