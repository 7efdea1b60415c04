"""max_pool_with_argmax, dilation2d/erosion2d, fractional pooling and extract_volume_patches
against NumPy loops, with numerical gradients (values were also checked against TF 2.21)."""

import itertools

import numpy as np
import pytest
from conv_reference import pads, pool_ref

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(23)


def argmax_ref(x, k, s, padding, include_batch):
    n, h, w, c = x.shape
    (oh, pt, _), (ow, pl, _) = (pads(h, k[0], s[0], 1, padding), pads(w, k[1], s[1], 1, padding))
    out = np.zeros((n, oh, ow, c), np.int64)
    for b, i, j, ch in itertools.product(range(n), range(oh), range(ow), range(c)):
        best, arg = -np.inf, 0
        for dy, dx in itertools.product(range(k[0]), range(k[1])):
            y, xx = i * s[0] + dy - pt, j * s[1] + dx - pl
            if 0 <= y < h and 0 <= xx < w and x[b, y, xx, ch] > best:
                best, arg = (
                    x[b, y, xx, ch],
                    (y * w + xx) * c + ch + (b * h * w * c if include_batch else 0),
                )
        out[b, i, j, ch] = arg
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("include_batch", [False, True])
def test_max_pool_with_argmax(padding, include_batch):
    x = rng.standard_normal((2, 5, 6, 3))
    out, arg = tf.nn.max_pool_with_argmax(x, [3, 2], [2, 2], padding,
                                          include_batch_in_index=include_batch)  # fmt: skip
    assert arg.dtype == tf.int64
    np.testing.assert_array_equal(arg.numpy(), argmax_ref(x, (3, 2), (2, 2), padding,
                                                          include_batch))  # fmt: skip
    np.testing.assert_array_equal(out.numpy(), pool_ref(x, (3, 2), (2, 2), padding, "max"))
    check_op(lambda a: tf.nn.max_pool_with_argmax(a, 2, 2, padding)[0], [x],
             lambda a: pool_ref(a, (2, 2), (2, 2), padding, "max"))  # fmt: skip
    _, a32 = tf.nn.max_pool_with_argmax(x, 2, 2, padding, output_dtype=tf.int32)
    assert a32.dtype == tf.int32
    with pytest.raises(ValueError, match="NHWC"):
        tf.nn.max_pool_with_argmax(x, 2, 2, padding, data_format="NCHW")


def morph_ref(x, f, s, d, padding, erosion=False):
    n, h, w, c = x.shape
    fh, fw, _ = f.shape
    (oh, pt, _), (ow, pl, _) = pads(h, fh, s[0], d[0], padding), pads(w, fw, s[1], d[1], padding)
    out = np.full((n, oh, ow, c), np.inf if erosion else -np.inf)
    for i, j, a, b in itertools.product(range(oh), range(ow), range(fh), range(fw)):
        y, xx = i * s[0] + a * d[0] - pt, j * s[1] + b * d[1] - pl
        if 0 <= y < h and 0 <= xx < w:
            if erosion:
                out[:, i, j] = np.minimum(out[:, i, j], x[:, y, xx] - f[fh - 1 - a, fw - 1 - b])
            else:
                out[:, i, j] = np.maximum(out[:, i, j], x[:, y, xx] + f[a, b])
    return out


@pytest.mark.parametrize("s,d,padding", [((1, 1), (1, 1), "SAME"), ((2, 1), (1, 2), "VALID"),
                                         ((1, 2), (2, 1), "SAME")])  # fmt: skip
def test_dilation_and_erosion(s, d, padding):
    x, f = rng.standard_normal((2, 6, 5, 2)), rng.standard_normal((2, 3, 2))
    args = ([1, *s, 1], padding, "NHWC", [1, *d, 1])
    check_op(lambda a, b: tf.nn.dilation2d(a, b, *args), [x, f],
             lambda a, b: morph_ref(a, b, s, d, padding))  # fmt: skip
    check_op(lambda a, b: tf.nn.erosion2d(a, b, *args), [x, f],
             lambda a, b: morph_ref(a, b, s, d, padding, erosion=True))  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="filters"):
        tf.nn.dilation2d(x, np.ones((2, 2, 3)), *args)


