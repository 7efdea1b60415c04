"""The convolution algorithms `conv_kernels.Conv` picks per shape, each against the NumPy
reference: values, finite-difference gradients of input, filter and bias, fused relu.

- im2col: patches gathered tap by tap into a budgeted buffer, one batched GEMM per chunk;
- shifted frames (`flat`): stride 1, each tap's patch rows one contiguous slice of the padded
  frames, the input gradient added back the same way (no col2im loop).

`FLAT_WASTE` forces the choice: 0 never takes the shifted frames, a large value (with
`FLAT_EXTRA`) always does for stride 1; a small `CHUNK_BYTES` or `BUDGET_BYTES` cuts the work
into several images per chunk or bands of rows, with a shorter last chunk."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op
from layerflow._src.ops import conv_kernels
from layerflow._src.ops.conv_ops import fused_conv2d
from tests.ops.test_conv_groups import grouped_ref

rng = np.random.default_rng(5)

# (input, filter, groups, padding, dilations): stride 1, where both algorithms apply.
CASES = [
    ((3, 8, 7, 1), (5, 5, 1, 3), 1, "SAME", (1, 1)),  # LeNet's first layer, small
    ((2, 7, 7, 3), (3, 3, 3, 4), 1, "VALID", (1, 1)),
    ((2, 6, 8, 4), (3, 2, 2, 6), 2, "SAME", (1, 1)),  # groups
    ((2, 9, 8, 2), (3, 3, 2, 2), 1, "SAME", (2, 1)),  # dilation
    ((1, 8, 9, 4), (2, 3, 1, 8), 4, "VALID", (1, 2)),  # depthwise-like, dilated
    ((2, 6, 5, 2), (3, 3, 2, 3), 1, [[0, 0], [2, 0], [1, 3], [0, 0]], (1, 1)),  # explicit
    # padding wider than the kernel: outputs that read only padding, cropped from dz's frame
    ((2, 4, 5, 3), (2, 2, 3, 2), 1, [[0, 0], [3, 1], [0, 2], [0, 0]], (1, 1)),
]


def _ref(a, k, groups, padding, dil):
    """The reference convolution; explicit padding as np.pad, then VALID."""
    if not isinstance(padding, str):
        a, padding = np.pad(a, padding), "VALID"
    return grouped_ref(a, k, groups, (1, 1), padding, dil)


def _cv(xs, ws, groups, padding, dil):
    geo = conv_kernels.geometry(xs[1:3], ws[:2], (1, 1), dil, padding, "conv2d")
    return conv_kernels.Conv(xs, ws, (*geo, (1, 1), dil), groups)


@pytest.fixture(params=["im2col", "flat", "flat-images", "flat-bands", "rows", "rows-col2im",
                        "rows-bands"])  # fmt: skip
def algorithm(request, monkeypatch):
    if request.param == "im2col":
        monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
        monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)
    elif request.param.startswith("rows"):  # patches gathered from channels-last frames
        monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
        monkeypatch.setattr(conv_kernels, "ROWS_RUN", 0)
        monkeypatch.setattr(conv_kernels, "ROWS_OVER_CF", 0)
        monkeypatch.setattr(conv_kernels, "DX_GATHER_WASTE", 1e9)  # dx by dz's patches
        monkeypatch.setattr(conv_kernels, "DX_GATHER_M", 1e9)
        if request.param == "rows-col2im":
            monkeypatch.setattr(conv_kernels, "DX_GATHER_WASTE", 0)
        if request.param == "rows-bands":  # bands of rows (dx by col2im), several images
            monkeypatch.setattr(conv_kernels, "chunks", _two_rows_or_images)
    else:
        monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 1e9)
        monkeypatch.setattr(conv_kernels, "FLAT_EXTRA", 1e9)
    if request.param == "flat-images":  # two images per chunk: a shorter last chunk
        monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", 1)
        monkeypatch.setattr(conv_kernels, "flat_chunks", _two_images(conv_kernels.flat_chunks))
    if request.param == "flat-bands":  # bands of two rows, the last one shorter
        monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", 1)
        monkeypatch.setattr(conv_kernels, "flat_chunks", _two_rows)
    return request.param


def _two_images(real):
    def plan(n, oh, hp, wp, per_pixel, cached):
        return [(n0, min(n, n0 + 2), 0, oh) for n0 in range(0, n, 2)]

    return plan


def _two_rows_or_images(n, oh, ow, per_pixel, budget=None):
    """Two images per chunk for the first images, then bands of two rows of the last one."""
    head = [(n0, min(n - 1, n0 + 2), 0, oh) for n0 in range(0, n - 1, 2)]
    return head + [(n - 1, n, r0, min(oh, r0 + 2)) for r0 in range(0, oh, 2)]


def _two_rows(n, oh, hp, wp, per_pixel, cached):
    return [(i, i + 1, r0, min(oh, r0 + 2)) for i in range(n) for r0 in range(0, oh, 2)]


@pytest.mark.parametrize("xs,ws,groups,padding,dil", CASES)
def test_conv_values_and_gradients(algorithm, xs, ws, groups, padding, dil):
    cv = _cv(xs, ws, groups, padding, dil)
    assert cv.flat == algorithm.startswith("flat")
    assert cv.rows == algorithm.startswith("rows")
    assert cv.dx_rows == (algorithm == "rows")
    if algorithm == "flat-bands":
        assert any(r1 - r0 < cv.geo[0][0] for _, _, r0, r1 in cv.plan)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, k: tf.nn.conv2d(a, k, 1, padding, dilations=dil, groups=groups), [x, w],
             lambda a, k: _ref(a, k, groups, padding, dil), grad_rtol=1e-4)  # fmt: skip


@pytest.mark.parametrize("xs,ws,groups,padding,dil", CASES[:3] + CASES[5:])
@pytest.mark.parametrize("relu", [False, True])
def test_fused_bias_and_relu(algorithm, xs, ws, groups, padding, dil, relu):
    check_fused_bias_and_relu(rng, xs, ws, groups, padding, dil, relu)


def check_fused_bias_and_relu(rng, xs, ws, groups, padding, dil, relu):
    """The fused convolution + bias (+ relu) against `_ref`, values and gradients."""
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[-1])

    def ref(a, k, c):
        out = _ref(a, k, groups, padding, dil) + c
        return np.maximum(out, 0) if relu else out

    act = "relu" if relu else None
    check_op(lambda a, k, c: fused_conv2d(a, k, c, 1, padding, dilations=dil, groups=groups,
                                          activation=act),
             [x, w, b], ref, grad_rtol=1e-4, dtypes=("float64",))  # fmt: skip


def test_input_gradient_alone_and_filter_gradient_alone(algorithm):
    """The two backprop ops (each the other's gradient) on the same algorithm."""
    xs, ws = (2, 7, 6, 3), (3, 3, 3, 4)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    dy = rng.standard_normal((2, 7, 6, 4))
    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([xt, wt])
        y = tf.nn.conv2d(xt, wt, 1, "SAME")
    gx, gw = tape.gradient(y, [xt, wt], output_gradients=tf.constant(dy))
    # The reference gradients: the adjoint of the reference convolution, by its linearity.
    ref_gx = np.zeros(xs)
    for idx in np.ndindex(*xs):
        e = np.zeros(xs)
        e[idx] = 1.0
        ref_gx[idx] = (grouped_ref(e, w, 1, (1, 1), "SAME") * dy).sum()
    ref_gw = np.zeros(ws)
    for idx in np.ndindex(*ws):
        e = np.zeros(ws)
        e[idx] = 1.0
        ref_gw[idx] = (grouped_ref(x, e, 1, (1, 1), "SAME") * dy).sum()
    np.testing.assert_allclose(gx.numpy(), ref_gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gw.numpy(), ref_gw, rtol=1e-10, atol=1e-10)


def test_the_choice_per_shape():
    """Stride 1 with a frame close to the output takes the shifted frames; strides, 1x1 and
    frames far larger than the output (a big kernel on a small image) take im2col."""
    assert _cv((8, 28, 28, 1), (5, 5, 1, 6), 1, "SAME", (1, 1)).flat  # LeNet conv 1
    assert _cv((8, 56, 56, 64), (3, 3, 64, 64), 1, "SAME", (1, 1)).flat  # VGG-style
    assert not _cv((8, 14, 14, 6), (9, 9, 6, 16), 1, "VALID", (1, 1)).flat  # 196 vs 36 pixels
    assert not _cv((8, 8, 8, 4), (1, 1, 4, 8), 1, "VALID", (1, 1)).flat  # pointwise GEMM
    # Many filters on a small image: the frame's wasted GEMM work outweighs im2col's copies.
    assert _cv((16, 24, 24, 64), (3, 3, 64, 64), 1, "SAME", (1, 1)).flat  # ResNet stage 1
    assert not _cv((16, 12, 12, 128), (3, 3, 128, 128), 1, "SAME", (1, 1)).flat  # stage 2
    assert _cv((16, 12, 12, 128), (3, 3, 128, 128), 8, "SAME", (1, 1)).flat  # 16 per group
    geo = conv_kernels.geometry((28, 28), (5, 5), (2, 2), (1, 1), "SAME", "conv2d")
    assert not conv_kernels.Conv((8, 28, 28, 1), (5, 5, 1, 6), (*geo, (2, 2), (1, 1)), 1).flat


def test_flat_chunks_cover_every_output_once_within_the_budget(monkeypatch):
    monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", 10_000)
    for n, oh, hp, wp in [(5, 28, 32, 32), (3, 10, 14, 14), (2, 200, 202, 202)]:
        plan = conv_kernels.flat_chunks(n, oh, hp, wp, 8 * 60, 4 * 30)
        seen = np.zeros((n, oh), int)
        for n0, n1, r0, r1 in plan:
            seen[n0:n1, r0:r1] += 1
            assert (r0, r1) == (0, oh) or n1 - n0 == 1  # whole images or bands of one
        assert (seen == 1).all()


@pytest.mark.parametrize("strides", [1, 2])
def test_an_empty_batch_gives_an_empty_output_and_zero_gradients(strides):
    """As TF: (0, H, W, C) in, (0, OH, OW, M) out; the kernels' gradients are zero."""
    y = fused_conv2d(tf.zeros((0, 6, 6, 2)), tf.ones((3, 3, 2, 4)), tf.ones((4,)), strides,
                     "SAME", activation="relu")  # fmt: skip
    assert tuple(y.shape) == (0, 6 // strides, 6 // strides, 4)
    geo = conv_kernels.geometry((6, 6), (3, 3), (strides,) * 2, (1, 1), "SAME", "conv2d")
    cv = conv_kernels.Conv((0, 6, 6, 2), (3, 3, 2, 4), (*geo, (strides,) * 2, (1, 1)), 1)
    dx, dw, db = conv_kernels.conv_backward(
        np,
        np.zeros((0, 6, 6, 2)),
        np.ones((3, 3, 2, 4)),
        np.zeros(y.shape),
        cv,
        x_shape=(0, 6, 6, 2),
        need_x=True,
        need_w=True,
        need_b=True,
    )
    assert dx.shape == (0, 6, 6, 2) and dw.shape == (3, 3, 2, 4) and db.shape == (4,)
    assert not dw.any() and not db.any()


def test_shifted_frames_compute_no_input_gradient_for_the_data_batch(monkeypatch):
    """As with im2col's col2im: a first layer's backward pass asks for dw only."""
    asked = []
    real = conv_kernels.flat_backward

    def spy(xp, x, w, dy, cv, need_x, need_w, need_b, mask):
        asked.append((tuple(x.shape) if x is not None else None, need_x, need_w))
        return real(xp, x, w, dy, cv, need_x, need_w, need_b, mask)

    monkeypatch.setattr(conv_kernels, "flat_backward", spy)
    x = tf.constant(rng.random((2, 8, 8, 1), dtype=np.float32))
    w1 = tf.Variable(rng.standard_normal((3, 3, 1, 4)).astype(np.float32))
    w2 = tf.Variable(rng.standard_normal((3, 3, 4, 2)).astype(np.float32))
    with tf.GradientTape() as tape:
        h = tf.sigmoid(tf.nn.conv2d(x, w1, 1, "SAME"))
        y = tf.reduce_sum(tf.nn.conv2d(h, w2, 1, "SAME"))
    tape.gradient(y, [w1, w2])
    assert sorted(asked) == [((2, 8, 8, 1), False, True), ((2, 8, 8, 4), True, True)]


@pytest.mark.parametrize("ws,groups", [((1, 1, 4, 6), 1), ((1, 1, 2, 6), 2), ((3, 3, 4, 6), 1)])
@pytest.mark.parametrize("relu", [False, True])
def test_backward_reads_a_channels_first_dy_in_place(monkeypatch, ws, groups, relu):
    """A conv whose dy comes from the next conv's input gradient (channels-first, as conv
    outputs are): read in place when no relu mask applies; a pointwise conv writes its input
    gradient by the GEMM straight into dx. Strided im2col here (FLAT_WASTE 0), both layers."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)  # channels-first
    xs = (2, 5, 6, 4)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[-1])
    w2 = rng.standard_normal((1, 1, 6, 3))
    seen = []
    real = conv_kernels.conv_backward

    def spy(xp, x, w, dy, cv, **kw):
        seen.append((cv.pointwise, np.moveaxis(dy, -1, 0).flags.c_contiguous))
        return real(xp, x, w, dy, cv, **kw)

    monkeypatch.setattr(conv_kernels, "conv_backward", spy)
    act = "relu" if relu else None

    def net(a, k, c):
        h = fused_conv2d(a, k, c, 1, "SAME", groups=groups, activation=act)
        return tf.nn.conv2d(h, tf.constant(w2, dtype=a.dtype), 1, "VALID")

    def ref(a, k, c):
        h = _ref(a, k, groups, "SAME", (1, 1)) + c
        h = np.maximum(h, 0) if relu else h
        return np.einsum("nhwc,cm->nhwm", h, w2[0, 0])

    check_op(net, [x, w, b], ref, grad_rtol=1e-4, dtypes=("float64",))
    # The first layer's gradient got a channels-first dy from the second one.
    assert (ws[0] == 1, True) in seen


@pytest.mark.parametrize("strides", [1, 2])
def test_im2col_zeroes_the_padding_once_for_chunks_of_the_same_shape(monkeypatch, strides):
    """Chunks of one image each, then bands of rows: the padding's zeros written by the first
    chunk serve the next ones of the same shape; a chunk of another shape writes its own."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)  # channels-first
    xs, ws = (4, 6, 5, 2), (3, 3, 2, 3)

    def plan(n, oh, ow, per_pixel, budget=None):
        return [(i, i + 1, 0, oh) for i in range(n - 1)] + [(n - 1, n, 0, 2), (n - 1, n, 2, oh)]

    monkeypatch.setattr(conv_kernels, "chunks", plan)
    zeros = []
    real = conv_kernels.im2col

    def spy(*a):
        zeros.append(a[5])
        return real(*a)

    monkeypatch.setattr(conv_kernels, "im2col", spy)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[-1])

    def ref(a, k, c):
        return np.maximum(grouped_ref(a, k, 1, (strides,) * 2, "SAME", (1, 1)) + c, 0)

    check_op(lambda a, k, c: fused_conv2d(a, k, c, strides, "SAME", activation="relu"),
             [x, w, b], ref, grad_rtol=1e-4, dtypes=("float64",))  # fmt: skip
    assert zeros[:5] == [True, False, False, True, True]  # the forward's five chunks


@pytest.mark.parametrize("relu", [False, True])
def test_rows_take_channels_first_inputs_by_im2col_with_the_same_result(monkeypatch, relu):
    """An input laid out channels-first (as conv and pool outputs are) is not copied into
    channels-last frames: its patches come from channels-first im2col; values and gradients
    (dx still by dz's patches) match those of the same input laid out channels-last."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 0)
    monkeypatch.setattr(conv_kernels, "ROWS_OVER_CF", 0)
    xs, ws = (3, 6, 7, 4), (3, 3, 4, 4)
    assert _cv(xs, ws, 1, "SAME", (1, 1)).dx_rows
    x = rng.standard_normal(xs)
    x_cf = np.ascontiguousarray(x.transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)
    w, b = rng.standard_normal(ws), rng.standard_normal(ws[-1])
    gathered, im2col = [], []
    real_g, real_i = conv_kernels.conv_rows.gather, conv_kernels.im2col
    monkeypatch.setattr(conv_kernels.conv_rows, "gather",
                        lambda *a: gathered.append(a[1].shape[-1]) or real_g(*a))  # fmt: skip
    monkeypatch.setattr(conv_kernels, "im2col", lambda *a: im2col.append(1) or real_i(*a))
    act = "relu" if relu else None
    outs = []
    for a in (x, x_cf):
        gathered.clear()
        im2col.clear()
        at, wt, bt = tf.constant(a), tf.constant(w), tf.constant(b)
        with tf.GradientTape() as tape:
            tape.watch([at, wt, bt])
            y = fused_conv2d(at, wt, bt, 1, "SAME", activation=act)
            loss = tf.reduce_sum(y * y)
        outs.append([y.numpy(), *(g.numpy() for g in tape.gradient(loss, [at, wt, bt]))])
        # x's patches (one chunk, kept for the filter gradient), then dz's for dx
        if a is x:  # from channels-last frames of x
            assert gathered == [4, 4] and not im2col
        else:  # by im2col; dz's are still gathered
            assert gathered == [4] and len(im2col) == 1
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    ref = _ref(x, w, 1, "SAME", (1, 1)) + b
    np.testing.assert_allclose(outs[0][0], np.maximum(ref, 0) if relu else ref, rtol=1e-10)


@pytest.mark.parametrize(
    "strides,dil,groups",
    [((1, 1), (1, 1), 1), ((2, 3), (1, 1), 1), ((1, 2), (2, 1), 1), ((2, 1), (1, 2), 2)],
)
def test_gather_from_channels_last_frames_matches_a_tap_loop(strides, dil, groups):
    """`conv_rows.gather` on its own: strides, dilations and groups, whole images and a band
    of rows, laid out (groups, K, pixels) with K in the filter's (row, column, channel) order."""
    from layerflow._src.ops import conv_rows

    kh, kw, n, hp, wp, c = 3, 2, 2, 11, 12, 4
    fr = rng.standard_normal((n, hp, wp, c))
    oh = (hp - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (wp - (kw - 1) * dil[1] - 1) // strides[1] + 1
    cg = c // groups
    want = np.empty((groups, kh, kw, cg, n, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = fr[:, i * dil[0] :: strides[0], j * dil[1] :: strides[1]][:, :oh, :ow]
            want[:, i, j] = win.reshape(n, oh, ow, groups, cg).transpose(3, 4, 0, 1, 2)
    for r0, r1 in [(0, oh), (1, oh - 1)]:
        buf = np.empty(groups * kh * kw * cg * n * oh * ow)
        got = conv_rows.gather(np, fr, r0, r1, (oh, ow), (kh, kw), strides, dil, groups, buf)
        ref = want[..., r0:r1, :].reshape(groups, kh * kw * cg, -1)
        np.testing.assert_array_equal(got, ref)


def test_plans_are_computed_once_per_shape_and_tuning(monkeypatch):
    """Geometry and chunk plans are computed on a shape's first call only (forward and
    backward of later steps reuse them); a changed tuning knob plans afresh."""
    calls = []
    real = conv_kernels.geometry
    monkeypatch.setattr(conv_kernels, "geometry", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(conv_kernels, "_PLANS", {})
    x = tf.constant(rng.standard_normal((2, 7, 6, 3)))
    w = tf.Variable(rng.standard_normal((3, 3, 3, 5)))

    def step():
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.nn.conv2d(x, w, 1, "SAME", dilations=(1, 2)) ** 2)
        return tape.gradient(y, w)

    g1 = step()
    assert len(calls) == 1
    step()
    assert len(calls) == 1
    attrs = ((1, 1), (1, 2), "SAME", 1)
    cv = conv_kernels.plan((2, 7, 6, 3), (3, 3, 3, 5), attrs, "conv2d")
    assert conv_kernels.plan([2, 7, 6, 3], (3, 3, 3, 5), attrs, "conv2d") is cv
    monkeypatch.setattr(conv_kernels, "BUDGET_BYTES", 1)
    fresh = conv_kernels.plan((2, 7, 6, 3), (3, 3, 3, 5), attrs, "conv2d")
    assert fresh is not cv and len(fresh.plan) > len(cv.plan) and len(calls) == 2
    np.testing.assert_allclose(step().numpy(), g1.numpy(), rtol=1e-12)
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
        conv_kernels.plan((2, 2, 2, 3), (3, 3, 3, 5), ((1, 1), (1, 1), "VALID", 1), "conv2d")


@pytest.mark.parametrize("rows", [False, True])
@pytest.mark.parametrize("keep_bytes", [0, 1 << 20])
def test_patches_of_several_chunks_are_kept_within_keep_bytes(monkeypatch, rows, keep_bytes):
    """A recorded forward in several chunks keeps every chunk's patches (each in a place of
    its own) when they all fit KEEP_BYTES: the filter gradient builds none again; else the
    backward pass rebuilds them chunk by chunk. The gradients are the same either way."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 0 if rows else 10**9)
    monkeypatch.setattr(conv_kernels, "ROWS_OVER_CF", 0)
    monkeypatch.setattr(conv_kernels, "KEEP_BYTES", keep_bytes)
    monkeypatch.setattr(conv_kernels, "chunks", _two_rows_or_images)
    xs, ws = (3, 5, 6, 2), (3, 3, 2, 3)
    cv = _cv(xs, ws, 1, "SAME", (1, 1))
    assert len(cv.plan) == 4 and cv.rows == rows
    built = []
    real_g, real_i = conv_kernels.conv_rows.gather, conv_kernels.im2col
    monkeypatch.setattr(conv_kernels.conv_rows, "gather",
                        lambda *a: built.append(a[1].shape[-1] == 2) or real_g(*a))  # fmt: skip
    monkeypatch.setattr(conv_kernels, "im2col", lambda *a: built.append(True) or real_i(*a))
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[-1])
    xt, wt, bt = tf.constant(x), tf.Variable(w), tf.Variable(b)
    with tf.GradientTape() as tape:
        y = fused_conv2d(xt, wt, bt, 1, "SAME", activation="relu")
        loss = tf.reduce_sum(y * y)
    gw, gb = tape.gradient(loss, [wt, bt])
    assert built.count(True) == (4 if keep_bytes else 8)  # x's patches, forward (+ backward)

    def ref(k, c):
        return np.maximum(_ref(x, k, 1, "SAME", (1, 1)) + c, 0)

    eps = 1e-6
    for got, arg in ((gw, 0), (gb, 1)):
        want = np.zeros(got.shape)
        for idx in np.ndindex(*got.shape):
            args = [w.copy(), b.copy()]
            args[arg][idx] += eps
            hi = (ref(*args) ** 2).sum()
            args[arg][idx] -= 2 * eps
            want[idx] = (hi - (ref(*args) ** 2).sum()) / (2 * eps)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
