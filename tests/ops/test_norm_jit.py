"""The compiled batch-norm and relu-gradient kernels (`ops/norm_jit.py`) against the NumPy
paths they stand beside (`jit.use(False)`): batch norm's values, statistics and gradients for
both memory layouts, float32 and float64, rows shorter and longer than the kernels' blocks,
non-contiguous inputs; the relu gradient bit for bit in every layout combination."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import jit
from layerflow._src.ops import math_ops, norm_jit
from layerflow._src.ops.normalization_ops import fused_batch_norm_train

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

rng = np.random.default_rng(7)
EPS = 1e-3


def _cf(a):
    """`a` (NHWC) channels-first in memory behind an NHWC view, as conv outputs are."""
    return np.ascontiguousarray(np.moveaxis(a, -1, 0)).transpose(*range(1, a.ndim), 0)


def _layout(a, layout):
    """A tensor holding `a` in the given memory layout."""
    if layout == "channels-first":
        return tf.constant(_cf(a))
    if layout == "strided":  # every other image of a tensor twice as long: a strided view
        t = tf.constant(np.stack([a, a], axis=1).reshape(-1, *a.shape[1:]))[::2]
        assert not t._data.flags.c_contiguous
        return t
    return tf.constant(a)


def _bn_step(x, scale, offset, dy, compiled):
    s, o = tf.Variable(scale), tf.Variable(offset)
    with jit.use(compiled):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y, mean, var = fused_batch_norm_train(x, s, o, EPS)
        grads = tape.gradient(y, [x, s, o], output_gradients=dy)
    return [y._data, mean.numpy(), var.numpy()], [g.numpy() for g in grads]


# (16, 6, 6, 32): channel rows of 576 (two blocks of 256 and a rest); (2, 10, 10, 3): 200,
# under one block; (3, 5, 7, 4): 105, under MIN_ROW (the NumPy path when channels-first, the
# kernel when C-contiguous).
@pytest.mark.parametrize(
    "shape", [(16, 6, 6, 32), (2, 10, 10, 3), (3, 5, 7, 4), (40, 3), (2, 1, 300, 5)]
)
@pytest.mark.parametrize("layout", ["contiguous", "channels-first", "strided"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_kernels_match_the_numpy_path(shape, layout, dtype):
    if layout != "contiguous" and len(shape) == 2:
        pytest.skip("a 2-D array has one channels-last layout")
    c = shape[-1]
    x = _layout((rng.standard_normal(shape) * 3 + 2).astype(dtype), layout)
    dy = _layout(rng.standard_normal(shape).astype(dtype), layout)
    scale = rng.standard_normal(c).astype(dtype)
    offset = rng.standard_normal(c).astype(dtype)
    ref_out, ref_grads = _bn_step(x, scale, offset, dy, compiled=False)
    out, grads = _bn_step(x, scale, offset, dy, compiled=True)
    # The kernels sum in float64 in another order: statistics and everything built on them
    # agree to a few float32 ulps (float64: to ~1e-12).
    tol = {"rtol": 2e-5, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-10}
    for got, want in zip(out + grads, ref_out + ref_grads):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, **tol)
    if layout == "channels-first":  # the output keeps the input's layout
        assert np.moveaxis(out[0], -1, 0).flags.c_contiguous
    # ... and both agree with the definition
    axes = tuple(range(len(shape) - 1))
    xd = x.numpy().astype(np.float64)
    want = (xd - xd.mean(axes)) / np.sqrt(xd.var(axes) + EPS) * scale + offset
    np.testing.assert_allclose(out[0], want, **tol)


def test_batch_norm_kernels_with_a_large_mean():
    # Centred sums: a mean 1e3 times the spread leaves the variance intact.
    x = _layout((rng.standard_normal((8, 10, 10, 3)) + 1000.0).astype(np.float32), "channels-first")
    dy = _layout(rng.standard_normal((8, 10, 10, 3)).astype(np.float32), "channels-first")
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    (y, mean, var), _ = _bn_step(x, ones, zeros, dy, compiled=True)
    xd = x.numpy().astype(np.float64)
    np.testing.assert_allclose(var, xd.var((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(mean, xd.mean((0, 1, 2)), rtol=1e-7)
    assert abs(float(y.std()) - 1.0) < 1e-3


def test_batch_norm_second_derivative_still_composed():
    # Under an outer tape the gradient is written with ops: the kernel path must give it too.
    x = tf.constant(_cf(rng.standard_normal((4, 12, 12, 2)).astype(np.float64)))
    s, o = tf.constant(np.array([1.5, -0.5])), tf.constant(np.array([0.1, 0.2]))
    w = tf.constant(rng.standard_normal((4, 12, 12, 2)))
    results = []
    for flag in (False, True):
        with jit.use(flag):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    loss = tf.reduce_sum(fused_batch_norm_train(x, s, o, EPS)[0] ** 2 * w)
                g = inner.gradient(loss, x)
                gg = tf.reduce_sum(g * g)
            results.append((g.numpy(), outer.gradient(gg, x).numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def _relu_pair(dy, y):
    with jit.use(False), np.errstate(invalid="ignore"):  # NumPy warns of inf * 0
        want = math_ops._relu_grad(dy, y)._data
    with jit.use(True), np.errstate(invalid="ignore"):  # (when it falls back)
        got = math_ops._relu_grad(dy, y)._data
    return got, want


@pytest.mark.parametrize("dy_layout", ["contiguous", "channels-first", "strided"])
@pytest.mark.parametrize("y_layout", ["contiguous", "channels-first"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_kernel_is_bitwise_the_numpy_expression(dy_layout, y_layout, dtype):
    shape = (4, 33, 35, 5)  # above the kernel's size threshold, odd sizes for the tiles
    y = rng.standard_normal(shape).astype(dtype)
    y[0, 0, :4, 0] = [0.0, -0.0, np.nan, np.inf]
    dy = rng.standard_normal(shape).astype(dtype)
    dy[0, 1, :4, 0] = [np.nan, -np.inf, -0.0, 5.0]
    dy[0, 0, :4, 0] = [-3.0, np.nan, 1.0, -2.0]  # -0.0 products and NaN * 0 where y <= 0
    got, want = _relu_pair(_layout(dy, dy_layout), _layout(y, y_layout))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    if dy_layout != "strided":  # the kernel's output is laid out as y
        assert np.moveaxis(got, -1, 0).flags.c_contiguous == (y_layout == "channels-first")


def test_relu_grad_small_and_other_dtypes_take_the_numpy_path():
    dy, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    got, want = _relu_pair(tf.constant(dy), tf.constant(y))
    np.testing.assert_array_equal(got, want)
    assert norm_jit.relu_grad(dy.astype(np.float16), y.astype(np.float16)) is None
    assert norm_jit.relu_grad(dy, y.astype(np.float32)) is None
