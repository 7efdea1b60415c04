"""Integer `//` and `%` by zero raise InvalidArgumentError, as in TF (NumPy returns 0)."""

import numpy as np
import pytest

import layerflow as tf

DIVISIONS = [
    ("floordiv", lambda x, y: tf.math.floordiv(x, y)),
    ("floormod", lambda x, y: tf.math.floormod(x, y)),
    ("floordiv", lambda x, y: x // y),
    ("floormod", lambda x, y: x % y),
]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8"])
@pytest.mark.parametrize(("opname", "fn"), DIVISIONS)
def test_integer_division_by_zero_raises_invalid_argument(dtype, opname, fn):
    x = tf.constant([7, 8], dtype)
    y = tf.constant([2, 0], dtype)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{opname}.*division by zero"):
        fn(x, y)


@pytest.mark.parametrize(("opname", "fn"), DIVISIONS)
def test_a_python_zero_divisor_raises_too(opname, fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        fn(tf.constant([7, 8]), 0)


def test_nonzero_integer_divisors_floor_as_python_does():
    x, y = tf.constant([7, -7, 7, -7]), tf.constant([2, 2, -2, -2])
    np.testing.assert_array_equal((x // y).numpy(), [3, -4, -4, 3])
    np.testing.assert_array_equal((x % y).numpy(), [1, 1, -1, -1])
    assert (x // y).dtype == tf.int32


def test_float_division_by_zero_gives_inf_and_nan_as_in_tf():
    x, y = tf.constant([1.0, 2.0]), tf.constant([0.0, 1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal((x // y).numpy(), [np.inf, 2.0])
        got = (x % y).numpy()
    assert np.isnan(got[0]) and got[1] == 0.0


def test_bool_floordiv_is_refused_as_in_tf():
    with pytest.raises(tf.errors.InvalidArgumentError, match="floordiv.*bool"):
        tf.math.floordiv(tf.constant([True]), tf.constant([True]))
