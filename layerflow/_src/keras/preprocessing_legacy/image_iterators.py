"""`Iterator`, `NumpyArrayIterator`, `DirectoryIterator` of `tf.keras.preprocessing.image`, as
tf_keras 2.x: `Sequence`s (so `model.fit(iterator)` reads them by index) that are also endless
Python iterators (`next(it)`), drawing augmentations from NumPy's global generator."""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any

import numpy as np

from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.utils import image_utils, io_utils
from layerflow._src.keras.utils.sequence import Sequence

WHITE_LIST_FORMATS = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")


class Iterator(Sequence):
    """Base of the image iterators: `n` samples in batches of `batch_size`, reshuffled each epoch
    when `shuffle`; with `seed`, batch `k` seeds NumPy with `seed + batches seen` (as tf_keras).
    Subclasses define `_get_batches_of_transformed_samples(index_array)`."""

    white_list_formats = WHITE_LIST_FORMATS

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: int | None) -> None:
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, (int, np.integer))
            or (batch_size < 1)
        ):
            raise ValueError(
                f"{type(self).__name__}: batch_size must be an int >= 1, got {batch_size!r}."
            )
        self.n = n
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array: np.ndarray | None = None
        self.index_generator = self._flow_index()

    def _set_index_array(self) -> None:
        self.index_array = np.arange(self.n)
        if self.shuffle:
            self.index_array = np.random.permutation(self.n)

    def __getitem__(self, idx: int) -> Any:
        if idx >= len(self):
            raise ValueError(
                f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}"
            )
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        index_array = self.index_array[self.batch_size * idx : self.batch_size * (idx + 1)]
        return self._get_batches_of_transformed_samples(index_array)

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self) -> None:
        self._set_index_array()

    def reset(self) -> None:
        self.batch_index = 0

    def _flow_index(self) -> Any:
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current_index = 0 if self.n == 0 else (self.batch_index * self.batch_size) % self.n
            if self.n > current_index + self.batch_size:
                self.batch_index += 1
            else:
                self.batch_index = 0
            self.total_batches_seen += 1
            yield self.index_array[current_index : current_index + self.batch_size]

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> Any:
        return self.next()

    def next(self) -> Any:
        """The next batch (endless: wraps around, reshuffling at each new pass)."""
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} must define _get_batches_of_transformed_samples."
        )


def _save_batch(
    batch_x: np.ndarray,
    index_array: Any,
    data_format: str,
    save_to_dir: str,
    prefix: str,
    file_format: str,
    hash_range: int,
) -> None:
    for i, j in enumerate(index_array):
        img = image_utils.array_to_img(batch_x[i], data_format, scale=True)
        fname = f"{prefix}_{j}_{np.random.randint(hash_range)}.{file_format}"
        img.save(os.path.join(save_to_dir, fname))


