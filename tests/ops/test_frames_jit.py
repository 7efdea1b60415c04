"""The shifted frames' compiled kernels (`frames_jit`, numba) against the NumPy path they
replace: outputs, relu masks, input and filter gradients bit for bit, the bias gradient within
float rounding (summed in another order); on whole-image chunks and bands of rows (bands
shorter than the taps' reach included), odd shapes, groups, dilation, padding, float32 and
float64, layouts, special values; and the same bits on any number of threads. The oracle
tests of the shifted frames also run here on the NumPy path (`jit.use(False)`), since their
own module runs the compiled one where numba is installed."""

import numpy as np
import pytest

from layerflow._src.backend import jit
from layerflow._src.ops import conv_flat, conv_kernels, conv_small, conv_threads, frames_jit
from tests.ops import test_conv_algorithms as algos
from tests.ops import test_conv_threads as threads_tests

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

rng = np.random.default_rng(23)


def _rows(k):
    def plan(n, oh, hp, wp, per_pixel, cached):
        return [(i, i + 1, r0, min(oh, r0 + k)) for i in range(n) for r0 in range(0, oh, k)]

    return plan


def _images(k):
    def plan(n, oh, hp, wp, per_pixel, cached):
        return [(n0, min(n, n0 + k), 0, oh) for n0 in range(0, n, k)]

    return plan


PLANS = {
    "bands-1": _rows(1),  # a band is shorter than the taps reach below it: carried twice
    "bands-3": _rows(3),
    "images-2": _images(2),  # several frames per chunk, a shorter last chunk
    "images-1": _images(1),
}
# (input, filter, groups, padding, dilations)
SHAPES = [
    ((3, 9, 7, 3), (3, 3, 3, 5), 1, "SAME", (1, 1)),  # 7 columns: mask bits cross the rows
    ((2, 6, 8, 4), (3, 2, 2, 6), 2, "SAME", (1, 1)),  # groups
    ((2, 9, 8, 2), (3, 3, 2, 3), 1, "SAME", (2, 1)),  # dilation
    ((2, 7, 6, 3), (2, 3, 3, 4), 1, "VALID", (1, 1)),
    ((2, 6, 5, 2), (3, 3, 2, 3), 1, [[0, 0], [2, 0], [1, 3], [0, 0]], (1, 1)),  # explicit
    ((2, 4, 5, 3), (2, 2, 3, 2), 1, [[0, 0], [3, 1], [0, 2], [0, 0]], (1, 1)),  # wide padding
    ((3, 5, 11, 1), (1, 3, 1, 9), 1, "SAME", (1, 1)),  # one row tall: frames as tall as out
]


@pytest.fixture
def flat_plan(monkeypatch):
    """Make `conv_kernels` plan shifted frames with the chunks named, in conv_flat's loop."""
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 1e9)
    monkeypatch.setattr(conv_kernels, "FLAT_EXTRA", 1e9)
    monkeypatch.setattr(conv_small, "applies", lambda cv: False)

    def use(name):
        monkeypatch.setattr(conv_kernels, "flat_chunks", PLANS[name])

    return use


def _plan(xs, ws, groups, padding, dil):
    padding = conv_kernels.padding_attr(padding)
    cv = conv_kernels.plan(xs, ws, ((1, 1), dil, padding, groups), "conv2d")
    assert cv.flat
    return cv


def _channels_first(a):
    """`a` (NHWC) as the view of a channels-first array, as conv outputs are."""
    return np.ascontiguousarray(a.transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)


def _both(cv, x, w, b, dy, relu, keep, need=(True, True, True)):
    """{compiled?: (y, mask, dx, dw, db)} of conv_flat on the NumPy path and the compiled one."""
    out = {}
    for fast in (False, True):
        with jit.use(fast):
            y, _, mask = conv_flat.flat_forward(np, x, w, cv, b, relu, keep)
            grads = conv_flat.flat_backward(np, x, w, dy, cv, *need, mask if relu else None)
        out[fast] = (y, mask, *grads)
    return out


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _check(out, dtype):
    (y0, m0, dx0, dw0, db0), (y1, m1, dx1, dw1, db1) = out[False], out[True]
    _same_bits(y0, y1)
    assert (m0 is None) == (m1 is None)
    for a, b in zip(m0 or [], m1 or []):
        _same_bits(a, b)
    for a, b in ((dx0, dx1), (dw0, dw1)):
        assert (a is None) == (b is None)
        if a is not None:
            _same_bits(a, b)
    assert (db0 is None) == (db1 is None)
    if db0 is not None:  # summed in another order: equal within rounding
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(db1, db0, rtol=tol, atol=tol * np.abs(db0).max())


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}-g{s[2]}")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_kernels_give_the_numpy_paths_results(flat_plan, plan, shape, dtype):
    flat_plan(plan)
    xs, ws, groups, padding, dil = shape
    cv = _plan(xs, ws, groups, padding, dil)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[-1]).astype(dtype)
    dy = _channels_first(rng.standard_normal((xs[0], *cv.geo[0], ws[-1])).astype(dtype))
    for relu, keep, bias in ((True, True, b), (True, False, b), (False, True, None)):
        _check(_both(cv, x, w, bias, dy, relu, keep), dtype)


