"""Max pooling by separable passes over phase frames (ops/pool_kernels.py `_sep_max`): values,
gradients and second-order selections against a plain NumPy loop over every window, for
every geometry (odd sizes, stride below, equal to and above the window, SAME, VALID and
explicit padding), both layouts (NHWC and channels-first behind an NHWC view, as the convs
hand their outputs on), ties, and the fallback to the tap loop for NaN and all-lowest windows.
"""

import itertools

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import jit
from layerflow._src.ops import pool_kernels, pool_ops

rng = np.random.default_rng(11)


def _reference(x, k, s, geo, dy, g):
    """y, dx and the selection of g by loops: each window's maximum over its real (unpadded)
    taps, the gradient sent to (and g taken at) the first one in row-major order."""
    (oh, ow), ((top, _), (left, _)), _, _ = geo
    n, h, w, c = x.shape
    y = np.zeros((n, oh, ow, c), x.dtype)
    dx, sel = np.zeros(x.shape), np.zeros((n, oh, ow, c))
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        best = None
        for a, q in itertools.product(range(k[0]), range(k[1])):
            r, col = i * s[0] + a - top, j * s[1] + q - left
            if 0 <= r < h and 0 <= col < w and (best is None or x[b, r, col, ch] > x[best]):
                best = (b, r, col, ch)
        y[b, i, j, ch] = x[best]
        dx[best] += dy[b, i, j, ch]
        sel[b, i, j, ch] = g[best]
    return y, dx, sel


def _channels_first(a):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, -1, 0)), 0, -1)


def _run(x, k, s, pad, dy, g):
    # The NumPy kernels (the compiled 3x3 ones have their own tests: test_pool_jit.py).
    with jit.use(False):
        geo = pool_ops._pool_geo(x.shape, k, s, pad, "test")
        y, arg = pool_ops._max_and_arg(np, x, k, geo, True)
        dx = pool_ops._max_pool_grad.prim.forward(np, dy, x, k, s, pad, arg)
        sel = pool_ops._max_pool_select.prim.forward(np, g, x, k, s, pad, arg)
    return y, arg, dx, sel


GEOMETRIES = [
    # (h, w, ksize, strides, padding): odd sizes; stride < ksize (overlapping), == ksize
    # (tiling, with and without leftover rows), > ksize (skipped inputs); 1 x k and k x 1.
    (9, 9, (3, 3), (2, 2), "VALID"),
    (7, 5, (3, 3), (1, 1), "SAME"),
    (6, 6, (3, 3), (2, 2), "SAME"),
    (8, 8, (2, 2), (2, 2), "VALID"),
    (7, 9, (2, 2), (2, 2), "VALID"),
    (7, 7, (2, 3), (3, 4), "SAME"),
    (10, 11, (2, 2), (3, 3), "VALID"),
    (5, 6, (4, 3), (1, 2), "SAME"),
    (3, 3, (3, 3), (1, 1), "SAME"),
    (1, 7, (1, 3), (1, 2), "SAME"),
    (6, 4, (3, 1), (2, 1), "VALID"),
    (6, 7, (3, 3), (2, 2), ((0, 0), (1, 2), (2, 0), (0, 0))),
    (6, 5, (3, 3), (1, 1), ((0, 0), (0, 2), (2, 1), (0, 0))),
]


def test_stride_one_frames_share_their_padding_between_planes():
    # 6x6 inputs, 3x3 SAME windows: 7 x 7 frame positions per plane, not 8 x 8 (the bottom
    # padding row of one plane is the top one of the next); the values stay exact.
    geo = pool_ops._pool_geo((2, 6, 6, 3), (3, 3), (1, 1), "SAME", "test")
    fr = pool_kernels._Frame((2, 6, 6, 3), (3, 3), geo, True)
    assert (fr.ohf, fr.owf) == (7, 7)
    x = _channels_first(rng.standard_normal((2, 6, 6, 3)))
    dy, g = rng.standard_normal((2, 6, 6, 3)), rng.standard_normal((2, 6, 6, 3))
    y_ref, dx_ref, sel_ref = _reference(np.asarray(x), (3, 3), (1, 1), geo, dy, g)
    y, _, dx, sel = _run(x, (3, 3), (1, 1), "SAME", dy, g)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-12)
    np.testing.assert_array_equal(sel, sel_ref)