class NumpyArrayIterator(Iterator):
    """Batches of `(augmented x, y[, sample_weight])` from rank-4 image arrays in memory (what
    `ImageDataGenerator.flow` returns). `x` may be `(images, extra_array_or_list)`."""

    def __init__(
        self,
        x: Any,
        y: Any,
        image_data_generator: Any,
        batch_size: int = 32,
        shuffle: bool = False,
        sample_weight: Any = None,
        seed: int | None = None,
        data_format: str | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        subset: str | None = None,
        ignore_class_split: bool = False,
        dtype: Any = None,
    ) -> None:
        data_format = data_format or backend_config.image_data_format()
        self.dtype = dtype or backend_config.floatx()
        if isinstance(x, (tuple, list)):
            x_misc = (
                [np.asarray(x[1])]
                if not isinstance(x[1], list)
                else [np.asarray(xx) for xx in x[1]]
            )
            x = x[0]
            for xx in x_misc:
                if len(x) != len(xx):
                    raise ValueError(
                        "All of the arrays in `x` should have the same length. Found a pair "
                        f"with: len(x[0]) = {len(x)}, len(x[?]) = {len(xx)}"
                    )
        else:
            x_misc = []
        if y is not None and len(x) != len(y):
            raise ValueError(
                "`x` (images tensor) and `y` (labels) should have the same length. Found: "
                f"x.shape = {np.asarray(x).shape}, y.shape = {np.asarray(y).shape}"
            )
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError(
                "`x` (images tensor) and `sample_weight` should have the same length. Found: "
                f"x.shape = {np.asarray(x).shape}, "
                f"sample_weight.shape = {np.asarray(sample_weight).shape}"
            )
        if subset is not None:
            if subset not in {"training", "validation"}:
                raise ValueError(
                    f'Invalid subset name: {subset!r}; expected "training" or "validation".'
                )
            split_idx = int(len(x) * image_data_generator._validation_split)
            if (
                y is not None
                and not ignore_class_split
                and not np.array_equal(np.unique(y[:split_idx]), np.unique(y[split_idx:]))
            ):
                raise ValueError(
                    "Training and validation subsets have different number of classes after "
                    "the split. If your numpy arrays are sorted by the label, you might want to "
                    "shuffle them (or pass ignore_class_split=True)."
                )
            part = slice(None, split_idx) if subset == "validation" else slice(split_idx, None)
            x = x[part]
            x_misc = [np.asarray(xx[part]) for xx in x_misc]
            if y is not None:
                y = y[part]
            if sample_weight is not None:
                sample_weight = sample_weight[part]
        self.x = np.asarray(x, dtype=self.dtype)
        self.x_misc = x_misc
        if self.x.ndim != 4:
            raise ValueError(
                "Input data in `NumpyArrayIterator` should have rank 4 (batch, height, width, "
                f"channels). You passed an array with shape {self.x.shape}"
            )
        channels_axis = 3 if data_format == "channels_last" else 1
        if self.x.shape[channels_axis] not in {1, 3, 4}:
            warnings.warn(
                f'NumpyArrayIterator is set to use the data format convention "{data_format}" '
                f"(channels on axis {channels_axis}), i.e. expected either 1, 3, or 4 channels on "
                f"axis {channels_axis}. However, it was passed an array with shape "
                f"{self.x.shape} ({self.x.shape[channels_axis]} channels).",
                stacklevel=2,
            )
        self.y = np.asarray(y) if y is not None else None
        self.sample_weight = np.asarray(sample_weight) if sample_weight is not None else None
        self.image_data_generator = image_data_generator
        self.data_format = data_format
        self.save_to_dir = save_to_dir
        self.save_prefix = save_prefix
        self.save_format = save_format
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        batch_x = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        gen = self.image_data_generator
        for i, j in enumerate(index_array):
            x = self.x[j]
            params = gen.get_random_transform(x.shape)
            x = gen.apply_transform(x.astype(self.dtype), params)
            batch_x[i] = gen.standardize(x)
        if self.save_to_dir:
            _save_batch(
                batch_x,
                index_array,
                self.data_format,
                self.save_to_dir,
                self.save_prefix,
                self.save_format,
                10_000,
            )
        batch_x_miscs = [xx[index_array] for xx in self.x_misc]
        output: tuple = (batch_x if not batch_x_miscs else [batch_x] + batch_x_miscs,)
        if self.y is None:
            return output[0]
        output += (self.y[index_array],)
        if self.sample_weight is not None:
            output += (self.sample_weight[index_array],)
        return output


def _iter_valid_files(directory: str, white_list_formats: tuple, follow_links: bool) -> Any:
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda x: x[0]):
        for fname in sorted(files):
            if fname.lower().endswith(".tiff"):
                warnings.warn(
                    'Using ".tiff" files with multiple bands will cause distortion. Please '
                    "verify your output.",
                    stacklevel=2,
                )
            if fname.lower().endswith(white_list_formats):
                yield root, fname


def _list_valid_filenames(
    directory: str, white_list_formats: tuple, split: Any, class_indices: dict, follow_links: bool
) -> tuple[list, list]:
    dirname = os.path.basename(directory)
    valid_files: Any = _iter_valid_files(directory, white_list_formats, follow_links)
    if split:
        all_files = list(valid_files)
        start, stop = int(split[0] * len(all_files)), int(split[1] * len(all_files))
        valid_files = all_files[start:stop]
    classes, filenames = [], []
    for root, fname in valid_files:
        classes.append(class_indices[dirname])
        absolute_path = os.path.join(root, fname)
        filenames.append(os.path.join(dirname, os.path.relpath(absolute_path, directory)))
    return classes, filenames


