"""The fused numba kernels give the NumPy path's bits (sign of zero, NaN and inf included), on
odd shapes, both float dtypes, and non-contiguous inputs (which take the NumPy path)."""

import numpy as np
import pytest

from layerflow._src.backend import jit
from layerflow._src.ops import fused_kernels as fk
from layerflow._src.ops import nn_ops

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

DTYPES = [np.float32, np.float64]


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    view = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    # NaN payloads may differ between a ufunc and a compiled loop; anything else bit for bit.
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    np.testing.assert_array_equal(a[~nan].view(view), b[~nan].view(view))


def _specials(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=min(flat.size, 12), replace=False)
    for i, v in zip(
        picks, [0.0, -0.0, np.inf, -np.inf, np.nan, -1e-40, 1e-40, 0.0, -0.0, 5, -5, 1]
    ):
        flat[i] = v
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64, 70), (33, 129), (4096, 1)])
def test_bias_relu_matches_numpy(dtype, shape):
    rng = np.random.default_rng(0)
    out = _specials(rng, shape, dtype)
    bias = _specials(rng, shape[1:], dtype)
    want = out.copy()
    with np.errstate(invalid="ignore"):
        with jit.use(False):
            fk.bias_relu(np, want, bias, True)
        got = out.copy()
        fk.bias_relu(np, got, bias, True)
    _bits_equal(got, want)
    lin = out.copy()
    with np.errstate(invalid="ignore"):
        fk.bias_relu(np, lin, bias, False)
        np.testing.assert_array_equal(lin, out + bias)


def test_bias_relu_non_contiguous_operands_take_the_numpy_path():
    rng = np.random.default_rng(1)
    out = np.asfortranarray(rng.standard_normal((80, 64)).astype(np.float32))
    bias = rng.standard_normal(128).astype(np.float32)[::2]
    want = np.maximum(out + bias, 0)
    fk.bias_relu(np, out, bias, True)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 5), (3, 7), (256, 256), (100, 3)])
@pytest.mark.parametrize("in_place", [False, True])
def test_relu_grad_sum_matches_numpy(dtype, shape, in_place):
    rng = np.random.default_rng(2)
    dy = _specials(rng, shape, dtype)
    y = np.maximum(_specials(rng, shape, dtype), 0)
    y.reshape(-1)[::7] = -0.0
    with np.errstate(invalid="ignore"):
        want = dy * (y > 0)
        want_sum = want.sum(axis=0)
        work = dy.copy()
        out = work if in_place else np.empty_like(dy)
        total = fk.relu_grad_sum(np, out, work, y)
    _bits_equal(out, want)
    _bits_equal(total, want_sum)
    with jit.use(False):
        out2 = np.empty_like(dy)
        with np.errstate(invalid="ignore"):
            assert fk.relu_grad_sum(np, out2, dy, y) is None  # the caller sums
        _bits_equal(out2, want)


def test_relu_grad_sum_of_a_transposed_gradient_takes_the_numpy_path():
    rng = np.random.default_rng(3)
    dy = rng.standard_normal((40, 30)).astype(np.float32).T
    y = np.maximum(rng.standard_normal((30, 40)).astype(np.float32), 0)
    out = np.empty_like(y)
    assert fk.relu_grad_sum(np, out, dy, y) is None
    np.testing.assert_array_equal(out, dy * (y > 0))


def _numpy_xent(logits, labels, dy):
    loss, backprop = nn_ops._sparse_xent_class_major(np, logits, labels, True)
    grad = nn_ops._sparse_xent_grad_class_major(np, dy, logits, labels)
    return loss, backprop, grad, grad.sum(axis=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(40, 10), (64, 3), (1000, 32), (5, 1)])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_cross_entropy_matches_the_class_major_numpy_kernels(dtype, shape, label_dtype):
    rng = np.random.default_rng(4)
    logits = (rng.standard_normal(shape) * 4).astype(dtype)
    logits[0, 0] = 80.0  # exp underflows to 0 for the others of this row
    logits[1 % shape[0], :] = -1e30
    labels = rng.integers(0, shape[1], shape[0]).astype(label_dtype)
    dy = rng.uniform(0.1, 2.0, shape[0]).astype(dtype)
    loss, backprop, grad, total = _numpy_xent(logits, labels, dy)
    got_loss, got_backprop, _, bad = fk.xent(logits, labels, None, loss=True, grad=True)
    assert bad == -1
    _bits_equal(got_loss, loss)
    _bits_equal(got_backprop, backprop)
    none, got_grad, got_total, bad = fk.xent(logits, labels, dy, loss=False, grad=True)
    assert none is None and bad == -1
    _bits_equal(got_grad, grad)
    _bits_equal(got_total, total)
    only_loss, no_grad, _, _ = fk.xent(logits, labels, dy, loss=True, grad=False)
    assert no_grad is None
    _bits_equal(only_loss, loss)


