"""The compiled 3x3 max pool (`ops/pool_jit.py`) against the NumPy paths it stands beside
(`jit.use(False)`) and the window loop of `test_pool_separable.py`: values, tap numbers'
gradients bit for bit, the selection (the gradient's gradient), ties, every geometry it takes
(strides 1 and 2, SAME, VALID, explicit padding, odd sizes, many planes over several blocks),
float32 and float64, the NaN and all-lowest fallback, and the memo when the kernels are
turned off between the forward and the gradient."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import jit
from layerflow._src.ops import pool_jit, pool_ops
from tests.ops.test_pool_separable import _channels_first, _reference

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

rng = np.random.default_rng(5)

GEOMETRIES = [
    (7, 5, (1, 1), "SAME"),
    (6, 6, (2, 2), "SAME"),
    (9, 9, (2, 2), "VALID"),
    (8, 7, (1, 1), "VALID"),
    (3, 3, (1, 1), "SAME"),
    (1, 1, (2, 2), "SAME"),
    (2, 5, (2, 2), "SAME"),
    (6, 7, (2, 2), ((0, 0), (1, 2), (2, 0), (0, 0))),
    (6, 5, (1, 1), ((0, 0), (0, 2), (2, 1), (0, 0))),
]


def _run(x, s, pad, dy, g, compiled):
    k = (3, 3)
    with jit.use(compiled):
        geo = pool_ops._pool_geo(x.shape, k, s, pad, "test")
        y, arg = pool_ops._max_and_arg(np, x, k, geo, True)
        dx = pool_ops._max_pool_grad.prim.forward(np, dy, x, k, s, pad, arg)
        sel = pool_ops._max_pool_select.prim.forward(np, g, x, k, s, pad, arg)
    return y, arg, dx, sel


@pytest.mark.parametrize("h, w, s, pad", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_gradients_and_selection_match_the_loop_and_the_numpy_path(h, w, s, pad, dtype):
    # Small integers: most windows hold their maximum more than once (ties).
    x = rng.integers(0, 3, (2, h, w, 5)).astype(dtype)
    geo = pool_ops._pool_geo(x.shape, (3, 3), s, pad, "test")
    dy = rng.standard_normal((2, *geo[0], 5)).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    y_ref, dx_ref, sel_ref = _reference(x, (3, 3), s, geo, dy, g)
    x, dy, g = _channels_first(x), _channels_first(dy), _channels_first(g)
    y, arg, dx, sel = _run(x, s, pad, dy, g, compiled=True)
    assert isinstance(arg, pool_jit.TapArgs)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(sel, sel_ref)
    assert pool_ops._cf_layout(y) and pool_ops._cf_layout(dx) and y.dtype == dx.dtype == dtype
    # The NumPy path gives the same bits (the gradient adds in the same order).
    y0, arg0, dx0, sel0 = _run(x, s, pad, dy, g, compiled=False)
    assert not isinstance(arg0, pool_jit.TapArgs)
    for got, want in ((y, y0), (dx, dx0), (sel, sel0)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("s", [(1, 1), (2, 2)])
def test_many_planes_over_several_blocks(monkeypatch, s):
    monkeypatch.setattr(pool_jit, "FRAME_BYTES", 4096)  # a few planes a block
    x = _channels_first(rng.standard_normal((3, 12, 11, 7)).astype(np.float32))
    geo = pool_ops._pool_geo(x.shape, (3, 3), s, "SAME", "test")
    dy = _channels_first(rng.standard_normal((3, *geo[0], 7)).astype(np.float32))
    got, want = _run(x, s, "SAME", dy, x, True), _run(x, s, "SAME", dy, x, False)
    for i in (0, 2, 3):
        np.testing.assert_array_equal(got[i], want[i])


@pytest.mark.parametrize("special", [np.nan, -np.inf])
def test_nan_and_all_lowest_windows_take_the_numpy_path(special):
    x = rng.standard_normal((2, 6, 6, 3))
    x[1, 4, 5, 2] = special
    if special == -np.inf:
        x[0, :3, :3, 1] = special  # a whole window of the lowest value
    x = _channels_first(x)
    geo = pool_ops._pool_geo(x.shape, (3, 3), (2, 2), "SAME", "test")
    assert pool_jit.max_pool(x, (3, 3), geo) is None
    dy = _channels_first(rng.standard_normal((2, 3, 3, 3)))
    g = rng.standard_normal(x.shape)
    got, want = _run(x, (2, 2), "SAME", dy, g, True), _run(x, (2, 2), "SAME", dy, g, False)
    assert not isinstance(got[1], pool_jit.TapArgs)
    for i in (0, 2, 3):
        np.testing.assert_array_equal(got[i], want[i])


def test_other_windows_layouts_and_dtypes_take_the_numpy_path():
    cf = _channels_first(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    assert pool_jit.usable(cf, (3, 3), (1, 1)) and pool_jit.usable(cf, (3, 3), (2, 2))
    assert not pool_jit.usable(cf, (2, 2), (2, 2))
    assert not pool_jit.usable(cf, (3, 3), (1, 2))
    assert not pool_jit.usable(np.ascontiguousarray(cf), (3, 3), (1, 1))  # NHWC, 3 channels
    assert not pool_jit.usable(cf.astype(np.float16), (3, 3), (1, 1))
    with jit.use(False):
        assert not pool_jit.usable(cf, (3, 3), (1, 1))


def test_the_memo_of_the_compiled_forward_when_the_kernels_are_turned_off():
    x = tf.constant(_channels_first(rng.standard_normal((2, 7, 7, 4))))
    dy = tf.constant(_channels_first(rng.standard_normal((2, 4, 4, 4))))
    with jit.use(True):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.nn.max_pool2d(x, 3, 2, "SAME")
        compiled = tape.gradient(y, x, output_gradients=dy).numpy()
    with jit.use(False):
        recomputed = tape.gradient(y, x, output_gradients=dy).numpy()
        plain = pool_ops._max_pool_grad(dy, x, (3, 3), (2, 2), "SAME").numpy()
    np.testing.assert_array_equal(compiled, recomputed)
    np.testing.assert_array_equal(compiled, plain)


def test_second_derivative_through_the_compiled_pool():
    x = tf.constant(_channels_first(rng.standard_normal((2, 6, 6, 3))))
    w = tf.constant(rng.standard_normal((2, 6, 6, 3)))
    results = []
    for flag in (False, True):
        with jit.use(flag):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    loss = tf.reduce_sum(tf.nn.max_pool2d(x * x, 3, 1, "SAME") * w)
                g = inner.gradient(loss, x)
                gg = tf.reduce_sum(g * g)
            results.append((g.numpy(), outer.gradient(gg, x).numpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
