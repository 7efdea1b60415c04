"""The first call of an unbuilt model from several threads builds every layer exactly once."""

import threading
import time

import numpy as np
import pytest

import layerflow as tf

THREADS = 8


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


class SlowBuild(tf.keras.layers.Layer):
    """Counts its builds and sleeps inside build, so racing threads overlap there."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.builds = 0

    def build(self, input_shape):
        self.builds += 1
        time.sleep(0.05)
        self.w = self.add_weight("w", (input_shape[-1], self.units), initializer="ones")

    def call(self, x):
        return tf.matmul(x, self.w)


class Block(tf.keras.layers.Layer):
    """A layer holding layers: its own build runs while the inner ones build in call."""

    def __init__(self):
        super().__init__()
        self.builds = 0
        self.inner = [SlowBuild(3), SlowBuild(2)]

    def build(self, input_shape):
        self.builds += 1
        time.sleep(0.05)
        self.scale = self.add_weight("scale", (), initializer="ones")

    def call(self, x):
        for layer in self.inner:
            x = layer(x)
        return x * self.scale


def _race(model, x):
    barrier = threading.Barrier(THREADS)
    outputs, errors = [None] * THREADS, []

    def work(i):
        try:
            barrier.wait()
            outputs[i] = model(x).numpy()
        except BaseException as err:  # noqa: BLE001 - reported by the test
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock)"
    assert not errors, errors
    return outputs


@pytest.mark.parametrize("kind", ["sequential", "subclassed", "nested"])
def test_first_call_from_many_threads_builds_each_layer_once(kind):
    if kind == "sequential":
        layers = [SlowBuild(4), tf.keras.layers.Dense(3), SlowBuild(2)]
        model = tf.keras.Sequential(layers)
    elif kind == "nested":
        block = Block()
        layers = [block, *block.inner]
        model = tf.keras.Sequential([block, SlowBuild(5)])
        layers.append(model.layers[-1])
    else:

        class Net(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.a, self.b = SlowBuild(4), SlowBuild(2)

            def call(self, x):
                return self.b(self.a(x))

        model = Net()
        layers = [model.a, model.b]
    x = np.ones((2, 5), np.float32)
    outputs = _race(model, x)
    for layer in layers:
        if hasattr(layer, "builds"):
            assert layer.builds == 1, (layer.name, layer.builds)
    # One set of weights, created once: no duplicates, and every thread used the same ones.
    names = [w.name for w in model.weights]
    assert len(names) == len(set(names)) and len(model.weights) == len(
        {id(w) for w in model.weights}
    )
    for out in outputs[1:]:
        np.testing.assert_array_equal(out, outputs[0])
    np.testing.assert_array_equal(model(x).numpy(), outputs[0])


def test_a_built_layer_keeps_no_lock_and_can_still_be_copied():
    import copy
    import pickle

    layer = SlowBuild(2)
    _race(layer, np.ones((1, 3), np.float32))
    assert "_build_lock" not in layer.__dict__
    assert copy.deepcopy(layer).builds == 1
    assert pickle.loads(pickle.dumps(tf.keras.layers.Dense(2))).units == 2


def test_a_failed_build_can_be_retried_by_the_next_call():
    class FailsOnce(SlowBuild):
        def build(self, input_shape):
            self.builds += 1
            if self.builds == 1:
                raise ValueError("first build fails")
            super().build(input_shape)

    layer = FailsOnce(2)
    with pytest.raises(ValueError, match="first build fails"):
        layer(np.ones((1, 3), np.float32))
    assert not layer.built
    assert layer(np.ones((1, 3), np.float32)).shape == (1, 2) and layer.built
