"""`__array__` (NumPy 2 protocol) as TF has it: tensors lend read-only views, variables copy."""

import numpy as np
import pytest

import layerflow as tf


def test_asarray_of_a_tensor_is_a_read_only_view_of_its_buffer():
    t = tf.constant([1.0, 2.0])
    for a in (np.asarray(t), np.asarray(t, copy=False)):
        assert not a.flags.writeable
        assert np.shares_memory(a, t._data)
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_asarray_copy_true_and_np_array_give_writable_copies():
    t = tf.constant([1.0, 2.0])
    for a in (np.asarray(t, copy=True), np.array(t)):
        assert a.flags.writeable and not np.shares_memory(a, t._data)
        a[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_asarray_with_another_dtype_converts_and_refuses_copy_false():
    t = tf.constant([1, 2])
    a = np.asarray(t, dtype=np.float64)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a, [1.0, 2.0])
    assert np.asarray(t, dtype=np.int32).dtype == np.int32  # same dtype: no conversion
    with pytest.raises(ValueError, match="copy cannot be avoided"):
        np.asarray(t, dtype=np.float64, copy=False)


def test_asarray_of_a_variable_is_a_snapshot():
    v = tf.Variable([1.0, 2.0])
    a = np.asarray(v)
    assert a.flags.writeable and not np.shares_memory(a, v._data)
    a[0] = 5.0
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(a, [5.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])


def test_asarray_copy_false_of_a_variable_says_a_copy_is_needed():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="Variable of dtype float32: a copy cannot be avoided"):
        np.asarray(v, copy=False)


def test_numpy_functions_accept_tensors_and_variables():
    t, v = tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.Variable([1.0, 2.0])
    np.testing.assert_array_equal(np.add(np.asarray(t), 1.0), [[2.0, 3.0], [4.0, 5.0]])
    assert np.sum(np.asarray(v)) == 3.0
    assert np.asarray(tf.constant(2.5)).shape == ()
