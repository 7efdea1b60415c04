"""tf.signal framing, windows, STFT, DCT, MDCT and mel against real TensorFlow 2.21 values
(tests/ops/fixtures/signal.npz, made by make_signal_fixtures.py), and gradients numerically."""

import pathlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

F = np.load(pathlib.Path(__file__).parent / "fixtures" / "signal.npz")
X = F["x"]


def _close(got, key, rtol=1e-5, atol=1e-5):
    expected = F[key]
    got = got.numpy()
    assert got.dtype == expected.dtype, (key, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (key, got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=key)


@pytest.mark.parametrize("n,periodic", [(8, True), (8, False), (7, True), (1, True)])
def test_raised_cosine_windows_match_tf(n, periodic):
    _close(tf.signal.hann_window(n, periodic=periodic), f"hann_{n}_{periodic}")
    _close(tf.signal.hamming_window(n, periodic=periodic), f"hamming_{n}_{periodic}")


def test_kaiser_kbd_vorbis_windows_and_dtype_match_tf():
    for n, beta in [(8, 12.0), (7, 3.5), (1, 12.0)]:
        _close(tf.signal.kaiser_window(n, beta=beta), f"kaiser_{n}_{beta}")
        _close(tf.signal.kaiser_bessel_derived_window(n, beta=beta), f"kbd_{n}_{beta}")
    for n in (8, 7):
        _close(tf.signal.vorbis_window(n), f"vorbis_{n}")
    _close(tf.signal.hann_window(8, dtype=tf.float64), "hann_8_f64", rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="floating point"):
        tf.signal.hann_window(8, dtype=tf.int32)


def test_frame_matches_tf_with_padding_and_axis():
    _close(tf.signal.frame(X[:, :10], 4, 3), "frame_4_3", rtol=0, atol=0)
    _close(tf.signal.frame(X[:, :10], 4, 3, pad_end=True, pad_value=-1.0), "frame_4_3_pad", 0, 0)
    _close(tf.signal.frame(X[:, :10].T, 3, 2, axis=0), "frame_axis0", rtol=0, atol=0)
    assert tf.signal.frame(tf.range(3), 5, 1).shape == (0, 5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="positive"):
        tf.signal.frame(X, 0, 1)
    with pytest.raises(ValueError, match="out of range"):
        tf.signal.frame(X, 2, 1, axis=2)


@pytest.mark.parametrize("step", [2, 3, 4, 5])
def test_overlap_and_add_matches_tf(step):
    _close(tf.signal.overlap_and_add(X.reshape(2, 8, 8)[:, :5, :4], step), f"ola_{step}")


def test_frame_and_overlap_and_add_gradients():
    x = np.random.default_rng(1).standard_normal((2, 9))
    check_op(lambda t: tf.signal.frame(t, 4, 3, pad_end=True), [x], None)
    frames = np.random.default_rng(2).standard_normal((2, 4, 5))
    check_op(lambda t: tf.signal.overlap_and_add(t, 2), [frames], None)
    with pytest.raises(ValueError, match="rank at least 2"):
        tf.signal.overlap_and_add([1.0, 2.0], 1)


def test_stft_and_inverse_stft_match_tf():
    _close(tf.signal.stft(X, 16, 8), "stft_16_8", atol=1e-4)
    _close(tf.signal.stft(X, 12, 5, pad_end=True), "stft_12_5_pad", atol=1e-4)
    _close(tf.signal.stft(X, 16, 8, 32, tf.signal.hamming_window), "stft_16_8_fft32_hamming",
           atol=1e-4)  # fmt: skip
    s = tf.signal.stft(X, 16, 4)
    _close(tf.signal.inverse_stft(s, 16, 4), "istft_16_4")
    inverse = tf.signal.inverse_stft_window_fn(4)
    _close(inverse(16, tf.float32), "istft_window_16_4")
    _close(tf.signal.inverse_stft(s, 16, 4, window_fn=inverse), "istft_16_4_inv")
    _close(tf.signal.inverse_stft(tf.signal.stft(X, 8, 3), 12, 3, 8), "istft_12_3_fft8")
    # Perfect reconstruction away from the edges.
    back = tf.signal.inverse_stft(s, 16, 4, window_fn=inverse).numpy()
    np.testing.assert_allclose(back[:, 12:-12], X[:, 12:-12], atol=1e-5)


def test_stft_power_gradient_matches_tf_and_differences():
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.abs(tf.signal.stft(x, 16, 8)) ** 2)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), F["grad_stft_power"],
                               rtol=1e-4, atol=1e-4)  # fmt: skip
    small = np.random.default_rng(3).standard_normal((1, 12))
    check_op(lambda t: tf.math.real(tf.signal.stft(t, 6, 3, 8)), [small], None)


