"""TF 2.21's top-level raw N-D FFT ops (tf.fftnd, ifftnd, rfftnd, irfftnd): forward against
NumPy, gradients by central differences (TF registers none and runs them on GPUs only)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

RNG = np.random.default_rng(1)


def _c(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _parts(z):
    return tf.concat([tf.math.real(z), tf.math.imag(z)], axis=-1)


@pytest.mark.parametrize(
    "lengths,axes", [([3, 4], [1, 2]), ([2, 6], [1, 2]), ([5], [0]), ([2, 3, 4], [-3, -2, -1])]
)
def test_fftnd_and_ifftnd_match_numpy_with_crop_and_pad(lengths, axes):
    x = _c((2, 3, 4))
    got = tf.fftnd(x, fft_length=lengths, axes=axes)
    assert got.dtype == tf.complex64
    np.testing.assert_allclose(got.numpy(), np.fft.fftn(x, s=lengths, axes=axes), atol=1e-4)
    inv = tf.ifftnd(tf.constant(x.astype(np.complex128)), lengths, axes)
    assert inv.dtype == tf.complex128
    np.testing.assert_allclose(inv.numpy(), np.fft.ifftn(x, s=lengths, axes=axes), atol=1e-6)


def test_rfftnd_and_irfftnd_match_numpy_and_take_their_dtypes():
    x = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    got = tf.rfftnd(x, [4, 7], [1, 2])
    assert got.dtype == tf.complex64 and got.shape == (2, 4, 4)
    np.testing.assert_allclose(got.numpy(), np.fft.rfftn(x, s=(4, 7), axes=(1, 2)), atol=1e-4)
    x64 = tf.constant(x.astype(np.float64))
    assert tf.rfftnd(x64, [5, 6], [1, 2], Tcomplex=tf.complex128).dtype == tf.complex128
    y = _c((3, 4, 3))
    back = tf.irfftnd(y, [4, 4], [0, 2])
    assert back.dtype == tf.float32 and back.shape == (4, 4, 4)
    np.testing.assert_allclose(back.numpy(), np.fft.irfftn(y, s=(4, 4), axes=(0, 2)), atol=1e-5)
    y128 = tf.constant(y.astype(np.complex128))
    assert tf.irfftnd(y128, [3, 5], [1, 2], Treal=tf.float64).dtype == tf.float64


def test_raw_nd_ops_require_matching_arguments_and_dtypes():
    x = _c((2, 3))
    with pytest.raises(TypeError):
        tf.fftnd(x)  # fft_length and axes are required, as TF's raw op
    with pytest.raises(tf.errors.InvalidArgumentError, match="same length"):
        tf.fftnd(x, [3], [0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="complex64"):
        tf.rfftnd(tf.ones([2, 4]), [2, 4], [0, 1], Tcomplex=tf.complex128)
    with pytest.raises(tf.errors.InvalidArgumentError, match="float64"):
        tf.irfftnd(tf.constant(x), [2, 4], [0, 1], Treal=tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError, match="tf.cast"):
        tf.fftnd(tf.ones([2, 2]), [2, 2], [0, 1])
    with pytest.raises(ValueError, match="out of range"):
        tf.ifftnd(x, [2], [5])


@pytest.mark.parametrize("fn", [tf.fftnd, tf.ifftnd])
def test_complex_nd_gradients(fn):
    z = _c((2, 3, 2), np.complex128)
    check_op(lambda re, im: _parts(fn(tf.complex(re, im), [3, 3], [0, 1])), [z.real, z.imag],
             None, dtypes=("float64",))  # fmt: skip


def test_real_nd_gradients():
    x = RNG.standard_normal((3, 4, 2))
    check_op(lambda t: _parts(tf.rfftnd(t, [2, 5], [0, 1], Tcomplex=tf.complex128)), [x], None,
             dtypes=("float64",))  # fmt: skip
    y = _c((3, 3), np.complex128)
    check_op(lambda re, im: tf.irfftnd(tf.complex(re, im), [3, 4], [0, 1], Treal=tf.float64),
             [y.real, y.imag], None, dtypes=("float64",))  # fmt: skip
