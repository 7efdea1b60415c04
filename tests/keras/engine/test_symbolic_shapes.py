"""Symbolic shapes are computed from each op's output-spec rule, never guessed from placeholders.

Each case builds `f(Input)` symbolically and checks the symbolic shape against the real output
of the same function on two batch sizes: every known axis equals the real size on both, and
the batch-dependent axes are exactly the unknown ones.
"""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff import specs


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


def _real_shapes(fn, shape, dtype="float32"):
    rng = np.random.default_rng(0)
    out = []
    for batch in (4, 7):
        data = rng.standard_normal((batch, *shape)).astype(dtype)
        out.append(tuple(fn(tf.constant(data)).shape))
    return out


def _symbolic_shape(fn, shape, dtype="float32"):
    return tuple(fn(tf.keras.Input(shape, dtype=dtype)).shape)


def _expected(real_a, real_b):
    assert len(real_a) == len(real_b)
    return tuple(a if a == b else None for a, b in zip(real_a, real_b))


CASES = {
    "elementwise/broadcast": (lambda x: x * tf.ones((1, 5)) + 1.0, (1,)),
    "activation": (lambda x: tf.nn.relu(tf.sigmoid(x)), (3,)),
    "softmax": (lambda x: tf.nn.softmax(x, axis=1), (3, 2)),
    "reduce": (lambda x: tf.reduce_sum(x, axis=1), (3, 2)),
    "reduce keepdims": (lambda x: tf.reduce_mean(x, axis=-1, keepdims=True), (3, 2)),
    "reduce batch": (lambda x: tf.reduce_max(x, axis=0), (3,)),
    "matmul": (lambda x: tf.matmul(x, tf.ones((3, 6))), (3,)),
    "matmul transpose_a": (lambda x: tf.matmul(x, x, transpose_a=True), (3,)),
    "reshape -1": (lambda x: tf.reshape(x, (-1, 2, 3)), (6,)),
    "reshape known": (lambda x: tf.reshape(x, (2, -1)), (6,)),
    "transpose": (lambda x: tf.transpose(x, (2, 0, 1)), (3, 2)),
    "concat": (lambda x: tf.concat([x, x * 2.0], axis=0), (3,)),
    "concat last": (lambda x: tf.concat([x, x], axis=-1), (3,)),
    "stack": (lambda x: tf.stack([x, x]), (3,)),
    "stack axis 1": (lambda x: tf.stack([x, x, x], axis=1), (3,)),
    "expand_dims": (lambda x: tf.expand_dims(x, 1), (3,)),
    "squeeze": (lambda x: tf.squeeze(x, 1), (1, 3)),
    "gather": (lambda x: tf.gather(x, [0, 2, 2, 1], axis=1), (3,)),
    "getitem": (lambda x: x[:, 1:, None], (3,)),
    "getitem batch slice": (lambda x: x[1:], (3,)),
    "getitem int": (lambda x: x[0], (3,)),
    "cast": (lambda x: tf.cast(x, tf.int32), (3,)),
    "tile": (lambda x: tf.tile(x, (2, 3)), (3,)),
    "repeat": (lambda x: tf.repeat(x, 2, axis=1), (3,)),
    "where": (lambda x: tf.where(x > 0, x, tf.zeros((1, 3))), (3,)),
    "one_hot argmax": (lambda x: tf.one_hot(tf.argmax(x, axis=1), 5), (3,)),
    "conv2d": (lambda x: tf.nn.conv2d(x, tf.ones((3, 3, 2, 4)), 2, "SAME"), (7, 5, 2)),
    "max_pool": (lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), (6, 5, 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_symbolic_shape_matches_the_real_shape_on_two_batch_sizes(name):
    fn, shape = CASES[name]
    real_a, real_b = _real_shapes(fn, shape)
    assert _symbolic_shape(fn, shape) == _expected(real_a, real_b)


def test_stack_of_an_input_puts_the_unknown_batch_on_axis_1():
    x = tf.keras.Input(shape=(3,))
    assert tuple(tf.stack([x, x]).shape) == (2, None, 3)

    class Stacked(tf.keras.layers.Layer):
        def call(self, inputs):
            return tf.stack([inputs, inputs])

    out = Stacked()(x)
    assert tuple(out.shape) == (2, None, 3)
    model = tf.keras.Model(x, out)
    assert tuple(model(np.ones((5, 3), np.float32)).shape) == (2, 5, 3)


def test_a_custom_layer_is_traced_through_its_sublayers_without_recording_nodes():
    class Block(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(4)

        def call(self, inputs):
            h = self.dense(inputs)
            return tf.concat([h, tf.transpose(tf.stack([h, h]), (1, 0, 2))[:, 0]], -1)

    block = Block()
    out = block(tf.keras.Input((3,)))
    assert tuple(out.shape) == (None, 8)
    assert block.dense._inbound_nodes == []  # traced, not called as a node
    assert tuple(block.dense.kernel.shape) == (3, 4)


def test_a_layer_that_needs_values_falls_back_to_two_sizes():
    class Branchy(tf.keras.layers.Layer):
        def call(self, inputs):
            if float(tf.reduce_sum(inputs)) >= 0:  # needs values: cannot be traced
                return tf.stack([inputs, inputs])
            return inputs

    out = Branchy()(tf.keras.Input((3,)))
    assert tuple(out.shape) == (2, None, 3)  # the old guess gave (None, 2, 3)


def test_run_twice_marks_exactly_the_axes_that_differ():
    x = tf.keras.Input((2,))
    spec = specs.run_twice(lambda t: tf.concat([t, t], 1)[:, :3], (x,), {})
    assert spec.shape == (None, 3)
    spec = specs.run_twice(lambda t: tf.stack([t, t]), (x,), {})
    assert spec.shape == (2, None, 2)


def test_an_op_with_a_rule_never_runs_its_forward():
    calls = []
    from layerflow._src.autodiff.op import op

    @op("test_double_width", spec=lambda x: specs.ArraySpec((*x.shape[:-1], 2 * x.shape[-1]),
                                                             x.dtype))  # fmt: skip
    def double_width(xp, x):
        calls.append(x.shape)
        return xp.concatenate([x, x], -1)

    x = tf.keras.Input((3,))
    y = double_width(x)
    assert tuple(y.shape) == (None, 6) and calls == []
    model = tf.keras.Model(x, y)
    assert tuple(model(np.ones((2, 3), np.float32)).shape) == (2, 6)
    assert calls == [(2, 3)]


def test_an_op_without_a_rule_is_computed_from_two_runs():
    from layerflow._src.autodiff.op import op

    @op("test_pair_batch")
    def pair_batch(xp, x):
        return xp.stack([x, x])  # no rule: the fallback must put None on axis 1

    assert tuple(pair_batch(tf.keras.Input((3,))).shape) == (2, None, 3)


def test_rule_errors_are_raised_for_incompatible_symbolic_inputs():
    a, b = tf.keras.Input((3,)), tf.keras.Input((4,))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        a + b
    with pytest.raises(tf.errors.InvalidArgumentError, match="same dtype"):
        tf.add(a, tf.cast(b[:, :3], tf.int32))


def test_an_unknown_spec_family_is_a_clear_error():
    from layerflow._src.autodiff.op import op

    @op("test_bad_family", spec="no_such_family")
    def bad(xp, x):
        return x

    with pytest.raises(ValueError, match="not a registered spec family"):
        bad(tf.keras.Input((2,)))