def test_fft_gradients_match_tf():
    x = tf.constant(X)
    w = F["w"]
    with tf.GradientTape() as tape:
        tape.watch(x)
        r = tf.signal.rfft(x)
        loss = tf.reduce_sum(tf.math.real(r) * w + tf.math.imag(r) * w[::-1])
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), F["grad_rfft"], atol=1e-4)
    y = tf.constant((X[:, :33] + 1j * X[:, 31:]).astype(np.complex64))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(y)
        loss_i = tf.reduce_sum(tf.signal.irfft(y) * X)
        f = tf.signal.fft(y)
        loss_f = tf.reduce_sum(tf.math.real(f) * w + tf.math.imag(f) * w[::-1])
    np.testing.assert_allclose(tape.gradient(loss_i, y).numpy(), F["grad_irfft"], atol=1e-5)
    np.testing.assert_allclose(tape.gradient(loss_f, y).numpy(), F["grad_fft"], atol=1e-4)


def test_mel_matrix_and_mfccs_match_tf():
    _close(tf.signal.linear_to_mel_weight_matrix(), "mel_default")
    _close(tf.signal.linear_to_mel_weight_matrix(40, 257, 16000, 20.0, 8000.0, dtype=tf.float64),
           "mel_40_257", rtol=1e-9, atol=1e-9)  # fmt: skip
    _close(tf.signal.mfccs_from_log_mel_spectrograms(F["logmel"]), "mfcc")
    with pytest.raises(ValueError, match="Nyquist"):
        tf.signal.linear_to_mel_weight_matrix(sample_rate=8000, upper_edge_hertz=5000.0)
    with pytest.raises(ValueError, match="lower_edge_hertz"):
        tf.signal.linear_to_mel_weight_matrix(lower_edge_hertz=4000.0, upper_edge_hertz=3000.0)


@pytest.mark.parametrize("dct_type", [1, 2, 3, 4])
def test_dct_idct_match_tf(dct_type):
    d = X[:, :8].astype(np.float64)
    for norm in [None] if dct_type == 1 else [None, "ortho"]:
        for n in (None, 6, 12):
            key = f"{dct_type}_{norm}_{n}"
            _close(tf.signal.dct(d, type=dct_type, n=n, norm=norm), f"dct_{key}", 1e-10, 1e-10)
            _close(tf.signal.idct(d, type=dct_type, n=n, norm=norm), f"idct_{key}", 1e-10, 1e-10)
    if dct_type != 1:
        back = tf.signal.idct(tf.signal.dct(d, type=dct_type, norm="ortho"), type=dct_type,
                              norm="ortho")  # fmt: skip
        np.testing.assert_allclose(back.numpy(), d, atol=1e-12)
    check_op(lambda t: tf.signal.dct(t, type=dct_type), [d[:1, :5]], None, dtypes=("float64",))


def test_dct_validates_arguments():
    with pytest.raises(ValueError, match="type-I"):
        tf.signal.dct([1.0, 2.0], type=1, norm="ortho")
    with pytest.raises(ValueError, match="types I, II, III and IV"):
        tf.signal.dct([1.0, 2.0], type=5)
    with pytest.raises(NotImplementedError, match="axis"):
        tf.signal.dct([1.0, 2.0], axis=0)
    with pytest.raises(ValueError, match="positive integer"):
        tf.signal.dct([1.0, 2.0], n=0)


def test_mdct_and_inverse_match_tf_and_reconstruct():
    _close(tf.signal.mdct(X[:, :32], 8), "mdct_8")
    _close(tf.signal.mdct(X[:, :32], 8, window_fn=tf.signal.kaiser_bessel_derived_window,
                          norm="ortho"), "mdct_8_ortho_kbd")  # fmt: skip
    _close(tf.signal.mdct(X[:, :30], 8, window_fn=None, pad_end=True), "mdct_8_nowin_pad")
    _close(tf.signal.inverse_mdct(F["mdct_8"]), "imdct_8")
    _close(tf.signal.inverse_mdct(F["mdct_8"], None, "ortho"), "imdct_8_ortho_nowin")
    back = tf.signal.inverse_mdct(tf.signal.mdct(X[:, :32], 8)).numpy()
    np.testing.assert_allclose(back[:, 4:-4], X[:, 4:28], atol=1e-5)
    with pytest.raises(ValueError, match="multiple of 4"):
        tf.signal.mdct(X, 6)
