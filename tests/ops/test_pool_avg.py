"""2x2 average pooling by numba kernels (`pool_avg.py`): the same bits as the NumPy path
(`jit.use(False)`), forward and gradient, for channels-first and channels-last inputs, sizes
with a row or column left out (VALID), float32 and float64; finite differences."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op
from layerflow._src.backend import jit
from layerflow._src.ops import pool_avg

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

rng = np.random.default_rng(7)


def _pool_and_grad(x, padding):
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = tf.nn.avg_pool2d(t, 2, 2, padding)
        loss = tf.reduce_sum(y * tf.constant(np.arange(y.shape.num_elements(), dtype=x.dtype)
                                             .reshape(y.shape)))  # fmt: skip
    return y.numpy(), tape.gradient(loss, t).numpy()


@pytest.mark.parametrize("shape", [(3, 8, 8, 4), (2, 7, 9, 3), (1, 2, 2, 1), (2, 28, 28, 6)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels_first", [False, True])
def test_same_bits_as_numpy_path(shape, dtype, channels_first):
    x = rng.standard_normal(shape).astype(dtype)
    if channels_first:  # as a convolution's output: an NHWC view of (C, N, H, W)
        x = np.ascontiguousarray(x.transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)
    with jit.use(True):
        assert pool_avg.applies(np, x.dtype, (2, 2))
        y1, g1 = _pool_and_grad(x, "VALID")
    with jit.use(False):
        y0, g0 = _pool_and_grad(x, "VALID")
    assert y1.dtype == dtype and g1.dtype == dtype
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_array_equal(g1, g0)
    if shape[1] % 2:  # the row left out has a zero gradient
        assert (g1[:, -1] == 0).all()


def test_finite_differences():
    x = rng.standard_normal((2, 5, 6, 3))
    with jit.use(True):
        check_op(lambda a: tf.nn.avg_pool2d(a, 2, 2, "VALID"), [x],
                 lambda a: a[:, :4].reshape(2, 2, 2, 3, 2, 3).mean(axis=(2, 4)))  # fmt: skip


def test_applies_only_to_2x2_float_numpy():
    with jit.use(True):
        assert not pool_avg.applies(np, np.float32, (3, 3))
        assert not pool_avg.applies(np, np.float16, (2, 2))
        assert not pool_avg.applies(object(), np.float32, (2, 2))
    with jit.use(False):
        assert not pool_avg.applies(np, np.float32, (2, 2))