@pytest.mark.parametrize("h, w, k, s, pad", GEOMETRIES)
@pytest.mark.parametrize("layout", ["nhwc", "channels_first"])
def test_values_gradients_and_selection_match_the_loop(h, w, k, s, pad, layout):
    # Small integers: most windows hold their maximum more than once (ties).
    x = rng.integers(0, 3, (2, h, w, 3)).astype(np.float32)
    geo = pool_ops._pool_geo(x.shape, k, s, pad, "test")
    dy = rng.standard_normal((2, *geo[0], 3)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    y_ref, dx_ref, sel_ref = _reference(x, k, s, geo, dy, g)
    if layout == "channels_first":
        x, dy, g = _channels_first(x), _channels_first(dy), _channels_first(g)
    y, arg, dx, sel = _run(x, k, s, pad, dy, g)
    assert isinstance(arg, pool_kernels._Codes)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(sel, sel_ref)
    # The output keeps the input's layout (the next conv reads it without a copy).
    assert pool_ops._cf_layout(y) == (layout == "channels_first" or x.shape[3] == 1)


def test_gradient_and_selection_take_a_layout_other_than_x():
    x = _channels_first(rng.standard_normal((2, 7, 7, 3)).astype(np.float32))
    geo = pool_ops._pool_geo(x.shape, (3, 3), (2, 2), "SAME", "test")
    dy = rng.standard_normal((2, *geo[0], 3)).astype(np.float32)  # C-contiguous
    g = rng.standard_normal(x.shape).astype(np.float32)
    y_ref, dx_ref, sel_ref = _reference(np.asarray(x), (3, 3), (2, 2), geo, dy, g)
    _, _, dx, sel = _run(x, (3, 3), (2, 2), "SAME", dy, g)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-6)
    np.testing.assert_array_equal(sel, sel_ref)


def test_the_first_maximum_is_row_major_not_column_major():
    # Both maxima of the window lie on its anti-diagonal: row-major order takes (0, 1), a
    # column-first reduction would take (1, 0).
    x = np.array([[0.0, 5.0], [5.0, 0.0]]).reshape(1, 2, 2, 1)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool2d(xt, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, xt).numpy()[0, :, :, 0], [[0, 1], [0, 0]])


def test_a_tie_across_rows_goes_to_the_earlier_row_even_when_its_column_is_later():
    x = np.zeros((1, 3, 3, 1))
    x[0, 0, 2, 0] = x[0, 1, 0, 0] = x[0, 2, 1, 0] = 4.0
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool2d(xt, 3, 1, "VALID")
    expected = np.zeros((3, 3))
    expected[0, 2] = 1.0
    np.testing.assert_array_equal(tape.gradient(y, xt).numpy()[0, :, :, 0], expected)


def test_small_blocks_of_planes_give_the_same_results(monkeypatch):
    # One plane per block: the frames, codes and slack are reused and refilled block by block.
    x = rng.integers(0, 3, (3, 7, 8, 4)).astype(np.float64)
    geo = pool_ops._pool_geo(x.shape, (3, 3), (2, 2), "SAME", "test")
    dy, g = rng.standard_normal((3, *geo[0], 4)), rng.standard_normal(x.shape)
    refs = _reference(x, (3, 3), (2, 2), geo, dy, g)
    monkeypatch.setattr(pool_kernels, "BLOCK_BYTES", 1)
    for xa, dya, ga in ((x, dy, g), (_channels_first(x), _channels_first(dy), g)):
        fr = pool_kernels._Frame(xa.shape, (3, 3), geo, pool_ops._cf_layout(xa))
        assert len(fr.blocks(8)) == fr.planes
        y, _, dx, sel = _run(xa, (3, 3), (2, 2), "SAME", dya, ga)
        for got, want in zip((y, dx, sel), refs):
            np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float16])
