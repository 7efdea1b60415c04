"""tf.audio.decode_wav and tf.keras.utils.audio_dataset_from_directory (as TF 2.21)."""

import io
import wave

import numpy as np
import pytest

import layerflow as tf


def _wav(samples, channels=1, rate=8000, width=2):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples).tobytes())
    return buf.getvalue()


S = np.array([[0, 1000], [-32768, 32767], [5, -5]], dtype="<i2")


def test_decode_wav_as_tf():
    audio, rate = tf.audio.decode_wav(tf.constant(_wav(S, 2)))
    assert audio.dtype == tf.float32 and rate.dtype == tf.int32 and int(rate) == 8000
    np.testing.assert_array_equal(audio.numpy(), S / 32768.0)
    # TF 2.21's outputs for the channel and length options:
    mono, _ = tf.audio.decode_wav(_wav(S, 2), desired_channels=1)
    assert mono.numpy().tolist() == [[0.0], [-1.0], [0.000152587890625]]
    three, _ = tf.audio.decode_wav(_wav(S, 2), desired_channels=3)
    np.testing.assert_array_equal(three.numpy()[:, 2], S[:, 1] / 32768.0)
    dup, _ = tf.audio.decode_wav(_wav(S[:, 0].copy(), 1), desired_channels=2)
    np.testing.assert_array_equal(dup.numpy()[:, 0], dup.numpy()[:, 1])
    long, _ = tf.audio.decode_wav(_wav(S, 2), desired_samples=5)
    assert long.shape == (5, 2) and not long.numpy()[3:].any()
    short, _ = tf.audio.decode_wav(_wav(S, 2), desired_samples=2)
    assert short.shape == (2, 2)


def test_decode_wav_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Can only read 16-bit WAV files"):
        tf.audio.decode_wav(_wav(np.zeros(6, "u1"), 1, width=1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected RIFF but found garb"):
        tf.audio.decode_wav(b"garbage")


def _folder(tmp_path, lengths=((3, 5), (4,))):
    rng = np.random.default_rng(0)
    clips = {}
    for name, lens in zip(("no", "yes"), lengths):
        (tmp_path / name).mkdir()
        for i, n in enumerate(lens):
            s = rng.integers(-30000, 30000, size=n).astype("<i2")
            (tmp_path / name / f"{i}.wav").write_bytes(_wav(s))
            clips[(name, n)] = s / 32768.0
        (tmp_path / name / "notes.txt").write_text("not audio")
    return clips


def test_dataset_fixed_length(tmp_path):
    _folder(tmp_path)
    ds = tf.keras.utils.audio_dataset_from_directory(
        tmp_path, output_sequence_length=4, batch_size=2, shuffle=False
    )
    assert ds.class_names == ["no", "yes"]
    batches = list(ds)
    assert [tuple(x.shape) for x, _ in batches] == [(2, 4, 1), (1, 4, 1)]
    assert np.concatenate([y.numpy() for _, y in batches]).tolist() == [0, 0, 1]
    x0 = batches[0][0].numpy()
    assert not x0[0, 3:].any()  # the 3-sample clip is zero-padded to 4


def test_dataset_pads_each_batch_to_its_longest_clip(tmp_path):
    clips = _folder(tmp_path)
    ds = tf.keras.utils.audio_dataset_from_directory(
        tmp_path, batch_size=3, shuffle=False, label_mode="categorical"
    )
    ((x, y),) = list(ds)
    assert tuple(x.shape) == (3, 5, 1) and y.numpy().tolist() == [[1, 0], [1, 0], [0, 1]]
    np.testing.assert_allclose(x.numpy()[1, :, 0], clips[("no", 5)])
    np.testing.assert_allclose(x.numpy()[2, :4, 0], clips[("yes", 4)])


def test_dataset_unbatched_and_errors(tmp_path):
    _folder(tmp_path)
    ds = tf.keras.utils.audio_dataset_from_directory(
        tmp_path, batch_size=None, shuffle=False, label_mode=None
    )
    assert [tuple(x.shape) for x in ds] == [(3, 1), (5, 1), (4, 1)]
    with pytest.raises(ValueError, match="Cannot set both"):
        tf.keras.utils.audio_dataset_from_directory(tmp_path, ragged=True, output_sequence_length=3)
    with pytest.raises(ValueError, match="sampling_rate"):
        tf.keras.utils.audio_dataset_from_directory(tmp_path, sampling_rate=0)
    with pytest.raises(ValueError, match="label_mode"):
        tf.keras.utils.audio_dataset_from_directory(tmp_path, label_mode="sparse")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="No audio files"):
        tf.keras.utils.audio_dataset_from_directory(tmp_path / "empty")
    with pytest.raises(NotImplementedError, match="ragged"):
        tf.keras.utils.audio_dataset_from_directory(tmp_path, ragged=True)
