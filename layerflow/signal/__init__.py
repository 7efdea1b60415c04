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

__all__ = [
    "fft", "fft2d", "fft3d", "fftnd", "fftshift", "ifft", "ifft2d", "ifft3d", "ifftnd",
    "ifftshift", "irfft", "irfft2d", "irfft3d", "irfftnd", "rfft", "rfft2d", "rfft3d", "rfftnd",
]  # fmt: skip
