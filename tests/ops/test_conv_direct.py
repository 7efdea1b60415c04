"""Direct convolution of few channels (`conv_direct.py`, numba): values and gradients against
the NumPy path (`jit.use(False)`, row frames) and the reference, finite differences, the relu
mask, and results that do not depend on the number of threads (bit for bit)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op
from layerflow._src.backend import jit
from layerflow._src.ops import conv_direct, conv_kernels, conv_small, conv_threads
from tests.ops.test_conv_algorithms import _cv, _ref, check_fused_bias_and_relu

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

rng = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _frames(monkeypatch):
    """Every stride-1 case by (row) frames, the path `conv_direct` takes over."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 1e9)
    monkeypatch.setattr(conv_kernels, "FLAT_EXTRA", 1e9)


# (x shape, w shape, padding): LeNet's two layers (small batch), odd channel counts, filters
# of other heights, explicit padding; 8 or more filters scatter the input gradient.
CASES = [
    ((3, 28, 28, 1), (5, 5, 1, 6), "SAME"),
    ((3, 14, 14, 6), (5, 5, 6, 16), "VALID"),
    ((2, 9, 11, 3), (3, 5, 3, 5), "SAME"),
    ((2, 7, 8, 2), (2, 5, 2, 3), "VALID"),
    ((2, 6, 9, 4), (5, 5, 4, 1), [[0, 0], [1, 2], [2, 1], [0, 0]]),
    ((2, 8, 7, 2), (4, 5, 2, 9), "SAME"),  # 9 filters: the scattered input gradient's padding
    ((3, 12, 13, 3), (3, 5, 3, 8), "VALID"),  # filter lanes, 9 columns (rounded up to 10)
    ((2, 24, 24, 2), (5, 5, 2, 3), "SAME"),  # position lanes, an odd number of filters
]


def _run(x, w, b, padding, relu, dy, on):
    cv = _cv(x.shape, w.shape, 1, padding, (1, 1))
    with jit.use(on):
        y, _, mask = conv_kernels.conv_forward(np, x, w, cv, b, relu, keep=True)
        grads = conv_kernels.conv_backward(np, x, w, dy, cv, x_shape=x.shape, need_x=True,
                                           need_w=True, need_b=True, mask=mask)  # fmt: skip
    return cv, np.array(y), grads


@pytest.mark.parametrize("xs,ws,padding", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("relu", [False, True])
def test_against_numpy_path(xs, ws, padding, dtype, relu):
    x = rng.standard_normal(xs).astype(dtype)
    x = np.ascontiguousarray(x.transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)  # as a conv's output
    w, b = rng.standard_normal(ws).astype(dtype), rng.standard_normal(ws[-1]).astype(dtype)
    cv = _cv(xs, ws, 1, padding, (1, 1))
    assert conv_small.applies(cv) and conv_direct.applies(np, cv, dtype)
    oh, ow = cv.geo[0]
    dy = rng.standard_normal((xs[0], oh, ow, ws[-1])).astype(dtype)
    _, y0, g0 = _run(x, w, b, padding, relu, dy, False)
    _, y1, g1 = _run(x, w, b, padding, relu, dy, True)
    assert y1.dtype == dtype and all(g.dtype == dtype for g in g1)
    # Sums in another order: equal up to rounding.
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y1, y0, rtol=tol, atol=tol * np.abs(y0).max())
    for a, e in zip(g1, g0):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol * np.abs(e).max())
    if relu:
        assert (y1 >= 0).all() and (y1 == 0).any()


