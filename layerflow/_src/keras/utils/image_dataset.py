"""`tf.keras.utils.image_dataset_from_directory`: a folder of class subfolders as a dataset."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerflow._src.data.dataset import Dataset
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.keras.utils import image_utils, io_utils

ALLOWED_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _walk(directory: str, follow_links: bool, formats: tuple = ALLOWED_FORMATS) -> list[str]:
    found = []
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda w: w[0]):
        for fname in sorted(files):
            if fname.lower().endswith(formats):
                found.append(os.path.join(root, fname))
    return found


def index_directory(directory: str, labels: Any, class_names: Any, shuffle: bool, seed: Any,
                    follow_links: bool, formats: tuple = ALLOWED_FORMATS,
                    ) -> tuple[list[str], Any, list]:  # fmt: skip
    """File paths, labels and class names, in Keras's order (shuffled with `seed`)."""
    if labels == "inferred":
        subdirs = [
            d for d in sorted(os.listdir(directory))
            if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")
        ]  # fmt: skip
        if class_names:
            if set(class_names) != set(subdirs):
                raise ValueError(
                    "The `class_names` passed did not match the names of the subdirectories of "
                    f"the target directory. Expected: {subdirs}, but received: {class_names}"
                )
        else:
            class_names = subdirs
        paths, label_list = [], []
        for index, name in enumerate(class_names):
            files = _walk(os.path.join(directory, name), follow_links, formats)
            paths += files
            label_list += [index] * len(files)
        out_labels: Any = np.asarray(label_list, dtype="int32")
    else:
        paths = _walk(directory, follow_links, formats)
        if labels is not None:
            if len(labels) != len(paths):
                raise ValueError(
                    "Expected the lengths of `labels` to match the number of files in the target "
                    f"directory. len(labels) is {len(labels)} while we found {len(paths)} files "
                    f"in directory {directory}."
                )
            class_names = sorted(set(labels))
            out_labels = np.asarray(labels)
        else:
            out_labels, class_names = None, []
    if out_labels is None:
        io_utils.print_msg(f"Found {len(paths)} files.")
    else:
        io_utils.print_msg(f"Found {len(paths)} files belonging to {len(class_names)} classes.")
    if shuffle:
        if seed is None:
            seed = int(np.random.randint(1e6))
        np.random.RandomState(seed).shuffle(paths)
        if out_labels is not None:
            np.random.RandomState(seed).shuffle(out_labels)
    return paths, out_labels, list(class_names)


def split(paths: list, labels: Any, validation_split: float | None, subset: str | None,
          ) -> tuple[list, Any]:  # fmt: skip
    if not validation_split:
        return paths, labels
    n_val = int(validation_split * len(paths))
    if subset == "training":
        io_utils.print_msg(f"Using {len(paths) - n_val} files for training.")
        return paths[: len(paths) - n_val], None if labels is None else labels[: len(paths) - n_val]
    io_utils.print_msg(f"Using {n_val} files for validation.")
    return paths[len(paths) - n_val :], None if labels is None else labels[len(paths) - n_val :]


def _check(labels: Any, label_mode: Any, color_mode: str, interpolation: str,
           validation_split: Any, subset: Any, shuffle: bool, seed: Any) -> None:  # fmt: skip
    if labels not in ("inferred", None) and not isinstance(labels, list | tuple):
        raise ValueError(
            "`labels` argument should be a list/tuple of integer labels, of the same size as "
            "the number of image files in the target directory. If you wish to infer the "
            'labels from the subdirectory names in the target directory, pass `labels="inferred"`. '
            "If you wish to get a dataset that only contains images (no labels), pass "
            f"`labels=None`. Received: labels={labels}"
        )
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(
            '`label_mode` argument must be one of "int", "categorical", "binary", or None. '
            f"Received: label_mode={label_mode}"
        )
    if color_mode not in ("rgb", "rgba", "grayscale"):
        raise ValueError(
            '`color_mode` must be one of {"rgb", "rgba", "grayscale"}. '
            f"Received: color_mode={color_mode}"
        )
    if interpolation not in image_utils.INTERPOLATIONS:
        raise ValueError(
            f"`interpolation` must be one of {image_utils.INTERPOLATIONS}. Received: "
            f"interpolation={interpolation}"
        )
    if validation_split is not None and not 0 < validation_split < 1:
        raise ValueError(
            f"`validation_split` must be between 0 and 1, received: {validation_split}"
        )
    if (validation_split or subset) and subset not in ("training", "validation", "both"):
        raise ValueError(
            "If `subset` is set, `validation_split` must be set, and inversely; `subset` must "
            f'be "training", "validation" or "both", received: subset={subset}'
        )
    if (validation_split and not subset) or (subset and not validation_split):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if validation_split and shuffle and seed is None:
        raise ValueError(
            "If using `validation_split` and shuffling the data, you must provide a `seed` "
            "argument, to make sure that there is no overlap between the training and "
            "validation subset."
        )


