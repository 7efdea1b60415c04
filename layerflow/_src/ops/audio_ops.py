"""`tf.audio.decode_wav`: 16-bit PCM WAV bytes to float32 samples, with Python's `wave` module.

As TF: samples scaled to [-1, 1) (int16 / 32768), shape (samples, channels); `desired_samples`
truncates or zero-pads, `desired_channels` takes output channel c from input channel
min(c, channels - 1) (mono duplicated, extra channels dropped). Only 16-bit PCM is read, as
TF's DecodeWav.
"""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike


def _bytes(contents: Any) -> bytes:
    if isinstance(contents, TensorLike):
        contents = contents.numpy()
        if isinstance(contents, np.ndarray):
            contents = contents.item()
    if isinstance(contents, str):
        contents = contents.encode("latin-1")
    if not isinstance(contents, bytes | bytearray):
        raise TypeError(
            f"tf.audio.decode_wav: contents must be the bytes of a WAV file (a scalar string "
            f"tensor, e.g. tf.io.read_file(path)), got {type(contents).__name__}."
        )
    return bytes(contents)


def _bad(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"{message} [Op:DecodeWav]")


def decode_wav(contents: Any, desired_channels: int = -1, desired_samples: int = -1,
               name: str | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """`(audio, sample_rate)`: float32 samples (samples, channels) and an int32 scalar.

    >>> import io, wave, numpy as np
    >>> buf = io.BytesIO()
    >>> with wave.open(buf, "wb") as w:
    ...     w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
    ...     w.writeframes(np.array([0, 16384], "<i2").tobytes())
    >>> audio, rate = decode_wav(buf.getvalue())
    >>> audio.numpy().tolist(), int(rate)
    ([[0.0], [0.5]], 8000)
    """
    data = _bytes(contents)
    if data[:4] != b"RIFF":
        raise _bad(f"Header mismatch: Expected RIFF but found {data[:4].decode('latin-1')}")
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            frames = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as err:
        raise _bad(f"Could not read the WAV data: {err}") from None
    if width != 2:
        raise _bad(f"Can only read 16-bit WAV files, but received {8 * width}")
    samples = np.frombuffer(frames, dtype="<i2")
    samples = samples[: samples.size - samples.size % channels].reshape(-1, channels)
    audio = samples.astype(np.float32) / np.float32(32768.0)
    if desired_channels is not None and desired_channels > 0:
        audio = audio[:, np.minimum(np.arange(desired_channels), channels - 1)]
    if desired_samples is not None and desired_samples >= 0:
        if desired_samples <= audio.shape[0]:
            audio = audio[:desired_samples]
        else:
            pad = np.zeros((desired_samples - audio.shape[0], audio.shape[1]), np.float32)
            audio = np.concatenate([audio, pad])
    return convert_to_tensor(np.ascontiguousarray(audio)), convert_to_tensor(rate, "int32")
