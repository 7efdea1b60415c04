"""Float-only ops refuse integer (and bool) tensors as TF does, never returning float64.

The rule is one word on the op (`accepts=`, see autodiff/op.py); these tests pin it for the
public ops and for a new op declared with it.
"""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.op import op

FLOAT_ONLY = {
    "sqrt": tf.sqrt,
    "exp": tf.exp,
    "log": tf.math.log,
    "sin": tf.math.sin,
    "cos": tf.math.cos,
    "tan": tf.math.tan,
    "asin": tf.math.asin,
    "acos": tf.math.acos,
    "atan": tf.math.atan,
    "sinh": tf.math.sinh,
    "cosh": tf.math.cosh,
    "sigmoid": tf.sigmoid,
    "tanh": tf.tanh,
    "rsqrt": tf.math.rsqrt,
    "log1p": tf.math.log1p,
    "expm1": tf.math.expm1,
    "reciprocal": tf.math.reciprocal,
    "erf": tf.math.erf,
    "floor": tf.math.floor,
    "ceil": tf.math.ceil,
    "is_nan": tf.math.is_nan,
    "is_inf": tf.math.is_inf,
    "is_finite": tf.math.is_finite,
    "softplus": tf.nn.softplus,
    "softsign": tf.nn.softsign,
    "elu": tf.nn.elu,
    "selu": tf.nn.selu,
    "softmax": tf.nn.softmax,
    "log_softmax": tf.nn.log_softmax,
    "l2_loss": tf.nn.l2_loss,
}


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", sorted(FLOAT_ONLY))
def test_float_only_ops_refuse_integer_and_bool_tensors(name, dtype):
    x = tf.cast(tf.constant([1, 0, 1]), dtype)
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"{dtype}.*tf\.cast"):
        FLOAT_ONLY[name](x)


@pytest.mark.parametrize("name", sorted(FLOAT_ONLY))
def test_float_only_ops_keep_float32(name):
    x = tf.constant([0.25, 0.5, 0.75])
    out = FLOAT_ONLY[name](x)
    assert out.dtype in (tf.float32, tf.bool)


def test_a_python_int_list_is_an_int32_tensor_and_is_refused():
    with pytest.raises(tf.errors.InvalidArgumentError, match="sqrt.*int32"):
        tf.sqrt([4, 9])


@pytest.mark.parametrize("fn", [tf.math.floor, tf.nn.softplus, tf.math.erf])
def test_real_float_ops_refuse_complex(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="complex64"):
        fn(tf.constant([1.0 + 0j], tf.complex64))


def test_complex_is_allowed_where_tf_allows_it():
    out = tf.exp(tf.constant([0.0 + 1j], tf.complex64))
    assert out.dtype == tf.complex64
    np.testing.assert_allclose(out.numpy(), np.exp([1j]), rtol=1e-6)


@pytest.mark.parametrize(
    "fn", [tf.square, tf.abs, tf.sign, tf.math.round, tf.nn.relu, tf.nn.relu6, tf.negative]
)
def test_ops_tf_runs_on_integers_keep_the_integer_dtype(fn):
    out = fn(tf.constant([-2, 3]))
    assert out.dtype == tf.int32


def test_leaky_relu_casts_integers_to_float32_as_tf_does():
    out = tf.nn.leaky_relu(tf.constant([-5, 2]))
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), [-1.0, 2.0])


@pytest.mark.parametrize("fn", [tf.reduce_max, tf.reduce_min])
def test_max_and_min_refuse_bool_as_tf_does(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="bool"):
        fn(tf.constant([True, False]))


def test_a_new_op_declares_its_family_in_one_word():
    @op("halve_test", accepts="real_float")
    def halve(xp, x):
        return x / 2

    np.testing.assert_allclose(halve(tf.constant([3.0])).numpy(), [1.5])
    with pytest.raises(tf.errors.InvalidArgumentError, match="halve_test: .*int32"):
        halve(tf.constant([3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="halve_test"):
        halve([3])  # converted first, then refused


def test_an_unknown_family_is_a_definition_error():
    with pytest.raises(ValueError, match="not a dtype family"):
        op("bad_family_test", accepts="floats")(lambda xp, x: x)
