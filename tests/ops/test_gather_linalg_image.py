"""Indexing ops, tf.linalg and tf.image against NumPy, with numerical gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(11)
A = rng.standard_normal((4, 3))


def test_gather_and_gather_nd_with_repeated_indices():
    idx = np.array([2, 0, 2])
    check_op(lambda t: tf.gather(t, idx), [A], lambda a: a[idx])
    check_op(lambda t: tf.gather(t, idx[:2], axis=1), [A], lambda a: a[:, idx[:2]])
    nd = np.array([[0, 1], [3, 2], [0, 1]])
    check_op(lambda t: tf.gather_nd(t, nd), [A], lambda a: a[nd[:, 0], nd[:, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 4 is not in \\[0, 4\\)"):
        tf.gather(A, [4])


def test_scatter_nd_boolean_mask_one_hot():
    out = tf.scatter_nd([[1], [1], [3]], [1.0, 2.0, 5.0], [4])
    np.testing.assert_array_equal(out.numpy(), [0, 3, 0, 5])
    mask = np.array([True, False, True, True])
    check_op(lambda t: tf.boolean_mask(t, mask), [A], lambda a: a[mask])
    check_op(lambda t: tf.boolean_mask(t, mask[:3], axis=1), [A], lambda a: a[:, mask[:3]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="mask's shape"):
        tf.boolean_mask(A, [True, False])
    np.testing.assert_array_equal(
        tf.one_hot([0, 2, 5], 3).numpy(), np.eye(3)[[0, 2]].tolist() + [[0, 0, 0]]
    )
    assert tf.one_hot([1], 2, on_value=5, off_value=-1).numpy().tolist() == [[-1, 5]]
    assert tf.one_hot([1, 0], 2, axis=0).numpy().tolist() == [[0, 1], [1, 0]]


def test_tile_pad_reverse():
    check_op(lambda t: tf.tile(t, [2, 3]), [A], lambda a: np.tile(a, (2, 3)))
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        check_op(lambda t, m=mode: tf.pad(t, [[1, 2], [2, 1]], mode=m), [A],
                 lambda a, m=mode: np.pad(a, ((1, 2), (2, 1)), mode=m.lower()))  # fmt: skip
    check_op(lambda t: tf.reverse(t, [1]), [A], lambda a: a[:, ::-1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiples has 1 entries.*rank 2"):
        tf.tile(A, [2])


def test_tensordot_einsum_matvec():
    b = rng.standard_normal((3, 5))
    check_op(lambda x, y: tf.tensordot(x, y, 1), [A, b], lambda x, y: np.tensordot(x, y, 1))
    c = rng.standard_normal((5, 4))
    check_op(lambda x, y: tf.tensordot(x, y, [[0], [1]]), [A, c],
             lambda x, y: np.tensordot(x, y, [[0], [1]]))  # fmt: skip
    for eq, shapes in [("ij,jk->ik", [(4, 3), (3, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
                       ("ij->j", [(4, 3)]), ("ij,ij->", [(4, 3), (4, 3)]),
                       ("...i,i->...", [(2, 3, 4), (4,)]), ("ij", [(2, 3)])]:  # fmt: skip
        ins = [rng.standard_normal(s) for s in shapes]
        check_op(lambda *t, e=eq: tf.einsum(e, *t), ins, lambda *a, e=eq: np.einsum(e, *a))
    check_op(tf.linalg.matvec, [A, rng.standard_normal(3)], lambda m, v: m @ v)


def test_inv_det_diag_trace():
    m = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    check_op(tf.linalg.inv, [m], np.linalg.inv, rtol=1e-4, grad_rtol=1e-4)
    check_op(tf.linalg.det, [m], np.linalg.det, rtol=1e-4, grad_rtol=1e-4)
    check_op(tf.linalg.diag, [A], lambda a: np.stack([np.diag(r) for r in a]))
    check_op(tf.linalg.diag_part, [A], lambda a: np.diagonal(a).copy())
    check_op(tf.linalg.trace, [m], lambda a: np.trace(a, axis1=-2, axis2=-1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
        tf.linalg.det(A)


def test_matmul_error_names_both_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="\\(2, 3\\) and \\(4, 5\\)"):
        tf.matmul(tf.ones((2, 3)), tf.ones((4, 5)))


def _bilinear_ref(img, oh, ow):
    """TF 2 half-pixel-centre bilinear resize, one output pixel at a time."""
    n, h, w, c = img.shape
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            y = max((i + 0.5) * h / oh - 0.5, 0)
            x = max((j + 0.5) * w / ow - 0.5, 0)
            y0, x0 = min(int(y), h - 1), min(int(x), w - 1)
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            dy, dx = y - y0, x - x0
            top = (1 - dx) * img[:, y0, x0] + dx * img[:, y0, x1]
            bottom = (1 - dx) * img[:, y1, x0] + dx * img[:, y1, x1]
            out[:, i, j] = (1 - dy) * top + dy * bottom
    return out


def test_resize_bilinear_nearest_and_gradient():
    img = rng.uniform(size=(2, 5, 7, 3)).astype(np.float32)
    out = tf.image.resize(img, (9, 4))
    assert out.dtype == tf.float32 and out.shape == (2, 9, 4, 3)
    np.testing.assert_allclose(out.numpy(), _bilinear_ref(img, 9, 4), rtol=1e-5, atol=1e-6)
    near = tf.image.resize(img, (10, 14), method="nearest")
    np.testing.assert_array_equal(near.numpy(), img.repeat(2, 1).repeat(2, 2))
    u8 = tf.image.resize((img * 255).astype(np.uint8), (3, 3), "nearest")
    assert u8.dtype == tf.uint8
    check_op(
        lambda t: tf.image.resize(t, (6, 5)),
        [img[:1, :3, :4, :1]],
        None,
        dtypes=("float32",),
        eps=1e-2,
        grad_rtol=1e-3,
        grad_atol=1e-4,
    )  # resize is linear: a big step is exact
    # bicubic and the other kernels: tests/keras/layers/preprocessing (against TF fixtures)
    with pytest.raises(ValueError, match="unknown method 'cubic'"):
        tf.image.resize(img, (3, 3), method="cubic")


def test_resize_with_pad_centres_the_image():
    img = np.ones((28, 28, 1), np.float32)
    assert tf.image.resize_with_pad(img, 56, 56).shape == (56, 56, 1)
    wide = tf.image.resize_with_pad(np.ones((1, 2, 4, 1)), 4, 4)
    np.testing.assert_array_equal(wide.numpy()[0, :, 0, 0], [0, 1, 1, 0])
