"""`Model.build(input_shape)` on a subclassed model: a symbolic call, unknown dimensions stay
unknown (issue 9); a call that needs values falls back to running on zeros."""

import numpy as np

import layerflow as tf


class _Stacked(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(4)

    def call(self, x):
        return tf.stack([self.dense(x), self.dense(x)])


def test_build_with_an_unknown_batch_keeps_it_unknown_behind_a_stack():
    model = _Stacked()
    model.build((None, 3))
    assert model.built and model.dense.kernel.shape == (3, 4)
    assert tuple(model.compute_output_shape((None, 3))) == (2, None, 4)
    assert tuple(model.output_shape) == (2, None, 4)
    # The real call agrees on two batch sizes.
    for n in (2, 5):
        assert model(np.ones((n, 3), np.float32)).shape == (2, n, 4)


class _NeedsValues(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(2)

    def call(self, x):
        y = self.dense(x)
        while tf.reduce_sum(y) > 1e9:  # Python control flow on a value
            y = y / 2
        return y


def test_a_call_that_needs_values_still_builds_and_reports_the_shape():
    model = _NeedsValues()
    model.build((None, 5))
    assert model.dense.kernel.shape == (5, 2)
    assert tuple(model.output_shape) == (None, 2)
