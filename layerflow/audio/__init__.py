"""`tf.audio`: WAV decoding."""

from layerflow._src.ops.audio_ops import decode_wav

__all__ = ["decode_wav"]
