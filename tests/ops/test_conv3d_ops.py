"""conv3d, conv3d_transpose, max_pool3d and avg_pool3d against direct NumPy loops, with
numerical gradients (the ops are compositions of 2-D ops, slices and pads)."""

import numpy as np
import pytest
from conv_reference import conv_ref, conv_transpose_ref, pool_ref

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(5)

CONV3D = [
    ((2, 4, 5, 3, 2), (2, 2, 2, 2, 3), (1, 1, 1), "VALID", None),
    ((1, 5, 4, 4, 2), (3, 2, 3, 2, 2), (2, 1, 2), "SAME", None),
    ((1, 6, 5, 5, 1), (2, 2, 2, 1, 2), (1, 1, 1), "SAME", (2, 1, 2)),
    ((2, 3, 3, 3, 2), (3, 3, 3, 2, 1), (3, 3, 3), "SAME", None),
]


@pytest.mark.parametrize("xs,ws,s,padding,d", CONV3D)
def test_conv3d_forward_and_gradients(xs, ws, s, padding, d):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, b: tf.nn.conv3d(a, b, [1, *s, 1], padding, dilations=d), [x, w],
             lambda a, b: conv_ref(a, b, s, padding, d), grad_rtol=1e-4)  # fmt: skip


def test_conv3d_channels_first_and_errors():
    x, w = rng.standard_normal((1, 4, 4, 4, 2)), rng.standard_normal((2, 2, 2, 2, 3))
    y = tf.nn.conv3d(np.moveaxis(x, -1, 1), w, 1, "SAME", data_format="NCDHW").numpy()
    np.testing.assert_allclose(np.moveaxis(y, 1, -1), conv_ref(x, w, (1, 1, 1), "SAME"),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank-5"):
        tf.nn.conv3d(np.ones((1, 4, 4, 2)), w, 1, "SAME")
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.conv3d(x, w, 1, "SAME", data_format="NHWC")
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
        tf.nn.conv3d(x, np.ones((5, 1, 1, 2, 1)), 1, "VALID")


def test_conv3d_second_derivative():
    w = tf.constant(rng.standard_normal((2, 2, 2, 1, 1)))
    check_second_derivative(lambda t: tf.nn.conv3d(t, w, 1, "SAME") ** 2,
                            rng.standard_normal((1, 3, 3, 2, 1)))  # fmt: skip


CONV3D_T = [
    ((1, 4, 4, 4, 2), (2, 2, 2, 2, 3), (2, 2, 2), "SAME", None),
    ((2, 5, 4, 3, 1), (3, 2, 2, 1, 2), (2, 1, 2), "VALID", None),
    ((1, 5, 5, 4, 2), (2, 3, 2, 2, 1), (1, 1, 1), "SAME", (2, 1, 2)),
]


@pytest.mark.parametrize("xs,ws,s,padding,d", CONV3D_T)
def test_conv3d_transpose_is_conv3d_input_gradient(xs, ws, s, padding, d):
    w = rng.standard_normal(ws)
    ys = conv_ref(np.zeros(xs), w, s, padding, d).shape
    y = rng.standard_normal(ys)
    check_op(lambda a, b: tf.nn.conv3d_transpose(a, b, xs, s, padding, dilations=d), [y, w],
             lambda a, b: conv_transpose_ref(a, b, xs, s, padding, d), grad_rtol=1e-4)  # fmt: skip


def test_conv3d_transpose_checks_the_input_shape():
    with pytest.raises(tf.errors.InvalidArgumentError, match="depth 2"):
        tf.nn.conv3d_transpose(np.ones((1, 3, 2, 2, 1)), np.ones((2, 2, 2, 1, 1)),
                               [1, 4, 4, 4, 1], 2)  # fmt: skip
    with pytest.raises(ValueError, match="5 entries"):
        tf.nn.conv3d_transpose(np.ones((1, 2, 2, 2, 1)), np.ones((2, 2, 2, 1, 1)), [1, 4, 4], 2)


POOL3D = [
    ((2, 4, 4, 4, 2), (2, 2, 2), (2, 2, 2), "VALID"),
    ((1, 5, 4, 3, 2), (3, 2, 2), (2, 1, 2), "SAME"),
    ((1, 3, 5, 4, 1), (2, 3, 1), (1, 2, 1), "SAME"),
]


@pytest.mark.parametrize("xs,k,s,padding", POOL3D)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_forward_and_gradients(xs, k, s, padding, kind):
    fn = tf.nn.max_pool3d if kind == "max" else tf.nn.avg_pool3d
    check_op(lambda a: fn(a, k, s, padding), [rng.standard_normal(xs)],
             lambda a: pool_ref(a, k, s, padding, kind), grad_rtol=1e-4)  # fmt: skip


def test_pool3d_channels_first_and_rank_error():
    x = rng.standard_normal((1, 4, 4, 4, 3))
    y = tf.nn.avg_pool3d(np.moveaxis(x, -1, 1), 2, 2, "SAME", data_format="NCDHW").numpy()
    np.testing.assert_allclose(np.moveaxis(y, 1, -1), pool_ref(x, (2,) * 3, (2,) * 3, "SAME",
                                                               "avg"), rtol=1e-6)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank-5"):
        tf.nn.max_pool3d(np.ones((1, 4, 4, 3)), 2, 2, "VALID")


def _grouped_ref(a, b, groups, s, padding, d=None):
    """Grouped conv3d: each group of input channels with its block of filters, concatenated."""
    cg, og = b.shape[3], b.shape[4] // groups
    return np.concatenate([conv_ref(a[..., g * cg : (g + 1) * cg], b[..., g * og : (g + 1) * og],
                                    s, padding, d) for g in range(groups)], axis=-1)  # fmt: skip


@pytest.mark.parametrize("xs,ws,groups,s,padding,d", [
    ((2, 5, 4, 4, 4), (3, 2, 2, 2, 6), 2, (1, 1, 1), "SAME", None),
    ((1, 7, 5, 4, 3), (3, 3, 2, 1, 3), 3, (2, 1, 1), "VALID", (2, 1, 1)),
])  # fmt: skip
def test_grouped_conv3d_is_one_stacked_2d_convolution(xs, ws, groups, s, padding, d):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, b: tf.nn.conv3d(a, b, [1, *s, 1], padding, dilations=d), [x, w],
             lambda a, b: _grouped_ref(a, b, groups, s, padding, d), grad_rtol=1e-4)  # fmt: skip
    # The depth taps are stacked along the channels: one 2-D convolution, not one per tap.
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        tf.nn.conv3d(xt, w, [1, *s, 1], padding, dilations=d)
    assert [node[0].name for node in tape._nodes].count("conv2d") == 1