class DirectoryIterator(Iterator):
    """Batches of images read from `directory/<class>/...` (what `flow_from_directory` returns);
    labels by `class_mode`: "categorical" (one-hot), "binary"/"sparse" (indices), "input"
    (the images themselves) or None (images only)."""

    allowed_class_modes = {"categorical", "binary", "sparse", "input", None}

    def __init__(
        self,
        directory: str,
        image_data_generator: Any,
        target_size: tuple = (256, 256),
        color_mode: str = "rgb",
        classes: Any = None,
        class_mode: str | None = "categorical",
        batch_size: int = 32,
        shuffle: bool = True,
        seed: int | None = None,
        data_format: str | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        follow_links: bool = False,
        subset: str | None = None,
        interpolation: str = "nearest",
        keep_aspect_ratio: bool = False,
        dtype: Any = None,
    ) -> None:
        data_format = data_format or backend_config.image_data_format()
        self.dtype = dtype or backend_config.floatx()
        self.image_data_generator = image_data_generator
        self.target_size = tuple(target_size)
        self.keep_aspect_ratio = keep_aspect_ratio
        if color_mode not in {"rgb", "rgba", "grayscale"}:
            raise ValueError(
                f'Invalid color mode: {color_mode!r}; expected "rgb", "rgba", or "grayscale".'
            )
        self.color_mode = color_mode
        self.data_format = data_format
        channels = {"rgba": 4, "rgb": 3, "grayscale": 1}[color_mode]
        self.image_shape = (
            self.target_size + (channels,)
            if data_format == "channels_last"
            else (channels,) + self.target_size
        )
        self.save_to_dir = save_to_dir
        self.save_prefix = save_prefix
        self.save_format = save_format
        self.interpolation = interpolation
        split = None
        if subset is not None:
            validation_split = image_data_generator._validation_split
            if subset == "validation":
                split = (0, validation_split)
            elif subset == "training":
                split = (validation_split, 1)
            else:
                raise ValueError(
                    f'Invalid subset name: {subset!r}; expected "training" or "validation"'
                )
        self.split = split
        self.subset = subset
        if class_mode not in self.allowed_class_modes:
            raise ValueError(
                f"Invalid class_mode: {class_mode!r}; expected one of: {self.allowed_class_modes}"
            )
        if not os.path.isdir(directory):
            raise FileNotFoundError(
                f"flow_from_directory: {directory!r} is not a directory; it should hold one "
                "subdirectory of images per class."
            )
        self.directory = directory
        self.class_mode = class_mode
        if not classes:
            classes = [
                s
                for s in sorted(os.listdir(directory))
                if os.path.isdir(os.path.join(directory, s))
            ]
        self.num_classes = len(classes)
        self.class_indices = dict(zip(classes, range(len(classes))))
        self.filenames: list[str] = []
        labels: list[int] = []
        for subdir in classes:
            c, f = _list_valid_filenames(
                os.path.join(directory, subdir),
                self.white_list_formats,
                self.split,
                self.class_indices,
                follow_links,
            )
            labels += c
            self.filenames += f
        self.samples = len(self.filenames)
        self.classes = np.asarray(labels, dtype="int32").reshape(self.samples)
        io_utils.print_msg(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        self._filepaths = [os.path.join(self.directory, fname) for fname in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    @property
    def filepaths(self) -> list[str]:
        return self._filepaths

    @property
    def labels(self) -> np.ndarray:
        return self.classes

    @property
    def sample_weight(self) -> None:
        return None

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
        gen = self.image_data_generator
        for i, j in enumerate(index_array):
            img = image_utils.load_img(
                self._filepaths[j],
                color_mode=self.color_mode,
                target_size=self.target_size,
                interpolation=self.interpolation,
                keep_aspect_ratio=self.keep_aspect_ratio,
            )
            x = image_utils.img_to_array(img, data_format=self.data_format)
            if hasattr(img, "close"):
                img.close()
            if gen:
                x = gen.standardize(gen.apply_transform(x, gen.get_random_transform(x.shape)))
            batch_x[i] = x
        if self.save_to_dir:
            _save_batch(
                batch_x,
                index_array,
                self.data_format,
                self.save_to_dir,
                self.save_prefix,
                self.save_format,
                10_000_000,
            )
        if self.class_mode == "input":
            batch_y = batch_x.copy()
        elif self.class_mode in {"binary", "sparse"}:
            batch_y = self.classes[index_array].astype(self.dtype)
        elif self.class_mode == "categorical":
            batch_y = np.zeros((len(batch_x), len(self.class_indices)), dtype=self.dtype)
            batch_y[np.arange(len(batch_x)), self.classes[index_array]] = 1.0
        else:
            return batch_x
        return batch_x, batch_y
