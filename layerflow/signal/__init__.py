"""`tf.signal`: Fourier transforms, framing, windows, spectrograms, mel and DCT."""

from layerflow._src.ops.fft_ops import (
    fft,
    fft2d,
    fft3d,
    fftnd,
    fftshift,
    ifft,
    ifft2d,
    ifft3d,
    ifftnd,
    ifftshift,
    irfft,
    irfft2d,
    irfft3d,
    irfftnd,
    rfft,
    rfft2d,
    rfft3d,
    rfftnd,
)
from layerflow._src.ops.signal_ops import (
    frame,
    hamming_window,
    hann_window,
    kaiser_bessel_derived_window,
    kaiser_window,
    overlap_and_add,
    vorbis_window,
)
from layerflow._src.ops.spectral_ops import (
    dct,
    idct,
    inverse_mdct,
    inverse_stft,
    inverse_stft_window_fn,
    linear_to_mel_weight_matrix,
    mdct,
    mfccs_from_log_mel_spectrograms,
    stft,
)

__all__ = [
    "fft", "fft2d", "fft3d", "fftnd", "fftshift", "ifft", "ifft2d", "ifft3d", "ifftnd",
    "ifftshift", "irfft", "irfft2d", "irfft3d", "irfftnd", "rfft", "rfft2d", "rfft3d", "rfftnd",
    "frame", "hamming_window", "hann_window", "kaiser_bessel_derived_window", "kaiser_window",
    "overlap_and_add", "vorbis_window", "dct", "idct", "inverse_mdct", "inverse_stft",
    "inverse_stft_window_fn", "linear_to_mel_weight_matrix", "mdct",
    "mfccs_from_log_mel_spectrograms", "stft",
]  # fmt: skip
