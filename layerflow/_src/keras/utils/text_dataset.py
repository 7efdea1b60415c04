"""`tf.keras.utils.text_dataset_from_directory`: a folder of class subfolders of `.txt` files as
a dataset of (string, label) batches, as tf_keras 2 (file indexing shared with
`image_dataset_from_directory`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerflow._src.data.dataset import Dataset
from layerflow._src.keras.utils.image_dataset import (
    index_directory,
    indexed_files_dataset,
    split,
)

__all__ = ["text_dataset_from_directory"]


def _check(labels: Any, label_mode: Any, class_names: Any, validation_split: Any, subset: Any,
           shuffle: bool, seed: Any) -> None:  # fmt: skip
    if labels not in ("inferred", None):
        if not isinstance(labels, list | tuple):
            raise ValueError(
                "`labels` argument should be a list/tuple of integer labels, of the same size as "
                "the number of text files in the target directory. If you wish to infer the "
                "labels from the subdirectory names in the target directory, pass "
                '`labels="inferred"`. '
                "If you wish to get a dataset that only contains text samples (no labels), pass "
                f"`labels=None`. Received: labels={labels}"
            )
        if class_names:
            raise ValueError(
                'You can only pass `class_names` if `labels="inferred"`. Received: '
                f"labels={labels}, and class_names={class_names}"
            )
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(
            '`label_mode` argument must be one of "int", "categorical", "binary", or None. '
            f"Received: label_mode={label_mode}"
        )
    if validation_split is not None and not 0 < validation_split < 1:
        raise ValueError(
            f"`validation_split` must be between 0 and 1, received: {validation_split}"
        )
    if (validation_split and subset not in ("training", "validation", "both")) or (
        subset and not validation_split
    ):
        raise ValueError(
            "If `subset` is set, `validation_split` must be set, and inversely; `subset` must be "
            f'"training", "validation" or "both", received: subset={subset}'
        )
    if validation_split and shuffle and seed is None:
        raise ValueError(
            "If using `validation_split` and shuffling the data, you must provide a `seed` "
            "argument, to make sure that there is no overlap between the training and "
            "validation subset."
        )


def _dataset(paths: list, labels: Any, num_classes: int, label_mode: Any, max_length: Any,
             batch_size: Any, shuffle: bool, seed: Any) -> Dataset:  # fmt: skip
    def read(i: int) -> bytes:
        with open(paths[i], "rb") as f:
            data = f.read() if max_length is None else f.read(int(max_length))
        return data

    def texts(idx: np.ndarray) -> np.ndarray:
        out = np.empty(idx.size, dtype=object)
        out[:] = [read(j) for j in idx.reshape(-1)]
        return out.reshape(idx.shape)

    return indexed_files_dataset(len(paths), texts, labels, num_classes, label_mode,
                                 batch_size, shuffle, seed)  # fmt: skip


def text_dataset_from_directory(directory: str | os.PathLike, labels: Any = "inferred",
                                label_mode: Any = "int", class_names: Any = None,
                                batch_size: int | None = 32, max_length: int | None = None,
                                shuffle: bool = True, seed: int | None = None,
                                validation_split: float | None = None, subset: str | None = None,
                                follow_links: bool = False) -> Any:  # fmt: skip
    """Text files in `directory/<class>/*.txt` as a dataset of `(texts, labels)` batches.

    Texts are scalar string tensors (the file's bytes, cut to `max_length` bytes), batched to
    shape (batch,); labels are int32 (`label_mode="int"`), one-hot float32 ("categorical"),
    float32 (n, 1) ("binary"), or absent (None). The dataset's `class_names` lists the classes.

    >>> import layerflow as tf
    >>> ds = tf.keras.utils.text_dataset_from_directory("aclImdb/train")  # doctest: +SKIP
    """
    directory = os.fspath(directory)
    _check(labels, label_mode, class_names, validation_split, subset, shuffle, seed)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    if max_length is not None and (not isinstance(max_length, int) or max_length < 0):
        raise ValueError(f"`max_length` must be a non-negative int or None, got {max_length!r}.")

    def make(paths: list, labs: Any, num_classes: int, mix: bool, seed: int) -> Any:
        return _dataset(paths, labs, num_classes, label_mode, max_length, batch_size, mix, seed)

    return directory_subsets(directory, labels, label_mode, class_names, shuffle, seed,
                             follow_links, validation_split, subset, "text", (".txt",),
                             make)  # fmt: skip


def directory_subsets(directory: str, labels: Any, label_mode: Any, class_names: Any,
                      shuffle: bool, seed: Any, follow_links: bool, validation_split: Any,
                      subset: Any, kind: str, formats: tuple, make: Any) -> Any:  # fmt: skip
    """The text and audio datasets' shared pipeline: index the `formats` files of `directory`'s
    class folders, split them per `subset` ("both" gives [training, validation]), and build each
    part with `make(paths, labels, num_classes, shuffle, seed)`."""
    if seed is None:
        seed = int(np.random.randint(1e6))
    paths, all_labels, names = index_directory(directory, labels, class_names, shuffle, seed,
                                               follow_links, formats=formats)  # fmt: skip
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(
            'When passing `label_mode="binary"`, there must be exactly 2 class_names. '
            f"Received: class_names={names}"
        )
    out = []
    for part in ["training", "validation"] if subset == "both" else [subset]:
        p, lab = split(paths, all_labels, validation_split, part)
        if not p:
            what = f"{part} " if part else ""
            raise ValueError(
                f"No {what}{kind} files found in directory {directory}. Allowed format: "
                f"{', '.join(formats)}"
            )
        ds = make(p, lab, len(names), shuffle and not (subset == "both" and part == "validation"),
                  seed)  # fmt: skip
        ds.class_names = names
        ds.file_paths = p
        out.append(ds)
    return out if subset == "both" else out[0]