def test_nhwc_contiguous_input_and_no_bias():
    x = rng.standard_normal((2, 10, 10, 3))  # NHWC in memory: the kernel copies it once
    w = rng.standard_normal((5, 5, 3, 4))
    cv = _cv(x.shape, w.shape, 1, "SAME", (1, 1))
    with jit.use(True):
        y = conv_kernels.conv_forward(np, x, w, cv, None, False, keep=False)[0]
    np.testing.assert_allclose(y, _ref(x, w, 1, "SAME", (1, 1)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("xs,ws,padding", CASES[:2])
def test_strided_views(xs, ws, padding):
    """Inputs and output gradients that are views with gaps (every other image and column)."""
    big = rng.standard_normal((2 * xs[0], xs[1], 2 * xs[2], xs[3])).astype(np.float32)
    x = big[::2, :, ::2]
    w, b = (
        rng.standard_normal(ws).astype(np.float32),
        rng.standard_normal(ws[-1]).astype(np.float32),
    )
    oh, ow = _cv(xs, ws, 1, padding, (1, 1)).geo[0]
    dy = rng.standard_normal((xs[0], oh, 2 * ow, ws[-1])).astype(np.float32)[:, :, 1::2]
    _, y0, g0 = _run(x, w, b, padding, False, dy, False)
    _, y1, g1 = _run(x, w, b, padding, False, dy, True)
    np.testing.assert_allclose(y1, y0, rtol=2e-5, atol=2e-5 * np.abs(y0).max())
    for a, e in zip(g1, g0):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-5 * np.abs(e).max())


@pytest.mark.parametrize("xs,ws,padding", CASES[1:4])
def test_finite_differences(xs, ws, padding):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    assert conv_direct.applies(np, _cv(xs, ws, 1, padding, (1, 1)), np.float64)
    with jit.use(True):
        check_op(lambda a, k: tf.nn.conv2d(a, k, 1, padding), [x, w],
                 lambda a, k: _ref(a, k, 1, padding, (1, 1)), grad_rtol=1e-4,
                 dtypes=("float64",))  # fmt: skip


@pytest.mark.parametrize("relu", [False, True])
def test_fused_bias_and_relu_finite_differences(relu):
    with jit.use(True):
        check_fused_bias_and_relu(rng, (2, 8, 8, 2), (5, 5, 2, 3), 1, "SAME", (1, 1), relu)


@pytest.mark.parametrize("xs,ws,padding", [CASES[0], CASES[1], CASES[2], CASES[-1]])
def test_threads_and_units_give_the_same_bits(monkeypatch, xs, ws, padding):
    n = 13
    xs = (n,) + xs[1:]
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[-1]).astype(np.float32)
    cv = _cv(xs, ws, 1, padding, (1, 1))
    dy = rng.standard_normal((n, *cv.geo[0], ws[-1])).astype(np.float32)
    monkeypatch.setattr(conv_direct, "MIN_IMAGES", 2)
    monkeypatch.setattr(conv_direct, "UNIT", 3)  # 5 units, the last one short
    runs = []
    for threads in (1, 3):
        monkeypatch.setattr(conv_threads, "FORCE", threads)
        _, y, grads = _run(x, w, b, padding, True, dy, True)
        # The filter gradient by row-frame GEMMs (not `filter_applies`) is `conv_small`'s.
        runs.append([y, grads[0]] + ([grads[1]] if conv_direct.filter_applies(cv) else []))
    for a, e in zip(*runs):
        np.testing.assert_array_equal(a, e)
    with jit.use(False):
        ref = conv_kernels.conv_backward(np, x, w, dy * (y > 0), cv, x_shape=xs, need_x=False,
                                         need_w=True, need_b=False, mask=None)[1]  # fmt: skip
    np.testing.assert_allclose(grads[1], ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())


def test_filter_gradient_here_by_position_or_filter_lanes_or_not():
    assert conv_direct.filter_applies(_cv((2, 28, 28, 1), (5, 5, 1, 6), 1, "SAME", (1, 1)))
    assert conv_direct.filter_applies(_cv((2, 14, 14, 6), (5, 5, 6, 16), 1, "VALID", (1, 1)))
    assert not conv_direct.filter_applies(_cv((2, 14, 14, 6), (5, 5, 6, 4), 1, "VALID", (1, 1)))


@pytest.mark.parametrize(
    "xs,ws,strides,dil,groups",
    [((2, 9, 9, 2), (3, 3, 2, 4), (1, 1), (1, 1), 1),  # 3 wide
     ((2, 9, 9, 2), (5, 5, 2, 4), (2, 2), (1, 1), 1),  # strided
     ((2, 12, 12, 2), (5, 5, 2, 4), (1, 1), (2, 2), 1),  # dilated
     ((2, 9, 9, 4), (5, 5, 2, 4), (1, 1), (1, 1), 2),  # grouped
     ((2, 9, 9, 2), (5, 5, 2, 32), (1, 1), (1, 1), 1)],  # many filters
)  # fmt: skip
def test_applies_only_to_its_shapes(xs, ws, strides, dil, groups):
    geo = conv_kernels.geometry(xs[1:3], ws[:2], strides, dil, "SAME", "conv2d")
    cv = conv_kernels.Conv(xs, ws, (*geo, strides, dil), groups)
    assert not conv_direct.applies(np, cv, np.float32)


def test_off_without_numba_or_for_other_dtypes():
    cv = _cv((2, 14, 14, 6), (5, 5, 6, 16), 1, "VALID", (1, 1))
    with jit.use(False):
        assert not conv_direct.applies(np, cv, np.float32)
    with jit.use(True):
        assert conv_direct.applies(np, cv, np.float32)
        assert not conv_direct.applies(np, cv, np.float16)
        assert not conv_direct.applies(object(), cv, np.float32)
