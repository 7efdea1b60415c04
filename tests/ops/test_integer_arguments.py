"""Sizes, axes, counts and shapes must be integers: never truncated, as in TF."""

import numpy as np
import pytest

import layerflow as tf

FLOAT_SHAPES = {
    "zeros": lambda: tf.zeros([2.5]),
    "zeros of 2.0": lambda: tf.zeros([2.0]),
    "zeros of a scalar": lambda: tf.zeros(2.0),
    "ones": lambda: tf.ones((2.0,)),
    "fill": lambda: tf.fill([2.0], 1.0),
    "constant": lambda: tf.constant(1.0, shape=[2.0]),
    "random.normal": lambda: tf.random.normal([2.0]),
    "random.uniform": lambda: tf.random.uniform([2.5]),
    "reshape": lambda: tf.reshape(tf.ones(4), [2.0, 2]),
    "reshape scalar": lambda: tf.reshape(tf.ones(4), 4.0),
    "broadcast_to": lambda: tf.broadcast_to(tf.ones(2), [2.0, 2]),
    "tile": lambda: tf.tile(tf.ones(2), [2.0]),
    "eye": lambda: tf.eye(2.0),
    "one_hot": lambda: tf.one_hot([1], 3.0),
    "top_k": lambda: tf.math.top_k([1.0, 2.0], k=1.0),
    "split": lambda: tf.split(tf.ones(4), [2.0, 2.0]),
    "pad": lambda: tf.pad([[1]], [[1.0, 0], [0, 0]]),
    "string shape": lambda: tf.zeros("3"),
}

FLOAT_AXES = {
    "reduce_sum": lambda x: tf.reduce_sum(x, axis=1.0),
    "reduce_sum list": lambda x: tf.reduce_sum(x, axis=[1.0]),
    "reduce_mean": lambda x: tf.reduce_mean(x, axis=1.5),
    "reduce_max": lambda x: tf.reduce_max(x, axis=1.0),
    "argmax": lambda x: tf.argmax(x, axis=1.0),
    "expand_dims": lambda x: tf.expand_dims(x, 1.0),
    "concat": lambda x: tf.concat([x, x], axis=0.0),
    "stack": lambda x: tf.stack([x, x], axis=1.0),
    "softmax": lambda x: tf.nn.softmax(x, axis=0.0),
    "numpy float": lambda x: tf.reduce_sum(x, axis=np.float32(1)),
}


@pytest.mark.parametrize("name", sorted(FLOAT_SHAPES))
def test_float_sizes_and_shapes_raise_type_error(name):
    with pytest.raises(TypeError, match="never rounded|must be integers"):
        FLOAT_SHAPES[name]()


@pytest.mark.parametrize("name", sorted(FLOAT_AXES))
def test_float_axes_raise_type_error(name):
    with pytest.raises(TypeError, match="axis must be (an integer|integers)"):
        FLOAT_AXES[name](tf.ones((2, 2)))


def test_float_tensors_as_shapes_or_axes_raise_invalid_argument_as_tf():
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64.*float32"):
        tf.zeros(tf.constant([2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64.*float32"):
        tf.reduce_sum(tf.ones((2, 2)), axis=tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64"):
        tf.reshape(tf.ones(4), tf.constant([2.0, 2.0]))


@pytest.mark.parametrize(
    "shape",
    [[2, 3], (2, 3), np.array([2, 3]), [np.int64(2), np.int32(3)], tf.constant([2, 3]),
     tf.TensorShape([2, 3]), [tf.constant(2), 3]],
)  # fmt: skip
def test_integer_shapes_of_every_kind_are_accepted(shape):
    assert tf.zeros(shape).shape == (2, 3)
    assert tf.reshape(tf.ones(6), shape).shape == (2, 3)


def test_integer_axes_of_every_kind_are_accepted():
    x = tf.ones((2, 3))
    for axis in (1, np.int64(1), tf.constant(1), [1], (np.int32(1),), -1):
        np.testing.assert_array_equal(tf.reduce_sum(x, axis=axis).numpy(), [3.0, 3.0])


def test_bool_sizes_count_as_integers_as_in_tf():
    assert tf.zeros([True]).shape == (1,)


def test_a_dimension_beyond_int64_raises_value_error_as_tf():
    with pytest.raises(ValueError, match="int64"):
        tf.zeros([2**63])


def test_a_shape_with_more_than_int64_elements_raises_invalid_argument_as_tf():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"more than 2\*\*63 - 1 elements"):
        tf.ones([2**40, 2**40])


def test_negative_and_unknown_dimensions_are_refused_for_new_tensors():
    with pytest.raises(ValueError, match="negative"):
        tf.zeros([-1])
    with pytest.raises(TypeError, match="must be integers"):
        tf.zeros((2, None))
