"""Max pooling's residual (ops/pool_ops.py): where each window's first maximum lies.

A recorded max pool saves small integers (tap numbers) instead of keeping its output for the
gradient; the gradient ops take them as a memo and recompute them from x when absent.
"""

import numpy as np

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_second_derivative
from layerflow._src.ops import pool_kernels, pool_ops

rng = np.random.default_rng(3)


def test_the_residual_is_bytes_smaller_than_the_output_and_the_output_is_not_needed():
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 3, 2, "SAME")
    (node,) = tape._nodes
    codes = node[4]["saved"]  # the separable passes' tap numbers (see test_pool_separable.py)
    assert isinstance(codes, pool_kernels._Codes)
    assert codes.cols.dtype == codes.rows.dtype == np.uint8
    assert codes.cols.nbytes + codes.rows.nbytes < y.numpy().nbytes
    assert not pool_ops._max_pool.prim.grad_uses_out
    # Without a tape nothing is computed for the gradient.
    assert tf.nn.max_pool2d(x, 3, 2, "SAME").shape == y.shape
    g = tape.gradient(y, x)
    assert np.count_nonzero(g.numpy()) <= y.shape.num_elements()


def test_the_gradient_without_the_memo_is_the_same():
    x = tf.constant(rng.standard_normal((2, 7, 5, 4)))
    dy = tf.constant(rng.standard_normal((2, 4, 3, 4)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 3, 2, "SAME")
    with_memo = tape.gradient(y, x, output_gradients=dy).numpy()
    args = ((3, 3), (2, 2), "SAME")
    recomputed = pool_ops._max_pool_grad(dy, x, *args).numpy()
    np.testing.assert_array_equal(with_memo, recomputed)
    # Selecting x itself at each window's maximum is the max pool.
    selected = pool_ops._max_pool_select(x, x, *args).numpy()
    np.testing.assert_array_equal(selected, tf.nn.max_pool2d(x, 3, 2, "SAME").numpy())


def test_a_window_of_minus_infinity_sends_its_gradient_to_its_first_tap():
    x = np.full((1, 4, 4, 1), -np.inf)
    x[0, 2:, 2:, 0] = [[1.0, 5.0], [5.0, 2.0]]  # the last window: a tie, the first one wins
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool2d(xt, 2, 2, "VALID")
    g = tape.gradient(y, xt, output_gradients=tf.constant(np.arange(1.0, 5.0).reshape(1, 2, 2, 1)))
    expected = np.zeros((4, 4))
    expected[0, 0], expected[0, 2], expected[2, 0], expected[2, 3] = 1.0, 2.0, 3.0, 4.0
    np.testing.assert_array_equal(g.numpy()[0, :, :, 0], expected)


def test_second_derivatives_through_max_pooling():
    # Distinct values: no ties, so finite differences stay inside one piece.
    x = rng.permutation(2 * 5 * 6 * 2).reshape(2, 5, 6, 2) / 7.0
    check_second_derivative(lambda a: tf.nn.max_pool2d(a * a, 2, 2, "SAME"), x)


def _max_pool_ref(x, k, s, dy):
    """VALID max pool by loops, the gradient to each window's first maximum (row-major)."""
    n, h, w, c = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y, dx = np.empty((n, oh, ow, c)), np.zeros_like(x)
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        win = x[b, i * s : i * s + k, j * s : j * s + k, ch]
        r, q = np.unravel_index(np.argmax(win), win.shape)  # argmax: the first one
        y[b, i, j, ch] = win[r, q]
        dx[b, i * s + r, j * s + q, ch] += dy[b, i, j, ch]
    return y, dx


def _channels_first_view(a):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, -1, 0)), 0, -1)


def test_ties_and_layouts_match_the_reference():
    # ReLU outputs: many windows of zeros, where the first tap takes the gradient. x laid out
    # channels-first (as a conv output is) with dy C-contiguous, and the other way round.
    x = np.maximum(rng.standard_normal((2, 9, 9, 3)), 0.0).astype(np.float32)
    x[0, :4, :4, :] = 0.0
    dy = rng.standard_normal((2, 4, 4, 3)).astype(np.float32)
    y_ref, dx_ref = _max_pool_ref(x, 3, 2, dy)
    for xa, dya in ((_channels_first_view(x), dy), (x, _channels_first_view(dy))):
        geo = pool_ops._pool_geo(xa.shape, (3, 3), (2, 2), "VALID", "max_pool")
        y, arg = pool_ops._max_and_arg(np, xa, (3, 3), geo, True)
        np.testing.assert_array_equal(y, y_ref)
        dx = pool_ops._max_pool_grad.prim.forward(np, dya, xa, (3, 3), (2, 2), "VALID", arg)
        np.testing.assert_allclose(dx, dx_ref, rtol=1e-6, atol=1e-6)


def test_windows_of_more_than_255_taps_number_them_in_uint16():
    x = np.zeros((1, 17, 17, 2))
    x[0, 16, 15, 0] = 1.0  # tap 16 * 17 + 15 = 287 of the one window
    dy = np.array([2.0, 3.0]).reshape(1, 1, 1, 2)
    y_ref, dx_ref = _max_pool_ref(x, 17, 1, dy)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool2d(xt, 17, 1, "VALID")
    np.testing.assert_array_equal(y.numpy(), y_ref)
    g = tape.gradient(y, xt, output_gradients=tf.constant(dy))
    np.testing.assert_array_equal(g.numpy(), dx_ref)


def test_cache_blocks_of_images_and_of_channels_give_the_same_pool(monkeypatch):
    # Tiny blocks: one image per block for a C-contiguous x, one channel per block for a
    # channels-first x, with ties (zeros) spanning blocks.
    monkeypatch.setattr(pool_ops, "POOL_BLOCK_BYTES", 1)
    x = np.maximum(rng.standard_normal((3, 7, 7, 4)), 0.0)
    dy = rng.standard_normal((3, 3, 3, 4))
    y_ref, dx_ref = _max_pool_ref(x, 3, 2, dy)
    for xa, cut in ((x, "images"), (_channels_first_view(x), "channels")):
        blocks = pool_ops._cache_blocks(xa, 27, 8)
        assert len(blocks) == (3 if cut == "images" else 4)
        geo = pool_ops._pool_geo(xa.shape, (3, 3), (2, 2), "VALID", "max_pool")
        y, arg = pool_ops._max_and_arg(np, xa, (3, 3), geo, True)
        np.testing.assert_array_equal(y, y_ref)
        dx = pool_ops._max_pool_grad.prim.forward(np, dy, xa, (3, 3), (2, 2), "VALID", arg)
        np.testing.assert_allclose(dx, dx_ref, rtol=1e-12)
        sel = pool_ops._max_pool_select.prim.forward(np, xa, xa, (3, 3), (2, 2), "VALID", arg)
        np.testing.assert_array_equal(sel, y_ref)