@pytest.mark.parametrize("layout", ["nhwc", "channels-first", "strided"])
def test_any_input_and_gradient_layout(flat_plan, layout):
    """dy channels-first (read in place by the compiled dz), NHWC (the NumPy dz) or strided."""
    flat_plan("bands-3")
    xs, ws = (3, 8, 9, 4), (3, 3, 4, 6)
    cv = _plan(xs, ws, 1, "SAME", (1, 1))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[-1]).astype(np.float32)
    dy = rng.standard_normal((xs[0], *cv.geo[0], ws[-1])).astype(np.float32)
    if layout == "channels-first":
        x, dy = _channels_first(x), _channels_first(dy)
    elif layout == "strided":
        x = np.repeat(x, 2, axis=2)[:, :, ::2]
        dy = np.repeat(dy, 2, axis=1)[:, ::2]
    _check(_both(cv, x, w, b, dy, True, True), np.float32)


@pytest.mark.parametrize("need", [(True, False, False), (False, True, False),
                                  (False, False, True), (True, False, True)])  # fmt: skip
def test_each_gradient_alone(flat_plan, need):
    flat_plan("bands-1")
    xs, ws = (2, 6, 7, 3), (3, 3, 3, 4)
    cv = _plan(xs, ws, 1, "SAME", (1, 1))
    x = rng.standard_normal(xs)
    w, b = rng.standard_normal(ws), rng.standard_normal(ws[-1])
    dy = _channels_first(rng.standard_normal((xs[0], *cv.geo[0], ws[-1])))
    out = _both(cv, x, w, b, dy, True, True, need)
    for got, want in zip(out[True][2:], out[False][2:]):
        assert (got is None) == (want is None)
    _check(out, np.float64)