def test_other_dtypes(dtype):
    x = rng.integers(1, 9, (2, 7, 6, 3)).astype(dtype)
    geo = pool_ops._pool_geo(x.shape, (3, 3), (2, 2), "SAME", "test")
    dy = np.ones((2, *geo[0], 3), np.float32)
    y_ref, dx_ref, _ = _reference(x, (3, 3), (2, 2), geo, dy, x)
    y, arg = pool_ops._max_and_arg(np, _channels_first(x), (3, 3), geo, True)
    assert isinstance(arg, pool_kernels._Codes) and y.dtype == dtype
    np.testing.assert_array_equal(y, y_ref)
    dx = pool_ops._max_pool_grad.prim.forward(np, dy, _channels_first(x), (3, 3), (2, 2),
                                              "SAME", arg)  # fmt: skip
    np.testing.assert_array_equal(dx, dx_ref)


def test_one_dimensional_pooling_needs_no_column_pass():
    x = rng.integers(0, 3, (2, 11, 3)).astype(np.float32)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        tape_nodes = tape._nodes
        y = tf.nn.max_pool1d(xt, 3, 2, "SAME")
    codes = next(node[4]["saved"] for node in tape_nodes if "saved" in node[4])
    assert codes.rows is None and codes.cols is not None
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = tape.gradient(y, xt, output_gradients=tf.constant(dy)).numpy()
    x4, dy4 = x[:, None], dy[:, None]
    geo = pool_ops._pool_geo(x4.shape, (1, 3), (1, 2), "SAME", "test")
    y_ref, dx_ref, _ = _reference(x4, (1, 3), (1, 2), geo, dy4, x4)
    np.testing.assert_array_equal(y.numpy(), y_ref[:, 0])
    np.testing.assert_allclose(dx, dx_ref[:, 0], rtol=1e-6)


def test_windows_wider_than_255_number_their_columns_in_uint16():
    x = np.zeros((1, 2, 300, 1))
    x[0, 1, 280, 0] = 1.0
    y, arg = pool_ops._max_and_arg(np, x, (2, 300), pool_ops._pool_geo(x.shape, (2, 300),
                                   (1, 1), "VALID", "test"), True)  # fmt: skip
    # The row pass's result for row 1 and the window's one column: tap 280 of that row.
    assert arg.cols.dtype == np.uint16 and arg.cols.reshape(2, 300)[1, 0] == 280
    dx = pool_ops._max_pool_grad.prim.forward(np, np.full((1, 1, 1, 1), 3.0), x, (2, 300),
                                              (1, 1), "VALID", arg)  # fmt: skip
    assert dx[0, 1, 280, 0] == 3.0 and np.count_nonzero(dx) == 1


@pytest.mark.parametrize("special", [np.nan, -np.inf])
def test_nan_and_all_lowest_windows_fall_back_to_the_tap_loop(special):
    x = rng.standard_normal((2, 6, 6, 3))
    x[0, 0:2, 0:2, 1] = special  # one window entirely NaN / -inf
    x[1, 3, 4, 2] = special
    geo = pool_ops._pool_geo(x.shape, (2, 2), (2, 2), "VALID", "test")
    y, arg = pool_ops._max_and_arg(np, x, (2, 2), geo, True)
    y_taps, arg_taps = pool_ops._tap_max_and_arg(np, x, (2, 2), geo, True)
    assert not isinstance(arg, pool_kernels._Codes)
    np.testing.assert_array_equal(y, y_taps)
    np.testing.assert_array_equal(arg, arg_taps)
    # Without a tape the passes' maximum is the tap loop's, NaN and -inf included.
    np.testing.assert_array_equal(pool_ops._max_and_arg(np, x, (2, 2), geo, False)[0], y_taps)
