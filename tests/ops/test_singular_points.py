"""Ops at their singular points give TF's inf/nan silently (no NumPy RuntimeWarning).

The expected values were read from TensorFlow 2.21 on CPU; pytest runs with warnings as
errors, so a leaking `RuntimeWarning: divide by zero ...` fails these tests.
"""

import math
import warnings

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import fp_errors

INF, NAN = math.inf, math.nan

FORWARD = [
    ("log(0)", lambda: tf.math.log(0.0), -INF),
    ("log(-1)", lambda: tf.math.log(-1.0), NAN),
    ("sqrt(-1)", lambda: tf.sqrt(-1.0), NAN),
    ("1 / 0", lambda: 1.0 / tf.constant(0.0), INF),
    ("0 / 0", lambda: tf.constant(0.0) / 0.0, NAN),
    ("exp(1000)", lambda: tf.exp(1000.0), INF),
    ("expm1(1000)", lambda: tf.math.expm1(1000.0), INF),
    ("reciprocal(0)", lambda: tf.math.reciprocal(0.0), INF),
    ("rsqrt(0)", lambda: tf.math.rsqrt(0.0), INF),
    ("log1p(-1)", lambda: tf.math.log1p(-1.0), -INF),
    ("pow(0, -1)", lambda: tf.pow(0.0, -1.0), INF),
    ("pow(-1, .5)", lambda: tf.pow(-1.0, 0.5), NAN),
    ("floordiv(1., 0.)", lambda: tf.math.floordiv(1.0, 0.0), INF),
    ("floormod(1., 0.)", lambda: tf.math.floormod(1.0, 0.0), NAN),
    ("int / 0", lambda: tf.constant([1, -1, 0]) / 0, [INF, -INF, NAN]),
    ("xlogy", lambda: tf.math.xlogy([0.0, 1.0, 1.0], [0.0, 0.0, -1.0]), [0.0, -INF, NAN]),
    ("xdivy", lambda: tf.math.xdivy([0.0, 1.0], [0.0, 0.0]), [0.0, INF]),
    ("divide_no_nan", lambda: tf.math.divide_no_nan([0.0, 1.0], [0.0, 0.0]), [0.0, 0.0]),
]


def _grad(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


GRADIENTS = [
    ("d log at 0", lambda: _grad(tf.math.log, 0.0), INF),
    ("d sqrt at 0", lambda: _grad(tf.sqrt, 0.0), INF),
    ("d reciprocal at 0", lambda: _grad(tf.math.reciprocal, 0.0), -INF),
    ("d rsqrt at 0", lambda: _grad(tf.math.rsqrt, 0.0), -INF),
    ("d x**.5 at 0", lambda: _grad(lambda x: tf.pow(x, 0.5), 0.0), INF),
    ("d (-1)**x at .5", lambda: _grad(lambda x: tf.pow(-1.0, x), 0.5), NAN),
    ("d 1/x at 0", lambda: _grad(lambda x: 1.0 / x, 0.0), -INF),
    ("d xlogy(1, y) at 0", lambda: _grad(lambda x: tf.math.xlogy(1.0, x), 0.0), INF),
    ("d divide_no_nan(1, y) at 0", lambda: _grad(lambda x: tf.math.divide_no_nan(1.0, x), 0.0), 0),
    ("d floormod(x, 0.)", lambda: _grad(lambda x: tf.math.floormod(x, 0.0), 1.0), 1.0),
    ("d log1p at -1", lambda: _grad(tf.math.log1p, -1.0), INF),
]


@pytest.mark.parametrize(
    "name,fn,expected", FORWARD + GRADIENTS, ids=[c[0] for c in FORWARD + GRADIENTS]
)
def test_singular_point_matches_tf_without_warning(name, fn, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn().numpy()
    np.testing.assert_array_equal(got, np.asarray(expected, dtype=got.dtype))


@pytest.mark.parametrize("op", [tf.math.floordiv, tf.math.floormod, tf.truncatediv])
def test_integer_division_by_zero_raises_as_in_tf(op):
    # TF: InvalidArgumentError "Integer division by zero" (truncatediv: an InternalError).
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        op(tf.constant([1, -1, 0]), 0)


def test_guard_is_scoped_to_the_kernel():
    # The user's own NumPy code keeps its error state after a quiet op ran.
    before = np.geterr()
    tf.math.log(0.0)
    assert np.geterr() == before
    token = fp_errors.quiet()
    try:
        assert np.geterr()["divide"] == "ignore"
    finally:
        fp_errors.restore(token)
    assert np.geterr() == before
