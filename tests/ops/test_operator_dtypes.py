"""Python operators across dtypes follow TF: no implicit promotion, TF's truediv table."""

import numpy as np
import pytest

import layerflow as tf


def test_python_float_with_an_int_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="1.5.*dtype int32"):
        tf.constant(1) + 1.5
    with pytest.raises(TypeError, match="dtype int32"):
        2.5 * tf.constant([1, 2])


def test_python_scalars_take_the_tensor_dtype():
    assert (tf.constant(1) + 2).dtype == tf.int32
    assert (tf.constant(1.0, tf.float64) + 2).dtype == tf.float64
    assert (3 - tf.constant(1.0, tf.float16)).dtype == tf.float16
    np.testing.assert_array_equal((10 - tf.constant([1, 2])).numpy(), [9, 8])


@pytest.mark.parametrize(
    ("expr", "opname"),
    [
        (lambda a, b: a + b, "add"),
        (lambda a, b: a - b, "sub"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a @ b, "matmul"),
        (lambda a, b: a < b, "less"),
        (lambda a, b: tf.maximum(a, b), "maximum"),
    ],
)
def test_float32_with_float64_tensors_names_the_op_and_both_dtypes(expr, opname):
    a = tf.ones((2, 2), tf.float32)
    b = tf.ones((2, 2), tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        expr(a, b)
    msg = str(info.value)
    assert opname in msg.lower() and "float32" in msg and "float64" in msg
    assert "tf.cast" in msg


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [("uint8", "float32"), ("int8", "float32"), ("int16", "float32"), ("uint16", "float32"),
     ("int32", "float64"), ("int64", "float64"), ("float16", "float16"),
     ("float32", "float32"), ("float64", "float64")],
)  # fmt: skip
def test_truediv_follows_tfs_table(dtype, expected):
    x = tf.constant(np.array([3, 6], dtype=dtype))
    out = x / 2
    assert out.dtype == expected
    np.testing.assert_allclose(out.numpy(), [1.5, 3.0])


def test_uint8_divided_by_a_python_int_gives_float32():
    image = tf.constant(np.array([[0, 51, 255]], np.uint8))
    scaled = image / 255
    assert scaled.dtype == tf.float32
    np.testing.assert_allclose(scaled.numpy(), [[0.0, 0.2, 1.0]], rtol=1e-6)


def test_int32_divided_by_int32_gives_float64():
    out = tf.constant([7, 9]) / tf.constant([2, 4])
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy(), [3.5, 2.25])


def test_floordiv_and_mod_keep_integers():
    a, b = tf.constant([7, -7]), tf.constant([2, 2])
    assert (a // b).dtype == tf.int32 and (a % b).dtype == tf.int32
    np.testing.assert_array_equal((a // b).numpy(), [3, -4])  # floor, as TF and Python
    np.testing.assert_array_equal((a % b).numpy(), [1, 1])


def test_truediv_of_mismatched_int_dtypes_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32.*int64|int64.*int32"):
        tf.constant([1]) / tf.constant(np.array([2], np.int64))
