"""`__getitem__` on scalars and 0-size tensors, as TF indexes them (values and gradients)."""

import numpy as np
import pytest

import layerflow as tf

# Scalars take new axes and ellipses (TF 2.21: x[..., None] has shape (1,)), and 0-size
# tensors index like NumPy; expected shapes read from TF.
SCALAR_KEYS = [
    ("[..., None]", lambda x: x[..., None], (1,)),
    ("[None]", lambda x: x[None], (1,)),
    ("[..., newaxis]", lambda x: x[..., tf.newaxis], (1,)),
    ("[...]", lambda x: x[...], ()),
    ("[None, ...]", lambda x: x[None, ...], (1,)),
    ("[newaxis, ..., newaxis]", lambda x: x[tf.newaxis, ..., tf.newaxis], (1, 1)),
    ("[None, None]", lambda x: x[None, None], (1, 1)),
]


@pytest.mark.parametrize("name,index,shape", SCALAR_KEYS, ids=[k[0] for k in SCALAR_KEYS])
def test_scalar_new_axes_and_ellipsis(name, index, shape):
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = index(x)
        loss = tf.reduce_sum(y * 2.0)
    assert y.shape == shape
    np.testing.assert_array_equal(y.numpy(), np.full(shape, 3.0, np.float32))
    grad = tape.gradient(loss, x)
    assert grad.shape == () and float(grad) == 2.0
    assert index(tf.Variable(3.0)).shape == shape


@pytest.mark.parametrize("key", [0, slice(None), (0,)])
def test_scalar_refuses_real_indices(key):
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        tf.constant(3.0)[key]


def test_zero_size_indexing_shapes():
    z = tf.zeros((0, 2))
    assert z[..., None].shape == (0, 2, 1)
    assert z[None].shape == (1, 0, 2)
    assert z[None, ..., None].shape == (1, 0, 2, 1)
    assert z[:, None, 1].shape == (0, 1)
    assert z[..., 0].shape == (0,)
