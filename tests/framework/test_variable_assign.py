"""tf.Variable writes: the assign family returns the variable, chains, and never half-writes."""

import numpy as np
import pytest

import layerflow as tf


def test_each_assign_returns_the_variable_itself():
    v = tf.Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0]) is v
    assert v.assign_add([1.0, 1.0]) is v
    assert v.assign_sub([0.5, 0.5]) is v
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])


def test_assign_calls_chain_in_order():
    v = tf.Variable(1.0)
    out = v.assign(10.0).assign_add(5.0).assign_sub(2.0).assign_add(0.5)
    assert out is v
    assert float(v) == 13.5


def test_slice_assign_returns_the_whole_variable_and_chains():
    v = tf.Variable(np.zeros((2, 3), np.float32))
    out = v[0, 1].assign(7.0)
    assert out is v
    v[1].assign([1.0, 2.0, 3.0]).assign_add(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(v.numpy(), [[1, 8, 1], [2, 3, 4]])


def test_assign_reads_tensors_variables_and_numpy_values():
    v = tf.Variable([0.0, 0.0])
    w = tf.Variable([2.0, 3.0])
    v.assign(w).assign_add(tf.constant([1.0, 1.0])).assign_sub(np.float32([0.5, 0.5]))
    np.testing.assert_array_equal(v.numpy(), [2.5, 3.5])
    w.assign([9.0, 9.0])  # v holds a copy of w's value, not w itself
    np.testing.assert_array_equal(v.numpy(), [2.5, 3.5])


@pytest.mark.parametrize(
    ("method", "value", "error", "message"),
    [
        (
            "assign",
            tf.constant([1, 2]),
            TypeError,
            "int32 value to variable 'v:0' of dtype float32",
        ),
        ("assign_add", tf.constant([1.0], dtype=tf.float64), TypeError, "float64"),
        ("assign_sub", [[1.0, 2.0], [3.0, 4.0]], ValueError, "shape \\(2, 2\\)"),
        ("assign", [1.0, 2.0, 3.0], ValueError, "shape \\(3,\\).*shape \\(2,\\)"),
    ],
)
def test_a_rejected_write_names_the_problem_and_leaves_the_variable_unchanged(
    method, value, error, message
):
    v = tf.Variable([1.0, 2.0], name="v")
    before = v.numpy()
    with pytest.raises(error, match=message):
        getattr(v, method)(value)
    np.testing.assert_array_equal(v.numpy(), before)


def test_a_float_value_into_an_integer_variable_is_a_type_error():
    v = tf.Variable([1, 2], name="counts")
    with pytest.raises(TypeError, match="dtype int32.*tf.cast"):
        v.assign_add([1, 2.5])
    np.testing.assert_array_equal(v.numpy(), [1, 2])


def test_integer_variables_accumulate_in_place():
    v = tf.Variable([1, 2])
    v.assign_add([10, 20]).assign_sub([1, 1])
    assert v.dtype == tf.int32
    np.testing.assert_array_equal(v.numpy(), [10, 21])
