"""Every elementwise op and reduction through check_op: NumPy forward, float64 gradients."""

import math

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(42)
X = rng.uniform(0.2, 1.5, (3, 4))  # positive: log, sqrt, pow are defined
S = rng.uniform(-0.9, 0.9, (3, 4))  # signed, inside (-1, 1) for asin/acos
Y = rng.uniform(0.5, 2.0, (3, 4))

UNARY = [
    (tf.exp, np.exp, X),
    (tf.math.log, np.log, X),
    (tf.math.log1p, np.log1p, X),
    (tf.math.expm1, np.expm1, S),
    (tf.sqrt, np.sqrt, X),
    (tf.math.rsqrt, lambda a: 1 / np.sqrt(a), X),
    (tf.square, np.square, S),
    (tf.abs, np.abs, S),
    (tf.negative, np.negative, S),
    (tf.tanh, np.tanh, S),
    (tf.sigmoid, lambda a: 1 / (1 + np.exp(-a)), S * 5),
    (tf.math.sin, np.sin, S),
    (tf.math.cos, np.cos, S),
    (tf.math.tan, np.tan, S),
    (tf.math.asin, np.arcsin, S),
    (tf.math.acos, np.arccos, S),
    (tf.math.atan, np.arctan, S),
    (tf.math.sinh, np.sinh, S),
    (tf.math.cosh, np.cosh, S),
    (tf.math.reciprocal, np.reciprocal, X),
    (tf.math.erf, np.vectorize(math.erf), S * 3),
    (tf.math.softplus, lambda a: np.log1p(np.exp(a)), S * 5),
    (tf.math.softsign, lambda a: a / (1 + np.abs(a)), S),
    (tf.math.log_sigmoid, lambda a: -np.log1p(np.exp(-a)), S * 5),
]


@pytest.mark.parametrize("fn,ref,x", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary(fn, ref, x):
    check_op(fn, [x], ref)


BINARY = [
    (tf.add, np.add),
    (tf.subtract, np.subtract),
    (tf.multiply, np.multiply),
    (tf.divide, np.divide),
    (tf.maximum, np.maximum),
    (tf.minimum, np.minimum),
    (tf.pow, np.power),
    (tf.math.squared_difference, lambda a, b: (a - b) ** 2),
]


@pytest.mark.parametrize("fn,ref", BINARY, ids=[b[0].__name__ for b in BINARY])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4))])
def test_binary_broadcasting(fn, ref, shapes):
    a = X[: shapes[0][0], : shapes[0][-1]].reshape(shapes[0])
    b = Y.reshape(-1)[: int(np.prod(shapes[1]))].reshape(shapes[1])
    check_op(fn, [a, b], ref)


def test_floormod_and_floordiv():
    check_op(tf.math.floormod, [X * 3, Y], np.mod, grad=[0])
    check_op(tf.math.floordiv, [X * 3, Y], np.floor_divide, grad=False)


@pytest.mark.parametrize("fn,ref", [
    (tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean), (tf.reduce_max, np.max),
    (tf.reduce_min, np.min), (tf.reduce_prod, np.prod),
    (tf.reduce_logsumexp, lambda a, axis=None, keepdims=False: np.log(
        np.sum(np.exp(a), axis=axis, keepdims=keepdims))),
    (tf.math.reduce_variance, np.var), (tf.math.reduce_std, np.std),
])  # fmt: skip
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False)])
def test_reductions(fn, ref, axis, keepdims):
    check_op(lambda x: fn(x, axis=axis, keepdims=keepdims), [X],
             lambda a: ref(a, axis=axis, keepdims=keepdims))  # fmt: skip


def test_reduce_prod_gradient_with_zeros():
    x = X.copy()
    x[1, 2] = 0.0
    x[2, 0] = 0.0
    check_op(lambda t: tf.reduce_prod(t, axis=1), [x], lambda a: np.prod(a, axis=1))


