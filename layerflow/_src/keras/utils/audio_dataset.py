"""`tf.keras.utils.audio_dataset_from_directory`: a folder of class subfolders of `.wav` files as
a dataset of (audio, label) batches, as tf_keras 2 (file indexing and batching shared with the
image and text datasets; WAV decoding by `tf.audio.decode_wav`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerflow._src.keras.utils.image_dataset import (
    index_directory,
    indexed_files_dataset,
    split,
)
from layerflow._src.keras.utils.text_dataset import _check
from layerflow._src.ops.audio_ops import decode_wav

__all__ = ["audio_dataset_from_directory"]
ALLOWED_FORMATS = (".wav",)


def _read(path: str, length: int | None) -> np.ndarray:
    with open(path, "rb") as f:
        audio, _ = decode_wav(f.read(), desired_samples=-1 if length is None else length)
    return audio.numpy()


def _dataset(paths: list, labels: Any, num_classes: int, label_mode: Any, length: Any,
             batch_size: Any, shuffle: bool, seed: Any) -> Any:  # fmt: skip
    def load(idx: np.ndarray) -> np.ndarray:
        clips = [_read(paths[j], length) for j in idx.reshape(-1)]
        if len({c.shape[1] for c in clips}) > 1:
            raise ValueError(
                "audio_dataset_from_directory: the files of one batch have different numbers of "
                f"channels ({sorted({c.shape[1] for c in clips})}); convert them to one channel "
                "count first."
            )
        # Without output_sequence_length a batch is padded with zeros to its longest clip
        # (tf_keras's padded_batch).
        longest = max(c.shape[0] for c in clips)
        out = np.zeros((len(clips), longest, clips[0].shape[1]), np.float32)
        for k, c in enumerate(clips):
            out[k, : c.shape[0]] = c
        return out.reshape(idx.shape + out.shape[1:])

    return indexed_files_dataset(len(paths), load, labels, num_classes, label_mode,
                                 batch_size, shuffle, seed)  # fmt: skip


def audio_dataset_from_directory(directory: str | os.PathLike, labels: Any = "inferred",
                                 label_mode: Any = "int", class_names: Any = None,
                                 batch_size: int | None = 32, sampling_rate: int | None = None,
                                 output_sequence_length: int | None = None, ragged: bool = False,
                                 shuffle: bool = True, seed: int | None = None,
                                 validation_split: float | None = None,
                                 subset: str | None = None,
                                 follow_links: bool = False) -> Any:  # fmt: skip
    """`.wav` files in `directory/<class>/` as a dataset of `(audio, labels)` batches.

    Audio is float32 (batch, samples, channels) in [-1, 1): cut or zero-padded to
    `output_sequence_length`, or, without it, zero-padded to the longest clip of the batch.
    Labels as `image_dataset_from_directory`'s (`label_mode` "int", "categorical", "binary",
    None). The dataset's `class_names` lists the classes.

    >>> import layerflow as tf
    >>> ds = tf.keras.utils.audio_dataset_from_directory("speech/train")  # doctest: +SKIP
    """
    directory = os.fspath(directory)
    _check(labels, label_mode, class_names, validation_split, subset, shuffle, seed)
    if ragged and output_sequence_length is not None:
        raise ValueError("Cannot set both `ragged` and `output_sequence_length`")
    if ragged:
        raise NotImplementedError(
            "audio_dataset_from_directory(ragged=True): layerflow's datasets do not yield ragged "
            "batches; pass output_sequence_length=, or leave it None to pad each batch to its "
            "longest clip."
        )
    if sampling_rate is not None:
        if isinstance(sampling_rate, bool) or not isinstance(sampling_rate, int):
            raise ValueError(
                "`sampling_rate` should have an integer value. "
                f"Received: sampling_rate={sampling_rate}"
            )
        if sampling_rate <= 0:
            raise ValueError(
                f"`sampling_rate` should be higher than 0. Received: sampling_rate={sampling_rate}"
            )
        raise NotImplementedError(
            "audio_dataset_from_directory(sampling_rate=...) resamples with tensorflow_io in "
            "tf_keras; layerflow has no resampler. Leave sampling_rate=None (the files' rate)."
        )
    if output_sequence_length is not None and (
        not isinstance(output_sequence_length, int) or output_sequence_length <= 0
    ):
        raise ValueError(
            "`output_sequence_length` must be a positive int or None, got "
            f"{output_sequence_length!r}."
        )
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    if seed is None:
        seed = int(np.random.randint(1e6))
    paths, all_labels, names = index_directory(directory, labels, class_names, shuffle, seed,
                                               follow_links, formats=ALLOWED_FORMATS)  # fmt: skip
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(
            'When passing `label_mode="binary"`, there must be exactly 2 class_names. '
            f"Received: class_names={names}"
        )
    subsets = ["training", "validation"] if subset == "both" else [subset]
    out = []
    for part in subsets:
        p, lab = split(paths, all_labels, validation_split, part)
        if not p:
            what = f"{part} " if part else ""
            raise ValueError(
                f"No {what}audio files found in directory {directory}. Allowed format: .wav"
            )
        mix = shuffle and not (subset == "both" and part == "validation")
        ds = _dataset(p, lab, len(names), label_mode, output_sequence_length, batch_size, mix,
                      seed)  # fmt: skip
        ds.class_names = names
        ds.file_paths = p
        out.append(ds)
    return out if subset == "both" else out[0]
