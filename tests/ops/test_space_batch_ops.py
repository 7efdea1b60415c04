"""space_to_batch(_nd), batch_to_space, required_space_to_batch_paddings, with_space_to_batch
and tf.nn.pool against direct NumPy definitions, with numerical gradients."""

import itertools

import numpy as np
import pytest
from conv_reference import conv_ref, pool_ref

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(17)


def s2b_ref(x, block, paddings):
    """TF's definition, element by element: output batch (offset index) * B + n."""
    m = len(block)
    xp = np.pad(x, [(0, 0), *paddings, *([(0, 0)] * (x.ndim - 1 - m))])
    b = x.shape[0]
    spatial = [xp.shape[1 + i] // block[i] for i in range(m)]
    out = np.zeros((b * int(np.prod(block)), *spatial, *x.shape[1 + m :]))
    for k, off in enumerate(itertools.product(*(range(bi) for bi in block))):
        for idx in itertools.product(*(range(s) for s in spatial)):
            src = tuple(i * bi + o for i, bi, o in zip(idx, block, off))
            out[(slice(k * b, (k + 1) * b), *idx)] = xp[(slice(None), *src)]
    return out


@pytest.mark.parametrize("shape,block,paddings", [
    ((2, 4, 6, 3), (2, 3), ((0, 0), (0, 0))),
    ((1, 3, 5, 2), (2, 3), ((1, 0), (0, 1))),
    ((2, 5, 2), (3,), ((0, 1),)),
    ((1, 2, 3, 4, 1), (2, 1, 2), ((0, 0), (0, 0), (1, 1))),
])  # fmt: skip
def test_space_to_batch_and_back(shape, block, paddings):
    x = rng.standard_normal(shape)
    check_op(lambda a: tf.space_to_batch_nd(a, block, paddings), [x],
             lambda a: s2b_ref(a, block, paddings))  # fmt: skip
    check_op(lambda a: tf.space_to_batch(a, block, paddings), [x], None)
    y = s2b_ref(x, block, paddings)
    check_op(lambda a: tf.batch_to_space(a, block, paddings), [y], lambda a: x)
    np.testing.assert_array_equal(tf.nn.space_to_batch(x, block, paddings).numpy(), y)


def test_space_to_batch_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not divisible.*required_space"):
        tf.space_to_batch(np.ones((1, 5, 4, 1)), [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \[2, 2\]"):
        tf.space_to_batch(np.ones((1, 4, 4, 1)), [2, 2], [[0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.space_to_batch(np.ones((1, 4, 4, 1)), [2, 2], [[0, -2], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisible by the product"):
        tf.batch_to_space(np.ones((3, 2, 2, 1)), [2, 2], [[0, 0], [0, 0]])


def test_required_space_to_batch_paddings():
    p, c = tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [2, 2]])
    assert p.dtype == tf.int32
    # 5 + 1 = 6 is divisible by 2; 7 + 4 = 11 needs 1 more to reach 12.
    assert p.numpy().tolist() == [[1, 0], [2, 3]] and c.numpy().tolist() == [[0, 0], [0, 1]]
    with pytest.raises(ValueError, match="same length"):
        tf.required_space_to_batch_paddings([5, 7], [2])


@pytest.mark.parametrize("padding,rate", [("VALID", (2, 2)), ("SAME", (2, 3)), ("SAME", (1, 1))])
def test_with_space_to_batch_is_a_dilated_convolution(padding, rate):
    x, w = rng.standard_normal((2, 9, 8, 2)), rng.standard_normal((3, 2, 2, 3))

    def f(a, b):
        return tf.nn.with_space_to_batch(a, rate, padding,
                                         lambda t, n, p: tf.nn.conv2d(t, b, 1, p),
                                         filter_shape=b.shape)  # fmt: skip

    check_op(f, [x, w], lambda a, b: conv_ref(a, b, (1, 1), padding, rate), grad_rtol=1e-4)


def test_with_space_to_batch_argument_errors():
    with pytest.raises(ValueError, match="filter_shape"):
        tf.nn.with_space_to_batch(np.ones((1, 4, 4, 1)), [2, 2], "SAME", lambda t, n, p: t)
    with pytest.raises(ValueError, match="spatial_dims"):
        tf.nn.with_space_to_batch(np.ones((1, 4, 4, 1)), [2, 2], "VALID", lambda t, n, p: t,
                                  spatial_dims=[2, 1])  # fmt: skip


def _dilated_pool_ref(x, window, rate, kind):
    """VALID pooling of a dilated window, by definition."""
    out_shape = [x.shape[1 + i] - (window[i] - 1) * rate[i] for i in range(len(window))]
    out = np.zeros((x.shape[0], *out_shape, x.shape[-1]))
    for idx in itertools.product(*(range(o) for o in out_shape)):
        taps = [x[(slice(None), *(i + t * r for i, t, r in zip(idx, tap, rate)))]
                for tap in itertools.product(*(range(k) for k in window))]  # fmt: skip
        out[(slice(None), *idx)] = np.max(taps, 0) if kind == "MAX" else np.mean(taps, 0)
    return out


@pytest.mark.parametrize("kind", ["MAX", "AVG"])
def test_pool_every_rank_and_dilated(kind):
    low = kind.lower()
    for shape, window, s, padding in [((2, 7, 3), (3,), (2,), "SAME"),
                                      ((1, 6, 5, 2), (2, 3), (2, 1), "VALID"),
                                      ((1, 4, 5, 3, 2), (2, 2, 2), (1, 2, 1), "SAME")]:  # fmt: skip
        check_op(lambda a, k=window, s=s, p=padding: tf.nn.pool(a, k, kind, s, p),
                 [rng.standard_normal(shape)],
                 lambda a, k=window, s=s, p=padding: pool_ref(a, k, s, p, low),
                 grad_rtol=1e-4)  # fmt: skip
    x = rng.standard_normal((2, 8, 7, 2))
    check_op(lambda a: tf.nn.pool(a, [2, 3], kind, padding="VALID", dilations=[2, 2]), [x],
             lambda a: _dilated_pool_ref(a, (2, 3), (2, 2), kind), grad_rtol=1e-4)  # fmt: skip


def test_pool_errors_as_tf():
    x = np.ones((1, 6, 6, 1))
    with pytest.raises(ValueError, match="SAME.*dilations"):
        tf.nn.pool(x, [2, 2], "MAX", padding="SAME", dilations=[2, 2])
    with pytest.raises(ValueError, match="strides > 1"):
        tf.nn.pool(x, [2, 2], "MAX", strides=[2, 2], dilations=[2, 2])
    with pytest.raises(ValueError, match="pooling_type"):
        tf.nn.pool(x, [2, 2], "MIN")
    x_nchw = rng.standard_normal((1, 2, 4, 4))
    got = tf.nn.pool(x_nchw, [2, 2], "AVG", [2, 2], data_format="NCHW").numpy()
    want = pool_ref(np.moveaxis(x_nchw, 1, -1), (2, 2), (2, 2), "VALID", "avg")
    np.testing.assert_allclose(np.moveaxis(got, 1, -1), want, rtol=1e-6)