def indexed_files_dataset(count: int, load: Any, labels: Any, num_classes: int, label_mode: Any,
                          batch_size: Any, shuffle: bool, seed: Any) -> Dataset:  # fmt: skip
    """The files 0..count-1, shuffled and batched, as `load(idx)` reads them (an array of idx's
    shape plus an item's), with their labels in `label_mode` (the image and text datasets)."""

    def label_of(idx: np.ndarray) -> np.ndarray:
        y = labels[idx]
        if label_mode == "binary":
            return y.astype("float32")[..., None]
        if label_mode == "categorical":
            return np.eye(num_classes, dtype="float32")[y]
        return y.astype("int32")

    def element(i: Any) -> Any:
        idx = np.asarray(i.numpy() if hasattr(i, "numpy") else i, dtype=np.int64)
        x = convert_to_tensor(load(idx))
        if labels is None or label_mode is None:
            return x
        return x, convert_to_tensor(label_of(idx))

    ds = Dataset.from_tensor_slices(np.arange(count, dtype=np.int64))
    if shuffle:
        ds = ds.shuffle(buffer_size=(batch_size or 128) * 8, seed=seed)
    if batch_size is not None:
        ds = ds.batch(int(batch_size))
    return ds.map(element)


def _dataset(paths: list, labels: Any, num_classes: int, label_mode: Any, color_mode: str,
             image_size: tuple[int, int], interpolation: str, crop: bool, batch_size: Any,
             shuffle: bool, seed: Any) -> Dataset:  # fmt: skip
    height, width = int(image_size[0]), int(image_size[1])

    def load(i: int) -> np.ndarray:
        img = image_utils.load_img(paths[i], color_mode=color_mode, target_size=(height, width),
                                   interpolation=interpolation, keep_aspect_ratio=crop)  # fmt: skip
        return image_utils.img_to_array(img, data_format="channels_last", dtype="float32")

    def images(idx: np.ndarray) -> np.ndarray:
        return np.stack([load(j) for j in idx.reshape(-1)]).reshape(idx.shape + (height, width, -1))

    return indexed_files_dataset(len(paths), images, labels, num_classes, label_mode,
                                 batch_size, shuffle, seed)  # fmt: skip


def image_dataset_from_directory(directory: str | os.PathLike, labels: Any = "inferred",
                                 label_mode: Any = "int", class_names: Any = None,
                                 color_mode: str = "rgb", batch_size: int | None = 32,
                                 image_size: tuple[int, int] = (256, 256), shuffle: bool = True,
                                 seed: int | None = None, validation_split: float | None = None,
                                 subset: str | None = None, interpolation: str = "bilinear",
                                 follow_links: bool = False, crop_to_aspect_ratio: bool = False,
                                 **kwargs: Any) -> Any:  # fmt: skip
    """Images in `directory/<class>/...` as a dataset of `(images, labels)` batches.

    Images are float32 (batch, height, width, channels) with values 0-255, resized to
    `image_size` (Pillow's resampling); labels are int32 (`label_mode="int"`), one-hot float32
    ("categorical"), float32 (n, 1) ("binary"), or absent (None). The dataset's `class_names`
    lists the classes. `validation_split` with `subset` "training", "validation" or "both".

    >>> import layerflow as tf
    >>> ds = tf.keras.utils.image_dataset_from_directory(
    ...     "flowers/", image_size=(180, 180))  # doctest: +SKIP
    """
    if kwargs:
        raise TypeError(f"Unknown keywords argument(s): {tuple(kwargs)}")
    directory = os.fspath(directory)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    _check(labels, label_mode, color_mode, interpolation, validation_split, subset, shuffle, seed)
    if label_mode == "binary" and labels == "inferred" and class_names and len(class_names) != 2:
        raise ValueError(
            'When passing `label_mode="binary"`, there must be exactly 2 class_names. '
            f"Received: class_names={class_names}"
        )
    if seed is None:
        seed = int(np.random.randint(1e6))
    paths, all_labels, names = index_directory(directory, labels, class_names, shuffle, seed,
                                               follow_links)  # fmt: skip
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
            raise ValueError(
                f"No images found in directory {directory}. Allowed formats: {ALLOWED_FORMATS}"
            )
        ds = _dataset(p, lab, len(names), label_mode, color_mode, image_size, interpolation,
                      crop_to_aspect_ratio, batch_size, shuffle, seed)  # fmt: skip
        ds.class_names = names
        ds.file_paths = p
        out.append(ds)
    return out if subset == "both" else out[0]