def test_vgg_shape_by_the_default_plan():
    """A VGG-style layer as `conv_kernels` plans it (bands of rows) on both paths."""
    xs, ws = (2, 40, 40, 16), (3, 3, 16, 16)
    cv = _plan(xs, ws, 1, "SAME", (1, 1))
    x = _channels_first(rng.standard_normal(xs).astype(np.float32))
    w = (rng.standard_normal(ws) * 0.1).astype(np.float32)
    b = rng.standard_normal(ws[-1]).astype(np.float32)
    dy = _channels_first(rng.standard_normal((2, 40, 40, 16)).astype(np.float32))
    _check(_both(cv, x, w, b, dy, True, True), np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nw", [1, 7, 8, 13])
def test_epilogue_keeps_nan_and_signed_zeros_and_packs_the_mask_as_numpy(dtype, nw):
    m, ni, nr, zrow, zimg = 3, 2, 3, 16, 60
    z = rng.standard_normal((m, ni * zimg)).astype(dtype)
    special = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -1.0], dtype)
    z.flat[rng.integers(0, z.size, 40)] = rng.choice(special, 40)
    bias = np.array([0.0, -0.0, 0.5], dtype)
    for has_bias in (False, True):
        for relu in (False, True):
            out = np.full((m, 5 + ni * nr * nw), 7, dtype)
            bits = np.zeros(-(-m * ni * nr * nw // 8), np.uint8)
            frames_jit.epilogue(z, zimg, zrow, bias, has_bias, relu, out, 5, ni, nr, nw, bits,
                                relu)  # fmt: skip
            valid = np.stack([z[:, i * zimg : i * zimg + nr * zrow] for i in range(ni)], 1)
            want = valid.reshape(m, ni, nr, zrow)[..., :nw]
            if has_bias:
                want = want + bias[:, None, None, None]
            if relu:
                want = np.maximum(want, 0)
            _same_bits(out[:, 5:], np.ascontiguousarray(want).reshape(m, -1))
            assert (out[:, :5] == 7).all()  # nothing outside the chunk's columns
            if relu:
                _same_bits(bits, np.packbits((want > 0).ravel()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nw", [1, 5, 8, 11])
def test_dz_multiplies_as_numpy_and_sums_each_filter(dtype, nw):
    m, n, oh, n0, r0, ni, nr, zrow, zimg = 4, 3, 6, 1, 2, 2, 3, nw + 2, 40
    dy = rng.standard_normal((m, n, oh, nw)).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -2.0, -0.0], dtype)
    dy.flat[rng.integers(0, dy.size, 30)] = rng.choice(special, 30)
    flags = rng.random((m, ni, nr, nw)) > 0.5
    bits = np.packbits(flags.ravel())
    part = dy[:, n0 : n0 + ni, r0 : r0 + nr, :]
    for masked in (False, True):
        dz = np.full((m, ni * zimg), 3, dtype)
        sums = np.zeros(m, dtype)
        frames_jit.dz_mask(dy, n0, r0, ni, nr, bits, masked, dz, zimg, zrow, sums, True)
        with np.errstate(invalid="ignore"):  # inf * 0 is NaN, as on the NumPy path
            want = part * flags if masked else part
        for i in range(ni):
            got = dz[:, i * zimg : i * zimg + nr * zrow].reshape(m, nr, zrow)
            _same_bits(got[..., :nw], np.ascontiguousarray(want[:, i]))
            assert (got[..., nw:] == 3).all()  # the frame columns that are no output
        with np.errstate(invalid="ignore"):
            total = want.reshape(m, -1).astype(np.float64).sum(axis=1)
        finite = np.isfinite(total)
        np.testing.assert_allclose(sums[finite], total[finite], rtol=1e-6)
        _same_bits(np.isnan(sums), np.isnan(total.astype(dtype)))


@pytest.mark.parametrize("plan", ["bands-1", "bands-3", "images-2"])
def test_compiled_kernels_give_the_same_bits_on_any_number_of_threads(monkeypatch, flat_plan,
                                                                       plan):  # fmt: skip
    flat_plan(plan)
    xs, ws = (5, 7, 9, 3), (3, 3, 3, 4)
    cv = _plan(xs, ws, 1, "SAME", (1, 1))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[-1]).astype(np.float32)
    dy = _channels_first(rng.standard_normal((xs[0], *cv.geo[0], ws[-1])).astype(np.float32))
    results = []
    for n in (1, 2, 3):
        monkeypatch.setattr(conv_threads, "FORCE", n)
        with jit.use(True):
            results.append(threads_tests._step(cv, x, w, b, dy, True, True))
    assert results[1] == results[0] and results[2] == results[0]


def test_no_frame_sized_input_gradient_buffer(monkeypatch, flat_plan):
    """The compiled path keeps only the taps' tail of each band, not the images' frames."""
    flat_plan("bands-3")
    xs, ws = (2, 30, 30, 8), (3, 3, 8, 8)
    cv = _plan(xs, ws, 1, "SAME", (1, 1))
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    dy = _channels_first(rng.standard_normal((2, 30, 30, 8)))
    sizes = {}
    real = np.zeros

    def spy(shape, *a, **k):
        sizes.setdefault(key, []).append(int(np.prod(shape)))
        return real(shape, *a, **k)

    monkeypatch.setattr(conv_flat.np, "zeros", spy)
    for key in (False, True):
        with jit.use(key):
            conv_flat.flat_backward(np, x, w, dy, cv, True, False, False, None)
    frame = 8 * cv.hp * cv.wp
    assert max(sizes[True]) < frame / 4 <= frame <= max(sizes[False])


# The shifted frames' oracle tests of the other modules, on the NumPy path.
@pytest.fixture
def numpy_path():
    with jit.use(False):
        yield


@pytest.mark.parametrize("xs,ws,groups,padding,dil", algos.CASES)
@pytest.mark.parametrize("param", ["flat", "flat-bands"])
def test_oracle_on_the_numpy_path(numpy_path, monkeypatch, param, xs, ws, groups, padding, dil):
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 1e9)  # as test_conv_algorithms.algorithm
    monkeypatch.setattr(conv_kernels, "FLAT_EXTRA", 1e9)
    if param == "flat-bands":
        monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", 1)
        monkeypatch.setattr(conv_kernels, "flat_chunks", algos._two_rows)
    algos.test_conv_values_and_gradients(param, xs, ws, groups, padding, dil)


@pytest.mark.parametrize("name", ["flat-images", "flat-bands"])
@pytest.mark.parametrize("shape", threads_tests.SHAPES[:3], ids=str)
def test_threads_on_the_numpy_path(numpy_path, monkeypatch, counted, name, shape):
    threads_tests.test_any_number_of_threads_gives_the_same_bits(
        monkeypatch, counted, name, shape, True, True, True
    )


counted = threads_tests.counted


def test_a_mask_of_another_plan_is_refused(flat_plan):
    flat_plan("bands-3")
    xs, ws = (2, 7, 9, 3), (3, 3, 3, 4)
    cv = _plan(xs, ws, 1, "SAME", (1, 1))
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    dy = _channels_first(rng.standard_normal((2, 7, 9, 4)))
    with jit.use(True):
        _, _, mask = conv_flat.flat_forward(np, x, w, cv, None, True, True)
        with pytest.raises(ValueError, match="relu mask of chunk 0"):
            conv_flat.flat_backward(np, x, w, dy, cv, True, True, False, [m[:1] for m in mask])