def test_logical_reductions_and_their_dtype_error():
    b = np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(tf.reduce_all(b, axis=1).numpy(), [False, True])
    np.testing.assert_array_equal(tf.reduce_any(b, axis=0).numpy(), [True, True])
    with pytest.raises(tf.errors.InvalidArgumentError, match="bool tensor, got float32"):
        tf.reduce_any([1.0, 0.0])


def test_reduction_axis_out_of_range_names_the_rank():
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 3 is out of range.*rank 2"):
        tf.reduce_sum(tf.ones((2, 3)), axis=3)


def test_argmax_argmin_cumsum():
    np.testing.assert_array_equal(tf.argmax(X, axis=1).numpy(), np.argmax(X, axis=1))
    assert tf.argmax(X).dtype == tf.int64 and tf.argmin(X, output_type=tf.int32).dtype == tf.int32
    np.testing.assert_array_equal(tf.argmin(X).numpy(), np.argmin(X, axis=0))
    for exclusive in (False, True):
        for reverse in (False, True):

            def ref(a, e=exclusive, r=reverse):
                b = a[:, ::-1] if r else a
                c = np.cumsum(b, axis=1) - (b if e else 0)
                return c[:, ::-1] if r else c

            check_op(lambda t, e=exclusive, r=reverse: tf.cumsum(t, 1, e, r), [X], ref)


def test_clip_ops():
    check_op(lambda t: tf.clip_by_value(t, -0.5, 0.5), [S], lambda a: np.clip(a, -0.5, 0.5))
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(tf.clip_by_norm(v, 1.0).numpy(), [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(tf.clip_by_norm(v * 0.1, 1.0).numpy(), v * 0.1, rtol=1e-6)
    clipped, gn = tf.clip_by_global_norm([np.array([3.0]), None, np.array([4.0])], 1.0)
    assert clipped[1] is None and float(gn) == 5.0
    np.testing.assert_allclose([float(clipped[0][0]), float(clipped[2][0])], [0.6, 0.8], rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="greater than"):
        tf.clip_by_value([1.0], 2.0, 1.0)


@pytest.mark.parametrize("ord_", ["euclidean", 1, np.inf, 3])
def test_vector_norms(ord_):
    ref = {"euclidean": 2, 1: 1, np.inf: np.inf, 3: 3}[ord_]
    check_op(lambda t: tf.norm(t, ord=ord_, axis=1), [S], lambda a: np.linalg.norm(a, ref, axis=1))


@pytest.mark.parametrize("ord_", ["fro", 1, np.inf])
def test_matrix_norms(ord_):
    check_op(lambda t: tf.norm(t, ord=ord_, axis=(0, 1)), [S],
             lambda a: np.linalg.norm(a, ord_), grad_rtol=1e-4)  # fmt: skip


def test_add_n_sort_top_k_unique():
    check_op(lambda a, b, c: tf.add_n([a, b, c]), [X, Y, S], lambda a, b, c: a + b + c)
    check_op(lambda t: tf.sort(t, direction="DESCENDING"), [S], lambda a: -np.sort(-a, axis=-1))
    np.testing.assert_array_equal(tf.argsort(S).numpy(), np.argsort(S, kind="stable"))
    top = tf.math.top_k(np.array([1.0, 3.0, 3.0, 2.0]), k=2)
    np.testing.assert_array_equal(top.indices.numpy(), [1, 2])
    check_op(lambda t: tf.math.top_k(t, 2).values, [S], lambda a: -np.sort(-a, axis=-1)[:, :2])
    y, idx = tf.unique([3, 1, 3, 2, 1])
    np.testing.assert_array_equal(y.numpy(), [3, 1, 2])
    np.testing.assert_array_equal(idx.numpy(), [0, 1, 0, 2, 1])


@pytest.mark.parametrize("fn", [tf.sin, tf.exp, tf.tanh, tf.sigmoid, tf.math.log1p,
                                lambda t: tf.reduce_sum(t * t * t),
                                lambda t: tf.nn.softmax(t)[..., 0], tf.nn.softplus])  # fmt: skip
def test_second_derivatives(fn):
    check_second_derivative(fn, S)