def test_cross_entropy_reports_the_first_row_with_a_bad_label():
    logits = np.zeros((8, 4), np.float32)
    labels = np.array([0, 1, 2, 3, -1, 0, 4, 1])
    assert fk.xent(logits, labels, None)[3] in (4, 6)
    assert fk.xent(logits, labels[:4], None, grad=False) is None  # shapes disagree
    assert fk.xent(logits, labels.astype(np.float32), None) is None  # not class indices
    with jit.use(False):
        assert fk.xent(logits, labels % 4, None) is None


def test_cross_entropy_with_nan_logits_matches_numpy():
    logits = np.random.default_rng(5).standard_normal((16, 10)).astype(np.float32)
    logits[3, 4] = np.nan
    logits[7, :] = np.inf
    labels = np.arange(16) % 10
    dy = np.full(16, 1 / 16, np.float32)
    with np.errstate(invalid="ignore"):
        loss, _, grad, total = _numpy_xent(logits, labels, dy)
        got_loss, got_grad, got_total, _ = fk.xent(logits, labels, dy)
    _bits_equal(got_loss, loss)
    _bits_equal(got_grad, grad)
    _bits_equal(got_total, total)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(784, 256), (10,), (3, 5, 7)])
def test_sgd_update_matches_numpy(dtype, shape):
    rng = np.random.default_rng(6)
    w = _specials(rng, shape, dtype)
    g = _specials(rng, shape, dtype)
    lr = np.float64(0.1).astype(dtype)
    with np.errstate(invalid="ignore"):
        want = w - g * lr
        got = w.copy()
        fk.sgd_update(got, g, lr)
        strided = np.repeat(g, 2, axis=-1)[..., ::2]  # non-contiguous: the NumPy path
        got2 = w.copy()
        fk.sgd_update(got2, strided, lr)
    _bits_equal(got, want)
    _bits_equal(got2, want)


def test_sgd_update_of_a_scalar_variable():
    w = np.array(1.0, np.float32)
    fk.sgd_update(w, np.array(0.3, np.float32), np.float32(0.1))
    assert w.shape == () and w == np.float32(1.0) - np.float32(0.3) * np.float32(0.1)


def test_cross_entropy_leaves_uint64_labels_to_the_numpy_path():
    logits = np.zeros((8, 2), np.float32)
    assert fk.xent(logits, np.zeros(8, np.uint64), None) is None
    assert fk.xent(logits, np.zeros(8, np.uint8), None) is not None


@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_hits_counts_as_numpy_argmax(dtype):
    rng = np.random.default_rng(7)
    p = rng.integers(0, 3, (300, 6)).astype(dtype)  # many ties: the first maximum wins
    p[5, 2] = np.nan  # NaN wins, the first one
    p[6, :] = np.nan
    p[7, 0] = np.nan
    p[8, 4] = -np.inf
    labels = rng.integers(0, 6, 300)
    labels[5], labels[6], labels[7] = 2, 0, 0
    want = int((p.argmax(axis=1) == labels).sum())
    assert fk.argmax_hits(p, labels) == want
    assert fk.argmax_hits(p, labels.astype(np.int32)) == want
    assert fk.argmax_hits(p, labels.astype(np.uint64)) is None  # compared as NumPy would not
    assert fk.argmax_hits(np.asfortranarray(p), labels) is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (7,), (5, 9, 9, 6), (256, 121)])
def test_sigmoid_grad_matches_numpy(dtype, shape):
    import layerflow as tf
    from layerflow._src.ops import math_ops

    rng = np.random.default_rng(3)
    x, dy = _specials(rng, shape, dtype), _specials(rng, shape, dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        y = tf.sigmoid(x).numpy()
        got = math_ops._sigmoid_grad(y, dy).numpy()
        with jit.use(False):
            want = math_ops._sigmoid_grad(y, dy).numpy()
    _bits_equal(got, want)
    assert fk.sigmoid_grad(np.asarray(y), np.asarray(dy)) is not None


def test_sigmoid_grad_of_mixed_or_strided_operands_takes_the_numpy_path():
    rng = np.random.default_rng(4)
    y = rng.random((6, 8)).astype(np.float32)
    dy = rng.standard_normal((6, 8)).astype(np.float32)
    assert fk.sigmoid_grad(y, dy.astype(np.float64)) is None
    assert fk.sigmoid_grad(y[:, ::2], dy[:, ::2]) is None
    assert fk.sigmoid_grad(y, dy[:1]) is None
    with jit.use(False):
        assert fk.sigmoid_grad(y, dy) is None
    np.testing.assert_array_equal(fk.sigmoid_grad(y, dy), (1 - y) * y * dy)
