"""Grouped, depthwise and fused convolutions against compositions of plain convolutions, and
the chunked kernels (row bands, several images per chunk) against the reference."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative
from layerflow._src.ops import conv_kernels, conv_rows
from layerflow._src.ops.conv_ops import fused_conv2d
from tests.ops.test_conv_ops import conv_ref, pool_ref

rng = np.random.default_rng(11)


def grouped_ref(x, w, groups, strides, padding, dil=(1, 1)):
    """A grouped convolution as `groups` plain convolutions on channel slices, concatenated."""
    cg, mg = x.shape[-1] // groups, w.shape[-1] // groups
    outs = [conv_ref(x[..., k * cg : (k + 1) * cg], w[..., k * mg : (k + 1) * mg], strides,
                     padding, dil) for k in range(groups)]  # fmt: skip
    return np.concatenate(outs, axis=-1)


GROUP_CASES = [
    ((2, 6, 5, 4), (3, 3, 2, 6), 2, (1, 1), "SAME", (1, 1)),
    ((1, 7, 7, 6), (2, 3, 2, 3), 3, (2, 1), "VALID", (1, 1)),
    ((2, 7, 6, 4), (3, 2, 1, 8), 4, (1, 2), "SAME", (2, 1)),
    ((1, 5, 5, 4), (1, 1, 2, 4), 2, (1, 1), "VALID", (1, 1)),  # pointwise: a plain GEMM
]


@pytest.mark.parametrize("xs,ws,groups,strides,padding,dil", GROUP_CASES)
def test_grouped_conv2d_is_the_concatenation_of_plain_convs(xs, ws, groups, strides, padding,
                                                           dil):  # fmt: skip
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, b: tf.nn.conv2d(a, b, strides, padding, dilations=dil, groups=groups),
             [x, w], lambda a, b: grouped_ref(a, b, groups, strides, padding, dil),
             grad_rtol=1e-4)  # fmt: skip
    # Inferred from the channel counts, as TF does; and the same gradients as the composition
    # of plain layerflow convolutions.
    xt, wt = tf.constant(x), tf.constant(w)
    cg, mg = xs[-1] // groups, ws[-1] // groups
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([xt, wt])
        y = tf.nn.conv2d(xt, wt, strides, padding, dilations=dil)
        parts = [tf.nn.conv2d(xt[..., k * cg : (k + 1) * cg], wt[..., k * mg : (k + 1) * mg],
                              strides, padding, dilations=dil) for k in range(groups)]  # fmt: skip
        z = tf.concat(parts, axis=-1)
        loss_y, loss_z = tf.reduce_sum(y * y), tf.reduce_sum(z * z)
    np.testing.assert_allclose(y.numpy(), z.numpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(tape.gradient(loss_y, [xt, wt]), tape.gradient(loss_z, [xt, wt])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-10)


def test_grouped_conv_second_derivative_and_conv1d_groups():
    w = tf.constant(rng.standard_normal((2, 2, 1, 4)))
    check_second_derivative(
        lambda t: tf.reduce_sum(tf.nn.conv2d(t, w, 1, "SAME", groups=2) ** 2),
        rng.standard_normal((1, 3, 3, 2)),
    )
    x, f = rng.standard_normal((2, 9, 4)), rng.standard_normal((3, 2, 6))
    check_op(lambda a, b: tf.nn.conv1d(a, b, 2, "SAME", groups=2), [x, f],
             lambda a, b: grouped_ref(a[:, None], b[None], 2, (1, 2), "SAME")[:, 0])  # fmt: skip


def test_group_errors_name_the_shapes_and_the_fix():
    x = tf.ones((1, 4, 4, 6))
    with pytest.raises(tf.errors.InvalidArgumentError, match="6 channels but the filters expect 4"):
        tf.nn.conv2d(x, tf.ones((3, 3, 4, 2)), 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="5 output channels.*groups=3"):
        tf.nn.conv2d(x, tf.ones((3, 3, 2, 5)), 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="groups=2.*must be"):
        tf.nn.conv2d(x, tf.ones((3, 3, 2, 6)), 1, "SAME", groups=2)
    with pytest.raises(ValueError, match="positive integer"):
        tf.nn.conv2d(x, tf.ones((3, 3, 6, 6)), 1, "SAME", groups=0)


def test_depthwise_shares_the_grouped_path():
    """depthwise_conv2d == conv2d(groups=C) with the filter seen as [KH, KW, 1, C * M], values
    and gradients, strided, with a channel multiplier."""
    x, f = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 3, 3, 2))

    def depthwise_ref(a, k):
        return np.concatenate([conv_ref(a[..., c : c + 1], k[:, :, c : c + 1, :], (2, 2), "SAME")
                               for c in range(a.shape[-1])], axis=-1)  # fmt: skip

    check_op(lambda a, k: tf.nn.depthwise_conv2d(a, k, [1, 2, 2, 1], "SAME"), [x, f],
             depthwise_ref, grad_rtol=1e-4)  # fmt: skip
    grouped = tf.nn.conv2d(x, np.reshape(f, (3, 3, 1, 6)), 2, "SAME", groups=3)
    np.testing.assert_allclose(tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME").numpy(),
                               grouped.numpy(), rtol=1e-12)  # fmt: skip


@pytest.mark.parametrize("relu", [False, True])
def test_fused_conv_bias_relu(relu):
    x, w = rng.standard_normal((2, 5, 6, 3)), rng.standard_normal((3, 3, 3, 4))
    b = rng.standard_normal(4) * 0.5

    def ref(a, k, c):
        out = conv_ref(a, k, (1, 1), "SAME") + c
        return np.maximum(out, 0) if relu else out

    act = "relu" if relu else None
    check_op(lambda a, k, c: fused_conv2d(a, k, c, 1, "SAME", activation=act), [x, w, b], ref,
             grad_rtol=1e-4)  # fmt: skip
    wt, bt = tf.constant(w), tf.constant(b)
    check_second_derivative(
        lambda t: tf.reduce_sum(fused_conv2d(t, wt, bt, 1, "SAME", activation=act) ** 2), x[:1]
    )


def test_conv2d_layer_fuses_bias_and_relu():
    """Conv2D(activation='relu') is one tape node holding one activation, same values."""
    layer = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    with tf.GradientTape() as tape:
        y = layer(x)
    assert [node[0].name for node in tape._nodes] == ["conv2d_bias_activation"]
    ref = np.maximum(conv_ref(x.numpy(), layer.kernel.numpy(), (1, 1), "SAME")
                     + layer.bias.numpy(), 0)  # fmt: skip
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)


CHUNK_CASES = [
    ((3, 9, 8, 2), (3, 3, 2, 4), (1, 1), "SAME", (1, 1), 1),
    ((3, 11, 9, 4), (3, 2, 2, 6), (2, 2), "SAME", (1, 1), 2),
    ((3, 10, 10, 2), (3, 3, 2, 3), (1, 1), "VALID", (2, 2), 1),
    ((3, 6, 6, 4), (1, 1, 4, 5), (2, 1), "VALID", (1, 1), 1),
]


@pytest.mark.parametrize("layout", ["channels-first", "rows"])
@pytest.mark.parametrize("budget", [1, "images"])
@pytest.mark.parametrize("xs,ws,strides,padding,dil,groups", CHUNK_CASES)
def test_chunked_kernels_match_the_reference(monkeypatch, layout, budget, xs, ws, strides,
                                             padding, dil, groups):  # fmt: skip
    """A tiny budget cuts the output into one-row bands, a small one into several rows or
    images per chunk; values and all three gradients match, padding clipped at band edges.
    Patches by channels-first im2col, or gathered from channels-last frames (`conv_rows`)."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)  # the im2col algorithm
    rows = layout == "rows"
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 0 if rows else 10**9)
    monkeypatch.setattr(conv_kernels, "ROWS_OVER_CF", 0)
    geo = conv_kernels.geometry(xs[1:3], ws[:2], strides, dil, padding, "conv2d")
    cv = conv_kernels.Conv(xs, ws, (*geo, strides, dil), groups)
    assert cv.rows == (rows and not cv.pointwise and strides == (1, 1))  # stride 1 only
    if budget == "images":  # whole images per chunk, two when there are three
        budget = 2 * cv.per_pixel * geo[0][0] * geo[0][1] + 1
    monkeypatch.setattr(conv_kernels, "BUDGET_BYTES", budget)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[-1])
    calls = []
    if cv.rows:
        real_gather = conv_rows.gather
        spy = lambda *a: calls.append((0, 0) + a[2:4]) or real_gather(*a)  # noqa: E731
        monkeypatch.setattr(conv_rows, "gather", spy)
    else:
        real = conv_kernels.im2col
        monkeypatch.setattr(conv_kernels, "im2col", lambda *a: calls.append(a[3]) or real(*a))
    fused_conv2d(x, w, b, strides, padding, dilations=dil, groups=groups)
    assert len(calls) > 1  # the case is chunked
    if budget > 1:
        assert all(r1 - r0 == geo[0][0] for _, _, r0, r1 in calls)  # whole images

    def ref(a, k, c):
        return np.maximum(grouped_ref(a, k, groups, strides, padding, dil) + c, 0)

    check_op(lambda a, k, c: fused_conv2d(a, k, c, strides, padding, dilations=dil,
                                          groups=groups, activation="relu"),
             [x, w, b], ref, grad_rtol=1e-4, dtypes=("float64",))  # fmt: skip


