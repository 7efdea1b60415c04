"""tf.TensorArray (TF's eager semantics, checked on TF 2.21) and tf.TensorArraySpec."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import numeric_gradient


def test_write_read_stack_and_zeros_for_unwritten():
    ta = tf.TensorArray(tf.float32, size=2)
    ta = ta.write(0, [1.0, 2.0])
    np.testing.assert_array_equal(ta.read(0).numpy(), [1, 2])
    np.testing.assert_array_equal(ta.read(1).numpy(), [0, 0])
    np.testing.assert_array_equal(ta.stack().numpy(), [[1, 2], [0, 0]])
    assert ta.size().numpy() == 2 and ta.size().dtype == tf.int32
    assert ta.element_shape == [2] and ta.dtype == tf.float32 and not ta.dynamic_size
    ta.write(1, [3, 4])  # Python ints convert to the array's dtype; the storage is shared
    np.testing.assert_array_equal(ta.read(1).numpy(), [3, 4])


def test_dynamic_size_grows():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in range(3):
        ta = ta.write(i, float(i))
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 1, 2])
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(3, [1.0])
    assert int(grown.size()) == 4
    np.testing.assert_array_equal(grown.stack().numpy(), [[0], [0], [0], [1]])


def test_unstack_gather_scatter_split_concat():
    ta = tf.TensorArray(tf.float32, size=3).unstack([[1.0, 2.0], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), [[5, 6], [1, 2]])
    sc = tf.TensorArray(tf.float32, size=3).scatter([2, 0], [[1.0, 2.0], [3, 4]])
    np.testing.assert_array_equal(sc.stack().numpy(), [[3, 4], [0, 0], [1, 2]])
    sp = tf.TensorArray(tf.float32, size=2).split([1.0, 2.0, 3.0], [1, 2])
    np.testing.assert_array_equal(sp.read(1).numpy(), [2, 3])
    np.testing.assert_array_equal(sp.concat().numpy(), [1, 2, 3])
    free = tf.TensorArray(tf.float32, size=2, infer_shape=False)
    free = free.write(0, [1.0]).write(1, [1.0, 2.0])
    np.testing.assert_array_equal(free.concat().numpy(), [1, 1, 2])
    assert tf.TensorArray(tf.float32, size=0).stack().shape == [0]
    assert tf.TensorArray(tf.float32, size=0, element_shape=[2]).stack().shape == [0, 2]


def test_errors():
    ta = tf.TensorArray(tf.float32, size=2).write(0, [1.0, 2.0])
    with pytest.raises(tf.errors.OutOfRangeError, match="not resizeable and size is: 2"):
        ta.write(2, [1.0, 2.0])
    with pytest.raises(tf.errors.OutOfRangeError, match="negative indices"):
        ta.write(-1, [1.0, 2.0])
    with pytest.raises(tf.errors.OutOfRangeError, match="read from index 5 but array size is: 2"):
        ta.read(5)
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(3,\)\), expected"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"expected \(\(3,\)\)"):
        tf.TensorArray(tf.float32, size=2, element_shape=[3]).write(0, [1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype is float32 but Op"):
        ta.write(1, tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Cannot unstack 2 tensors into a TensorArray of static"):
        tf.TensorArray(tf.int32, size=1).unstack([1, 2])
    with pytest.raises(ValueError, match="partially known TensorShape"):
        tf.TensorArray(tf.float32, size=2).stack()


def test_gradients_reach_written_values():
    x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        ta = tf.TensorArray(tf.float32, size=2)
        ta = ta.write(0, x * 2.0).write(1, y * y)
        s = tf.reduce_sum(ta.stack()) + tf.reduce_sum(ta.read(0))
    gx, gy = tape.gradient(s, [x, y])
    np.testing.assert_array_equal(gx.numpy(), [4, 4])  # TF 2.21's answer
    np.testing.assert_array_equal(gy.numpy(), [6, 8])


def test_gradient_through_unstack_concat_matches_finite_differences():
    w = np.random.default_rng(0).standard_normal(6)

    def f(x):
        ta = tf.TensorArray(tf.float64, size=2).unstack(tf.stack([x, x * x]))
        return tf.reduce_sum(ta.concat() * w)

    x0 = np.array([0.5, -1.0, 2.0])
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    numeric = numeric_gradient(lambda a: float(f(tf.constant(a))), x0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), numeric, rtol=1e-6)


def test_in_a_loop_with_while():
    def body(i, ta):
        return i + 1, ta.write(i, tf.cast(i, tf.float32) ** 2)

    _, ta = tf.while_loop(
        lambda i, ta: i < 4, body, (tf.constant(0), tf.TensorArray(tf.float32, size=4))
    )
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 1, 4, 9])


def test_spec():
    ta = tf.TensorArray(tf.float32, size=2).write(0, [1.0, 2.0])
    assert (
        repr(tf.type_spec_from_value(ta))
        == "TensorArraySpec(TensorShape([2]), tf.float32, False, True)"
    )
    spec = tf.TensorArraySpec([None], tf.float32)
    assert spec.is_compatible_with(ta) and not spec.is_compatible_with(
        tf.TensorArraySpec([2], tf.int32)
    )
    assert spec.value_type is tf.TensorArray
    assert spec == tf.TensorArraySpec([None], "float32")