def volume_patches_ref(x, k, s, padding):
    n, dd, h, w, c = x.shape
    geo = [pads(x.shape[1 + i], k[i], s[i], 1, padding) for i in range(3)]
    xp = np.pad(x, [(0, 0)] + [(b, a) for _, b, a in geo] + [(0, 0)])
    out = np.zeros((n, *(g[0] for g in geo), k[0] * k[1] * k[2] * c))
    for idx in itertools.product(*(range(g[0]) for g in geo)):
        sl = tuple(slice(i * st, i * st + kk) for i, st, kk in zip(idx, s, k))
        out[(slice(None), *idx)] = xp[(slice(None), *sl)].reshape(n, -1)
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_extract_volume_patches(padding):
    x = rng.standard_normal((1, 4, 3, 5, 2))
    check_op(lambda a: tf.extract_volume_patches(a, [1, 2, 2, 3, 1], [1, 2, 1, 2, 1], padding),
             [x], lambda a: volume_patches_ref(a, (2, 2, 3), (2, 1, 2), padding))  # fmt: skip


def frac_ref(x, rows, cols, overlapping, kind):
    n, h, w, c = x.shape
    out = np.zeros((n, len(rows) - 1, len(cols) - 1, c))
    for i, j in itertools.product(range(len(rows) - 1), range(len(cols) - 1)):
        r1 = min(rows[i + 1] + overlapping, h)
        c1 = min(cols[j + 1] + overlapping, w)
        win = x[:, rows[i] : r1, cols[j] : c1]
        out[:, i, j] = win.max((1, 2)) if kind == "max" else win.mean((1, 2))
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("pseudo_random", [False, True])
@pytest.mark.parametrize("overlapping", [False, True])
def test_fractional_pooling(kind, pseudo_random, overlapping):
    fn = tf.nn.fractional_max_pool if kind == "max" else tf.nn.fractional_avg_pool
    x = rng.standard_normal((2, 11, 9, 2))
    y, rows, cols = fn(x, [1.0, 1.6, 1.3, 1.0], pseudo_random, overlapping, seed=7)
    rows, cols = rows.numpy(), cols.numpy()
    assert (
        rows.dtype == np.int64
        and len(rows) == int(11 // 1.6) + 1
        and len(cols) == int(9 // 1.3) + 1
    )
    for seq, n, k in ((rows, 11, 1), (cols, 9, 1)):
        assert seq[0] == 0 and seq[-1] == n and set(np.diff(seq)) <= {k, k + 1}
    np.testing.assert_allclose(y.numpy(), frac_ref(x, rows, cols, overlapping, kind), atol=1e-6)
    # A non-zero seed repeats the sequences on every call; the gradient check relies on it.
    again = fn(x, [1.0, 1.6, 1.3, 1.0], pseudo_random, overlapping, seed=7)
    np.testing.assert_array_equal(again[1].numpy(), rows)
    check_op(lambda a: fn(a, [1.0, 1.6, 1.3, 1.0], pseudo_random, overlapping, seed=7)[0],
             [x], lambda a: frac_ref(a, rows, cols, overlapping, kind))  # fmt: skip


def test_fractional_pooling_tf_example_and_errors():
    # An integral ratio makes every region k wide: plain k x k max pooling.
    x = rng.standard_normal((1, 8, 8, 1))
    y, rows, cols = tf.nn.fractional_max_pool(x, 2.0)
    np.testing.assert_array_equal(rows.numpy(), [0, 2, 4, 6, 8])
    np.testing.assert_allclose(y.numpy(), pool_ref(x, (2, 2), (2, 2), "VALID", "max"))
    with pytest.raises(ValueError, match="pooling_ratio"):
        tf.nn.fractional_max_pool(x, [2.0, 1.5, 1.5, 1.0])
    with pytest.raises(ValueError, match="pooling_ratio"):
        tf.nn.fractional_avg_pool(x, 0.5)
