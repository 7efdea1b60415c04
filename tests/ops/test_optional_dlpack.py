"""tf.experimental.Optional, tf.OptionalSpec and tf.experimental.dlpack."""

import numpy as np
import pytest

import layerflow as tf


def test_optional():
    opt = tf.experimental.Optional.from_value((1, tf.constant([2.0])))
    assert bool(opt.has_value())
    value = opt.get_value()
    assert int(value[0]) == 1 and value[1].numpy().tolist() == [2.0]
    assert opt.element_spec == (tf.TensorSpec([], tf.int32), tf.TensorSpec([1], tf.float32))
    empty = tf.experimental.Optional.empty(tf.TensorSpec([], tf.float32))
    assert not bool(empty.has_value()) and empty.has_value().dtype == tf.bool
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not have a value"):
        empty.get_value()
    spec = tf.type_spec_from_value(tf.experimental.Optional.from_value(1.0))
    assert repr(spec) == "OptionalSpec(TensorSpec(shape=(), dtype=tf.float32, name=None),)"
    assert spec == tf.OptionalSpec(tf.TensorSpec([], tf.float32)) and spec.value_type is type(empty)


def test_dlpack_round_trip_and_foreign_arrays():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    back = tf.experimental.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(x))
    assert back.dtype == tf.float32 and back.device == x.device
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    arr = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = tf.experimental.dlpack.from_dlpack(arr)
    assert t.dtype == tf.int64 and t.shape == [2, 3]
    arr[0, 0] = 42  # zero-copy, as DLPack promises
    assert int(t[0, 0]) == 42
    np.testing.assert_array_equal(np.from_dlpack(tf.constant([1, 2])), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="string"):
        tf.experimental.dlpack.to_dlpack(tf.constant("a"))
