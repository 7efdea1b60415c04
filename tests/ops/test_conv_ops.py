"""Convolution and pooling against direct NumPy loops, with numerical gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(3)


def _same_pads(n, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + eff - n, 0)
    return out, total // 2


def conv_ref(x, w, strides, padding, dilations=(1, 1)):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    if padding == "SAME":
        oh, pt = _same_pads(h, kh, sh, dh)
        ow, pl = _same_pads(wd, kw, sw, dw)
    else:
        oh, ow, pt, pl = (h - (kh - 1) * dh - 1) // sh + 1, (wd - (kw - 1) * dw - 1) // sw + 1, 0, 0
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r, q = i * sh + a * dh - pt, j * sw + b * dw - pl
                    if 0 <= r < h and 0 <= q < wd:
                        out[:, i, j, :] += x[:, r, q, :] @ w[a, b]
    return out


def pool_ref(x, k, s, padding, kind):
    n, h, wd, c = x.shape
    if padding == "SAME":
        oh, pt = _same_pads(h, k[0], s[0], 1)
        ow, pl = _same_pads(wd, k[1], s[1], 1)
    else:
        oh, ow, pt, pl = (h - k[0]) // s[0] + 1, (wd - k[1]) // s[1] + 1, 0, 0
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * s[0] - pt, j * s[1] - pl
            win = x[:, max(r0, 0) : r0 + k[0], max(q0, 0) : q0 + k[1], :]
            out[:, i, j, :] = win.max((1, 2)) if kind == "max" else win.mean((1, 2))
    return out


CONV_CASES = [
    ((2, 5, 6, 3), (3, 3, 3, 2), (1, 1), "SAME", (1, 1)),
    ((1, 7, 6, 2), (3, 2, 2, 3), (2, 2), "SAME", (1, 1)),
    ((2, 6, 7, 1), (2, 3, 1, 2), (2, 1), "VALID", (1, 1)),
    ((1, 7, 7, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),
    ((1, 8, 8, 1), (2, 2, 1, 1), (1, 1), "VALID", (3, 2)),
]


@pytest.mark.parametrize("xs,ws,strides,padding,dil", CONV_CASES)
def test_conv2d_forward_and_gradients(xs, ws, strides, padding, dil):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, b: tf.nn.conv2d(a, b, strides, padding, dilations=dil), [x, w],
             lambda a, b: conv_ref(a, b, strides, padding, dil), grad_rtol=1e-4)  # fmt: skip


def test_conv2d_nchw_and_errors():
    x, w = rng.standard_normal((1, 5, 5, 2)), rng.standard_normal((3, 3, 2, 4))
    y = tf.nn.conv2d(np.transpose(x, (0, 3, 1, 2)), w, 1, "SAME", data_format="NCHW")
    np.testing.assert_allclose(
        np.transpose(y.numpy(), (0, 2, 3, 1)), conv_ref(x, w, (1, 1), "SAME")
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="2 channels.*expect 3"):
        tf.nn.conv2d(x, rng.standard_normal((3, 3, 3, 4)), 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
        tf.nn.conv2d(x, rng.standard_normal((7, 7, 2, 1)), 1, "VALID")


def test_conv2d_second_derivative():
    w = tf.constant(rng.standard_normal((2, 2, 1, 2)))
    check_second_derivative(lambda t: tf.reduce_sum(tf.nn.conv2d(t, w, 1, "SAME") ** 2),
                            rng.standard_normal((1, 3, 3, 1)))  # fmt: skip


def test_conv1d_depthwise_and_transpose():
    x, w = rng.standard_normal((2, 9, 3)), rng.standard_normal((3, 3, 4))
    check_op(lambda a, b: tf.nn.conv1d(a, b, 2, "SAME"), [x, w],
             lambda a, b: conv_ref(a[:, None], b[None], (1, 2), "SAME")[:, 0])  # fmt: skip
    x4, dw = rng.standard_normal((1, 5, 5, 2)), rng.standard_normal((3, 3, 2, 2))

    def depthwise_ref(a, f):
        outs = [conv_ref(a[..., c : c + 1], f[:, :, c : c + 1, :], (1, 1), "SAME")
                for c in range(a.shape[-1])]  # fmt: skip
        return np.concatenate(outs, axis=-1)

    check_op(lambda a, f: tf.nn.depthwise_conv2d(a, f, [1, 1, 1, 1], "SAME"), [x4, dw],
             depthwise_ref, grad_rtol=1e-4)  # fmt: skip
    # conv2d_transpose is the adjoint of conv2d: <conv(x), y> == <x, conv_t(y)>.
    xs, ws = rng.standard_normal((1, 6, 6, 2)), rng.standard_normal((3, 3, 2, 4))
    ys = rng.standard_normal((1, 3, 3, 4))
    lhs = np.sum(tf.nn.conv2d(xs, ws, 2, "SAME").numpy() * ys)
    rhs = np.sum(xs * tf.nn.conv2d_transpose(ys, ws, (1, 6, 6, 2), 2, "SAME").numpy())
    assert lhs == pytest.approx(rhs)


POOL_CASES = [((2, 2), (2, 2), "VALID"), ((3, 3), (1, 1), "SAME"), ((3, 2), (2, 2), "SAME"),
              ((3, 1), (3, 1), "VALID"), ((1, 3), (1, 3), "VALID")]  # fmt: skip


@pytest.mark.parametrize("k,s,padding", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling(k, s, padding, kind):
    # Distinct values so the max is unique and finite differences do not cross ties.
    x = rng.permutation(2 * 6 * 7 * 2).reshape(2, 6, 7, 2) / 10.0
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    check_op(lambda a: fn(a, k, s, padding), [x], lambda a: pool_ref(a, k, s, padding, kind),
             eps=1e-4)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool_tiling_windows_fast_path(dtype):
    """stride == pool size with no padding (LeNet's pools) takes the reshape path: same values
    as the window loop, the gradient spreads each share, and second derivatives still work."""
    x = rng.standard_normal((3, 8, 6, 4)).astype(dtype)
    got = tf.nn.avg_pool2d(x, 2, 2, "SAME").numpy()
    assert got.dtype == dtype
    ref = pool_ref(x.astype(np.float64), (2, 2), (2, 2), "SAME", "avg")
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6 if dtype == np.float32 else 1e-14)
    xt = tf.constant(x)
    dy = rng.standard_normal((3, 4, 3, 4)).astype(dtype)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.avg_pool2d(xt, 2, 2, "VALID")
    g = tape.gradient(y, xt, output_gradients=tf.constant(dy)).numpy()
    np.testing.assert_allclose(g, np.repeat(np.repeat(dy / 4, 2, 1), 2, 2), rtol=1e-6)
    check_second_derivative(lambda a: tf.nn.avg_pool2d(a * a, 2, 2, "VALID"),
                            x[:1, :4, :4, :2].astype(np.float64))  # fmt: skip


def test_generic_pool_dispatch_and_1d():
    x = rng.standard_normal((2, 8, 3))
    y = tf.nn.max_pool(x, 2, 2, "VALID")
    np.testing.assert_allclose(y.numpy(), x.reshape(2, 4, 2, 3).max(2))
    y = tf.nn.avg_pool(rng.standard_normal((1, 4, 4, 1)), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    assert y.shape == (1, 2, 2, 1)


def test_forward_patches_are_reused_then_released(monkeypatch):
    """The filter gradient reuses the forward's im2col, saved in the tape's node (a residual,
    no module-global cache); the patches die with the node, and nothing is saved without a
    recording tape."""
    import gc
    import weakref

    from layerflow._src.ops import conv_kernels, conv_ops

    assert not any(hasattr(conv_ops, n) for n in ("_PATCHES", "_patches", "_remember"))
    calls, built = [], []
    real = conv_kernels.im2col

    def spy(*a, **kw):
        cols = real(*a, **kw)
        calls.append(1)
        built.append(weakref.ref(a[4]))  # the buffer the patches live in
        return cols

    monkeypatch.setattr(conv_kernels, "im2col", spy)
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)  # the im2col algorithm
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)  # channels-first
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)))
    w = tf.Variable(rng.standard_normal((3, 3, 3, 4)))
    tf.nn.conv2d(x, w, 1, "SAME")
    gc.collect()
    assert built[0]() is None  # no tape: the patches were not kept
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.nn.conv2d(x, w, 1, "SAME") ** 2)
    (node,) = [n for n in tape._nodes if n[0].name == "conv2d"]
    cols, mask = node[4]["saved"]
    assert cols.shape == (1, 27, 72) and mask is None  # (groups, 3*3*3 taps, 2*6*6 pixels)
    del cols
    del node
    gc.collect()
    assert built[1]() is not None  # held by the tape's node while it can still ask
    g = tape.gradient(y, w)
    assert len(calls) == 2  # the forward without a tape, the forward with one; none in backward
    ref = tf.nn.conv2d(x, w, 1, "SAME").numpy()
    expected = np.einsum("nhwijc,nhwo->ijco", _patches_ref(x.numpy(), 3), 2 * ref)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-10)
    gc.collect()
    assert built[1]() is None  # the tape dropped its nodes: the patches went with them


def _patches_ref(x, k):
    n, h, w, c = x.shape
    p = k // 2
    xp_ = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    out = np.zeros((n, h, w, k, k, c))
    for i in range(k):
        for j in range(k):
            out[:, :, :, i, j] = xp_[:, i : i + h, j : j + w]
    return out


def test_block_pool_leaves_odd_edges_out():
    """stride == pool size on odd sizes (VALID): the last row/column gets no gradient."""
    x = rng.permutation(2 * 7 * 5 * 3).reshape(2, 7, 5, 3) / 10.0
    check_op(lambda a: tf.nn.avg_pool2d(a, 2, 2, "VALID"), [x],
             lambda a: pool_ref(a, (2, 2), (2, 2), "VALID", "avg"), eps=1e-4)  # fmt: skip


def test_channels_first_views_chain_like_contiguous_inputs():
    """Conv and pool outputs are NHWC views of channels-first arrays; feeding such a view or a
    C-contiguous copy of it to the next conv gives the same values and gradients, and a
    LeNet-shaped chain matches the NumPy reference (stride 1, padded and unpadded col2im)."""
    x = rng.standard_normal((3, 9, 9, 1))
    w1, w2 = rng.standard_normal((3, 3, 1, 4)), rng.standard_normal((3, 3, 4, 5))
    h = tf.nn.avg_pool2d(tf.nn.conv2d(x, w1, 1, "SAME"), 2, 2, "VALID")
    assert not h._data.flags.c_contiguous  # the view this test is about
    a = tf.nn.conv2d(h, w2, 1, "VALID").numpy()
    b = tf.nn.conv2d(np.ascontiguousarray(h.numpy()), w2, 1, "VALID").numpy()
    np.testing.assert_array_equal(a, b)

    def chain(a, f1, f2):
        return tf.nn.conv2d(tf.nn.avg_pool2d(tf.nn.conv2d(a, f1, 1, "SAME"), 2, 2, "VALID"),
                            f2, 1, "VALID")  # fmt: skip

    def chain_ref(a, f1, f2):
        return conv_ref(pool_ref(conv_ref(a, f1, (1, 1), "SAME"), (2, 2), (2, 2), "VALID",
                                 "avg"), f2, (1, 1), "VALID")  # fmt: skip

    check_op(chain, [x, w1, w2], chain_ref, grad_rtol=1e-4)
