"""The compiled kernels of the im2col convolution (`conv_jit`) against the NumPy path.

Both paths must give the same bits (the kernels copy, and add in the NumPy path's order):
forward output, relu mask, kept patches, and the three gradients, for strided, dilated,
grouped, padded and banded (several chunks per image) shapes, float32 and float64, and
inputs in either layout. The oracle tests of `test_conv_algorithms` run on the NumPy path
here too (with numba installed they run on the kernels there)."""

import numpy as np
import pytest

from layerflow._src.backend import jit
from layerflow._src.ops import conv_jit, conv_kernels
from tests.ops.test_conv_algorithms import CASES, check_fused_bias_and_relu

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

rng = np.random.default_rng(14)

# (input, filter, groups, padding, strides, dilations)
SHAPES = [
    ((3, 13, 11, 2), (3, 3, 2, 5), 1, "SAME", (2, 2), (1, 1)),  # stride 2, odd frame
    ((2, 23, 19, 1), (5, 4, 1, 6), 1, "VALID", (4, 3), (1, 1)),  # AlexNet-like stride 4
    ((2, 9, 10, 4), (3, 2, 2, 6), 2, "SAME", (1, 2), (2, 1)),  # groups, dilation
    ((2, 7, 9, 3), (3, 3, 3, 7), 1, [[0, 0], [2, 1], [0, 3], [0, 0]], (2, 1), (1, 1)),
    ((2, 6, 6, 5), (2, 2, 5, 3), 1, [[0, 0], [3, 0], [1, 2], [0, 0]], (1, 1), (1, 1)),
    ((2, 8, 8, 4), (1, 1, 4, 4), 1, "VALID", (2, 2), (1, 1)),  # 1x1 stride 2
    ((2, 5, 5, 6), (5, 5, 6, 3), 1, "SAME", (1, 1), (1, 1)),  # kernel as large as the image
]


def _step(cv, x, w, b, dy, relu):
    """Forward and backward of `conv_kernels`, every result as bytes."""
    y, kept, mask = conv_kernels.conv_forward(np, x, w, cv, b, relu, keep=True)
    dx, dw, db = conv_kernels.conv_backward(np, x, w, dy, cv, x_shape=x.shape, need_x=True,
                                            need_w=True, need_b=b is not None,
                                            mask=mask if relu else None, cols=kept)  # fmt: skip
    out = [np.ascontiguousarray(a).tobytes() for a in (y, dx, dw)]
    out += [] if db is None else [db.tobytes()]
    out += [m.tobytes() for m in mask or []]
    kept = [] if kept is None else kept if type(kept) is tuple else [kept]
    return out + [np.ascontiguousarray(k).tobytes() for k in kept]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}-s{s[4]}")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("relu,bias", [(True, True), (False, True), (False, False)])
@pytest.mark.parametrize("layout", ["nhwc", "channels-first"])
@pytest.mark.parametrize("bands", [False, True])
def test_kernels_give_the_numpy_paths_bits(monkeypatch, shape, dtype, relu, bias, layout,
                                           bands):  # fmt: skip
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)  # im2col for every shape
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)
    if bands:  # one or two output rows per chunk: chunks start inside images
        monkeypatch.setattr(conv_kernels, "BUDGET_BYTES", 1)
    xs, ws, groups, padding, strides, dil = shape
    cv = conv_kernels.plan(
        xs, ws, (strides, dil, conv_kernels.padding_attr(padding), groups), "conv2d"
    )
    assert bands == any(r1 - r0 < cv.geo[0][0] for _, _, r0, r1 in cv.plan)
    x = rng.standard_normal(xs).astype(dtype)
    if layout == "channels-first":
        x = np.ascontiguousarray(x.transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[-1]).astype(dtype) if bias else None
    dy = rng.standard_normal((xs[0], *cv.geo[0], ws[-1])).astype(dtype)
    with jit.use(False):
        want = _step(cv, x, w, b, dy, relu)
    with jit.use(True):
        got = _step(cv, x, w, b, dy, relu)
    assert len(got) == len(want)
    for i, (g, e) in enumerate(zip(got, want)):
        assert g == e, f"result {i} differs"


def test_kernels_run_only_when_enabled(monkeypatch):
    calls = []
    for name in ("im2col", "col2im", "epilogue"):
        real = getattr(conv_jit, name)
        monkeypatch.setattr(conv_jit, name, lambda *a, _r=real, _n=name: calls.append(_n) or _r(*a))
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
    xs, ws, groups, padding, strides, dil = SHAPES[0]
    cv = conv_kernels.plan(
        xs, ws, (strides, dil, conv_kernels.padding_attr(padding), groups), "conv2d"
    )
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    b, dy = np.ones(ws[-1], np.float32), np.ones((xs[0], *cv.geo[0], ws[-1]), np.float32)
    with jit.use(False):
        _step(cv, x, w, b, dy, True)
    assert calls == []
    with jit.use(True):
        _step(cv, x, w, b, dy, True)
    assert {"im2col", "col2im", "epilogue"} <= set(calls)
    assert not conv_jit.usable(np, x.astype(np.float16))  # other dtypes keep NumPy


def test_epilogue_treats_nan_and_negative_zero_as_maximum_does():
    y = np.array([[[np.nan, -0.0, -1.0, 2.0, 0.0, -np.inf, np.inf, 3.0, -2.5]]], np.float32)
    want = y.copy()
    want += 0
    np.maximum(want, 0, out=want)
    got = y.copy()
    bits = conv_jit.epilogue(got, 0, 9, np.zeros(1, np.float32), True, True)  # 9: not bytes
    assert got.tobytes() == want.tobytes()
    assert bits.tobytes() == np.packbits((want > 0).ravel()).tobytes()
    want = np.maximum(y, 0)  # no bias: -0.0 in, +0.0 out
    got = y.copy()
    bits = conv_jit.epilogue(got, 1, 8, None, True, True)  # columns 1..8: whole bytes
    assert got[..., 1:].tobytes() == want[..., 1:].tobytes() and np.isnan(got[0, 0, 0])
    assert bits.tobytes() == np.packbits((want[..., 1:] > 0).ravel()).tobytes()


@pytest.mark.parametrize("xs,ws,groups,padding,dil", CASES[:3] + CASES[5:])
@pytest.mark.parametrize("relu", [False, True])
def test_the_numpy_path_against_the_reference(monkeypatch, xs, ws, groups, padding, dil, relu):
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)
    with jit.use(False):
        check_fused_bias_and_relu(rng, xs, ws, groups, padding, dil, relu)


def test_kernels_refuse_arrays_they_would_copy():
    x5 = np.zeros((1, 2, 1, 4, 4), np.float32)
    cols = np.zeros((1, 1, 1, 2, 1, 4, 4, 2), np.float32)[..., 0]  # not contiguous
    geo = ((4, 4), ((0, 0), (0, 0)), (1, 1), (1, 1))
    with pytest.raises(ValueError, match="C-contiguous"):
        conv_jit.im2col(x5, cols, (0, 1, 0, 4), geo)
    with pytest.raises(ValueError, match="C-contiguous"):
        conv_jit.epilogue(np.zeros((1, 2, 8), np.float32)[:, :, ::2], 0, 4, None, True, True)
