"""tf.signal FFTs: forward against NumPy's pocketfft, gradients by central differences through
real and imaginary parts (TF's convention: the gradient of a complex input is dRe + i dIm)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

RNG = np.random.default_rng(0)


def _c(shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def _parts(z):
    return tf.concat([tf.math.real(z), tf.math.imag(z)], axis=-1)


COMPLEX = [
    (tf.signal.fft, np.fft.fft, 1),
    (tf.signal.ifft, np.fft.ifft, 1),
    (tf.signal.fft2d, np.fft.fft2, 2),
    (tf.signal.ifft2d, np.fft.ifft2, 2),
    (tf.signal.fft3d, lambda a: np.fft.fftn(a, axes=(-3, -2, -1)), 3),
    (tf.signal.ifft3d, lambda a: np.fft.ifftn(a, axes=(-3, -2, -1)), 3),
]


@pytest.mark.parametrize("fn,ref,rank", COMPLEX, ids=lambda v: getattr(v, "__name__", str(v)))
def test_complex_transforms_forward_and_gradient(fn, ref, rank):
    x = _c((2, 3, 4, 5))
    out = fn(tf.constant(x))
    assert out.dtype == tf.complex64
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-4, atol=1e-4)
    out128 = fn(tf.constant(x.astype(np.complex128)))
    assert out128.dtype == tf.complex128
    np.testing.assert_allclose(out128.numpy(), ref(x.astype(np.complex128)), rtol=1e-12)
    small = _c((2, 3, 4)[-rank:] if rank < 3 else (2, 3, 2))
    check_op(lambda re, im: _parts(fn(tf.complex(re, im))), [small.real, small.imag], None,
             dtypes=("float64",))  # fmt: skip


def test_complex_transforms_reject_real_tensors_and_low_rank():
    with pytest.raises(tf.errors.InvalidArgumentError, match="tf.cast"):
        tf.signal.fft(tf.constant([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank of at least 2"):
        tf.signal.fft2d(tf.constant([1 + 0j], tf.complex64))
    # Python values become complex64, as TF's conversion does.
    assert tf.signal.fft([1.0, 2.0]).dtype == tf.complex64


@pytest.mark.parametrize("n", [None, 4, 6, 9])
def test_rfft_irfft_match_numpy_with_fft_length_crop_and_pad(n):
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    lengths = None if n is None else [n]
    got = tf.signal.rfft(x, lengths)
    assert got.dtype == tf.complex64
    np.testing.assert_allclose(got.numpy(), np.fft.rfft(x, n=n), rtol=1e-5, atol=1e-5)
    y = _c((3, 5))
    back = tf.signal.irfft(y, lengths)
    assert back.dtype == tf.float32
    np.testing.assert_allclose(back.numpy(), np.fft.irfft(y, n=n or 8), rtol=1e-5, atol=1e-6)


def test_rfft2d_3d_and_inverses_match_numpy():
    x = RNG.standard_normal((2, 5, 6, 4))
    np.testing.assert_allclose(tf.signal.rfft2d(x).numpy(), np.fft.rfftn(x, axes=(-2, -1)))
    np.testing.assert_allclose(tf.signal.rfft3d(x, [3, 7, 5]).numpy(),
                               np.fft.rfftn(x, s=(3, 7, 5), axes=(-3, -2, -1)))  # fmt: skip
    y = _c((4, 5, 3)).astype(np.complex128)
    np.testing.assert_allclose(tf.signal.irfft2d(y, [3, 7]).numpy(),
                               np.fft.irfftn(y, s=(3, 7), axes=(-2, -1)), atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(tf.signal.irfft3d(y).numpy(),
                               np.fft.irfftn(y, axes=(-3, -2, -1)), atol=1e-12)  # fmt: skip
    assert tf.signal.rfft2d(x.astype(np.float64)).dtype == tf.complex128


@pytest.mark.parametrize(
    "fn,shape,length",
    [
        (tf.signal.rfft, (2, 6), None),
        (tf.signal.rfft, (2, 5), [5]),
        (tf.signal.rfft, (2, 6), [4]),  # cropped
        (tf.signal.rfft, (2, 3), [7]),  # padded
        (tf.signal.rfft2d, (3, 4), None),
        (tf.signal.rfft2d, (3, 5), [4, 6]),
        (tf.signal.rfft3d, (2, 3, 4), None),
    ],
)
def test_rfft_gradient(fn, shape, length):
    x = RNG.standard_normal(shape)
    check_op(lambda t: _parts(fn(t, length)), [x], None, dtypes=("float64",))


@pytest.mark.parametrize(
    "fn,shape,length",
    [
        (tf.signal.irfft, (2, 4), None),
        (tf.signal.irfft, (2, 4), [7]),
        (tf.signal.irfft, (2, 4), [3]),  # the input is cropped
        (tf.signal.irfft, (2, 3), [9]),  # the input is padded
        (tf.signal.irfft2d, (3, 4), [3, 6]),
        (tf.signal.irfft2d, (3, 3), [4, 5]),
        (tf.signal.irfft3d, (2, 3, 3), [2, 3, 4]),
    ],
)
def test_irfft_gradient(fn, shape, length):
    y = _c(shape).astype(np.complex128)
    check_op(lambda re, im: fn(tf.complex(re, im), length), [y.real, y.imag], None,
             dtypes=("float64",))  # fmt: skip


def test_irfft_gradient_matches_tf_mask_formula():
    # TF's _irfft_grad_helper: rfft(dy) * [1, 2, ..., 2, 1] / N for an even length.
    y = tf.constant(_c((5,)))
    dy = RNG.standard_normal(8).astype(np.float32)
    with tf.GradientTape() as tape:
        tape.watch(y)
        out = tf.signal.irfft(y)
    got = tape.gradient(out, y, output_gradients=tf.constant(dy)).numpy()
    expected = np.fft.rfft(dy) * np.array([1, 2, 2, 2, 1]) / 8
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_fftnd_family_axes_lengths_and_norm():
    x = _c((4, 5, 3)).astype(np.complex128)
    np.testing.assert_allclose(tf.signal.fftnd(x).numpy(), np.fft.fftn(x))
    np.testing.assert_allclose(tf.signal.fftnd(x, fft_length=[2, 6], axes=[0, -1]).numpy(),
                               np.fft.fftn(x, s=(2, 6), axes=(0, 2)))  # fmt: skip
    for norm in ("backward", "forward", "ortho"):
        np.testing.assert_allclose(tf.signal.ifftnd(x, axes=[1], norm=norm).numpy(),
                                   np.fft.ifftn(x, axes=(1,), norm=norm))  # fmt: skip
        r = x.real.copy()
        np.testing.assert_allclose(tf.signal.rfftnd(r, axes=[0, 1], norm=norm).numpy(),
                                   np.fft.rfftn(r, axes=(0, 1), norm=norm))  # fmt: skip
        np.testing.assert_allclose(tf.signal.irfftnd(x, [4, 7], axes=[1, 2], norm=norm).numpy(),
                                   np.fft.irfftn(x, s=(4, 7), axes=(1, 2), norm=norm))  # fmt: skip
    with pytest.raises(ValueError, match="norm"):
        tf.signal.fftnd(x, norm="bad")
    with pytest.raises(ValueError, match="out of range"):
        tf.signal.fftnd(x, axes=[3])
    small = _c((3, 4))
    check_op(lambda re, im: _parts(tf.signal.fftnd(tf.complex(re, im), [4, 3], norm="ortho")),
             [small.real, small.imag], None, dtypes=("float64",))  # fmt: skip


def test_real_transforms_validate_inputs():
    with pytest.raises(ValueError, match="float32 or tf.float64"):
        tf.signal.rfft(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="positive"):
        tf.signal.rfft([1.0, 2.0], [0])
    with pytest.raises(ValueError, match="1 integer"):
        tf.signal.rfft([1.0, 2.0], [2, 3])
    with pytest.raises(ValueError, match="rank at least 2"):
        tf.signal.rfft2d([1.0, 2.0])
    assert tf.signal.rfft([1.0, 2.0]).dtype == tf.complex64


def test_fftshift_and_ifftshift_match_numpy():
    x = np.arange(15.0).reshape(3, 5)
    np.testing.assert_array_equal(tf.signal.fftshift(x).numpy(), np.fft.fftshift(x))
    np.testing.assert_array_equal(tf.signal.ifftshift(x, axes=1).numpy(),
                                  np.fft.ifftshift(x, axes=1))  # fmt: skip
    np.testing.assert_array_equal(tf.signal.ifftshift(tf.signal.fftshift(x, axes=[-1, 0]),
                                                      axes=[-1, 0]).numpy(), x)  # fmt: skip
    check_op(lambda t: tf.signal.fftshift(t, axes=1), [x], lambda a: np.fft.fftshift(a, axes=1))