def test_chunk_plan_covers_every_output_once():
    for n, oh, ow, per in [(4, 7, 5, 8), (3, 50, 40, 10**6), (5, 3, 3, 1)]:
        seen = np.zeros((n, oh), int)
        for n0, n1, r0, r1 in conv_kernels.chunks(n, oh, ow, per):
            seen[n0:n1, r0:r1] += 1
        assert (seen == 1).all()


def test_max_pool_gradient_goes_to_the_first_maximum_and_in_blocks(monkeypatch):
    """Ties: TF gives each window's gradient to its first maximal element; the channel blocks
    a small budget forces give the same result as one block."""
    x = np.zeros((1, 4, 4, 3))
    x[0, 1, 1] = x[0, 1, 0] = 5.0  # a tie inside the first 2x2 window
    dy = rng.standard_normal((1, 2, 2, 3))
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool2d(xt, 2, 2, "VALID")
    g = tape.gradient(y, xt, output_gradients=tf.constant(dy)).numpy()
    np.testing.assert_array_equal(g[0, 1, 0], dy[0, 0, 0])
    np.testing.assert_array_equal(g[0, 1, 1], 0)
    assert np.count_nonzero(g) == 12  # one element per window and channel
    monkeypatch.setattr(conv_kernels, "BUDGET_BYTES", 1)
    xs = rng.permutation(2 * 7 * 6 * 3).reshape(2, 7, 6, 3) / 10.0
    check_op(lambda a: tf.nn.max_pool2d(a, 3, 2, "SAME"), [xs],
             lambda a: pool_ref(a, (3, 3), (2, 2), "SAME", "max"), eps=1e-4)  # fmt: skip


def test_pool_ops_is_the_home_and_conv_ops_reexports():
    from layerflow._src.ops import conv_ops, pool_ops

    for name in ("max_pool", "max_pool1d", "max_pool2d", "avg_pool", "avg_pool1d", "avg_pool2d"):
        assert getattr(conv_ops, name) is getattr(pool_ops, name) is getattr(tf.nn, name)
