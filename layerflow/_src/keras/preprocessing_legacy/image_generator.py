"""`tf.keras.preprocessing.image.ImageDataGenerator`, as tf_keras 2.x: random augmentation
parameters drawn from NumPy's global generator in tf_keras's order (so `seed=` reproduces its
augmentations), per-sample and dataset-wide standardization (`fit`), and `flow` /
`flow_from_directory` iterators that `model.fit` trains on."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.preprocessing_legacy import image_transforms as T
from layerflow._src.keras.preprocessing_legacy.image_iterators import (
    DirectoryIterator,
    NumpyArrayIterator,
)


def _not_fit(option: str) -> None:
    warnings.warn(
        f"This ImageDataGenerator specifies `{option}`, but it hasn't been fit on any training "
        "data. Fit it first by calling `.fit(numpy_data)`.",
        stacklevel=3,
    )


class ImageDataGenerator:
    """Real-time image augmentation and standardization.

    >>> import numpy as np
    >>> gen = ImageDataGenerator(rescale=1 / 255, horizontal_flip=True)
    >>> x, y = next(iter(gen.flow(np.full((4, 8, 8, 3), 255.0), np.arange(4), batch_size=2)))
    >>> x.shape, float(x.max())
    ((2, 8, 8, 3), 1.0)
    """

    def __init__(
        self,
        featurewise_center: bool = False,
        samplewise_center: bool = False,
        featurewise_std_normalization: bool = False,
        samplewise_std_normalization: bool = False,
        zca_whitening: bool = False,
        zca_epsilon: float = 1e-6,
        rotation_range: float = 0,
        width_shift_range: Any = 0.0,
        height_shift_range: Any = 0.0,
        brightness_range: Any = None,
        shear_range: float = 0.0,
        zoom_range: Any = 0.0,
        channel_shift_range: float = 0.0,
        fill_mode: str = "nearest",
        cval: float = 0.0,
        horizontal_flip: bool = False,
        vertical_flip: bool = False,
        rescale: float | None = None,
        preprocessing_function: Callable | None = None,
        data_format: str | None = None,
        validation_split: float = 0.0,
        interpolation_order: int = 1,
        dtype: Any = None,
    ) -> None:
        data_format = data_format or backend_config.image_data_format()
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.shear_range = shear_range
        self.channel_shift_range = channel_shift_range
        if fill_mode not in T.FILL_MODES:
            raise ValueError(
                f"ImageDataGenerator: fill_mode must be one of {T.FILL_MODES}, got {fill_mode!r}."
            )
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.dtype = dtype or backend_config.floatx()
        self.interpolation_order = interpolation_order
        if data_format not in {"channels_last", "channels_first"}:
            raise ValueError(
                '`data_format` should be `"channels_last"` (channel after row and column) or '
                f'`"channels_first"` (channel before row and column). Received: {data_format}'
            )
        self.data_format = data_format
        if data_format == "channels_first":
            self.channel_axis, self.row_axis, self.col_axis = 1, 2, 3
        else:
            self.channel_axis, self.row_axis, self.col_axis = 3, 1, 2
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(
                f"`validation_split` must be strictly between 0 and 1. Received: {validation_split}"
            )
        self._validation_split = validation_split
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        self.zca_whitening_matrix: np.ndarray | None = None
        if isinstance(zoom_range, (float, int)):
            self.zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
            self.zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(
                "`zoom_range` should be a float or a tuple or list of two floats. "
                f"Received: {zoom_range}"
            )
        if zca_whitening:
            if not featurewise_center:
                self.featurewise_center = True
                warnings.warn(
                    "This ImageDataGenerator specifies `zca_whitening`, which overrides "
                    "setting of `featurewise_center`.",
                    stacklevel=2,
                )
            if featurewise_std_normalization:
                self.featurewise_std_normalization = False
                warnings.warn(
                    "This ImageDataGenerator specifies `zca_whitening` which overrides "
                    "setting of `featurewise_std_normalization`.",
                    stacklevel=2,
                )
        if featurewise_std_normalization and not featurewise_center:
            self.featurewise_center = True
            warnings.warn(
                "This ImageDataGenerator specifies `featurewise_std_normalization`, "
                "which overrides setting of `featurewise_center`.",
                stacklevel=2,
            )
        if samplewise_std_normalization and not samplewise_center:
            self.samplewise_center = True
            warnings.warn(
                "This ImageDataGenerator specifies `samplewise_std_normalization`, "
                "which overrides setting of `samplewise_center`.",
                stacklevel=2,
            )
        if brightness_range is not None and (
            not isinstance(brightness_range, (tuple, list)) or len(brightness_range) != 2
        ):
            raise ValueError(
                "`brightness_range should be tuple or list of two floats. "
                f"Received: {brightness_range}"
            )
        self.brightness_range = brightness_range

    def flow(
        self,
        x: Any,
        y: Any = None,
        batch_size: int = 32,
        shuffle: bool = True,
        sample_weight: Any = None,
        seed: int | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        ignore_class_split: bool = False,
        subset: str | None = None,
    ) -> NumpyArrayIterator:
        """Batches of augmented `x` (rank 4) with `y` and `sample_weight` when given."""
        return NumpyArrayIterator(
            x,
            y,
            self,
            batch_size=batch_size,
            shuffle=shuffle,
            sample_weight=sample_weight,
            seed=seed,
            data_format=self.data_format,
            save_to_dir=save_to_dir,
            save_prefix=save_prefix,
            save_format=save_format,
            ignore_class_split=ignore_class_split,
            subset=subset,
            dtype=self.dtype,
        )

    def flow_from_directory(
        self,
        directory: str,
        target_size: tuple = (256, 256),
        color_mode: str = "rgb",
        classes: Any = None,
        class_mode: str | None = "categorical",
        batch_size: int = 32,
        shuffle: bool = True,
        seed: int | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        follow_links: bool = False,
        subset: str | None = None,
        interpolation: str = "nearest",
        keep_aspect_ratio: bool = False,
    ) -> DirectoryIterator:
        """Batches of augmented images read from `directory/<class_name>/*.png|jpg|...`."""
        return DirectoryIterator(
            directory,
            self,
            target_size=target_size,
            color_mode=color_mode,
            keep_aspect_ratio=keep_aspect_ratio,
            classes=classes,
            class_mode=class_mode,
            data_format=self.data_format,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            save_to_dir=save_to_dir,
            save_prefix=save_prefix,
            save_format=save_format,
            follow_links=follow_links,
            subset=subset,
            interpolation=interpolation,
            dtype=self.dtype,
        )

    def standardize(self, x: np.ndarray) -> np.ndarray:
        """Apply `preprocessing_function`, `rescale`, then the sample-wise and (fitted)
        feature-wise normalizations, to one image, in place when it is a float array."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center:
            if self.mean is not None:
                x -= self.mean
            else:
                _not_fit("featurewise_center")
        if self.featurewise_std_normalization:
            if self.std is not None:
                x /= self.std + 1e-6
            else:
                _not_fit("featurewise_std_normalization")
        if self.zca_whitening:
            if self.zca_whitening_matrix is not None:
                flat_x = x.reshape(-1, np.prod(x.shape[-3:]))
                x = np.reshape(flat_x @ self.zca_whitening_matrix, x.shape)
            else:
                _not_fit("zca_whitening")
        return x

    def _shift(self, shift_range: Any, size: int) -> float:
        try:  # a 1-D array-like or an int: pick one value and a sign
            t = np.random.choice(shift_range)
            t *= np.random.choice([-1, 1])
        except ValueError:  # a float
            t = np.random.uniform(-shift_range, shift_range)
        if np.max(shift_range) < 1:
            t *= size
        return t

    def get_random_transform(self, img_shape: tuple, seed: int | None = None) -> dict[str, Any]:
        """Draw the parameters of one random transformation for an image of `img_shape`."""
        if seed is not None:
            np.random.seed(seed)
        theta = (
            np.random.uniform(-self.rotation_range, self.rotation_range)
            if (self.rotation_range)
            else 0
        )
        tx = (
            self._shift(self.height_shift_range, img_shape[self.row_axis - 1])
            if (self.height_shift_range)
            else 0
        )
        ty = (
            self._shift(self.width_shift_range, img_shape[self.col_axis - 1])
            if (self.width_shift_range)
            else 0
        )
        shear = np.random.uniform(-self.shear_range, self.shear_range) if self.shear_range else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_horizontal = (np.random.random() < 0.5) * self.horizontal_flip
        flip_vertical = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift_intensity = None
        if self.channel_shift_range != 0:
            channel_shift_intensity = np.random.uniform(
                -self.channel_shift_range, self.channel_shift_range
            )
        brightness = None
        if self.brightness_range is not None:
            brightness = np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {
            "theta": theta,
            "tx": tx,
            "ty": ty,
            "shear": shear,
            "zx": zx,
            "zy": zy,
            "flip_horizontal": flip_horizontal,
            "flip_vertical": flip_vertical,
            "channel_shift_intensity": channel_shift_intensity,
            "brightness": brightness,
        }

    def apply_transform(self, x: np.ndarray, transform_parameters: dict[str, Any]) -> np.ndarray:
        """Apply the parameters of `get_random_transform` to one rank-3 image."""
        row, col, channel = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        p = transform_parameters
        x = T.apply_affine_transform(
            x,
            p.get("theta", 0),
            p.get("tx", 0),
            p.get("ty", 0),
            p.get("shear", 0),
            p.get("zx", 1),
            p.get("zy", 1),
            row_axis=row,
            col_axis=col,
            channel_axis=channel,
            fill_mode=self.fill_mode,
            cval=self.cval,
            order=self.interpolation_order,
        )
        if p.get("channel_shift_intensity") is not None:
            x = T.apply_channel_shift(x, p["channel_shift_intensity"], channel)
        if p.get("flip_horizontal", False):
            x = T.flip_axis(x, col)
        if p.get("flip_vertical", False):
            x = T.flip_axis(x, row)
        if p.get("brightness") is not None:
            x = T.apply_brightness_shift(x, p["brightness"], False)
        return x

    def random_transform(self, x: np.ndarray, seed: int | None = None) -> np.ndarray:
        """One randomly augmented copy of a rank-3 image."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x: Any, augment: bool = False, rounds: int = 1, seed: int | None = None) -> None:
        """Compute the feature-wise mean, std and ZCA matrix that `standardize` uses, from
        sample images `x` (rank 4), optionally augmented `rounds` times first."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(
                f"Input to `.fit()` should have rank 4. Got array with shape: {x.shape}"
            )
        if x.shape[self.channel_axis] not in {1, 3, 4}:
            warnings.warn(
                f"Expected input to be images (as Numpy array) following the data format "
                f'convention "{self.data_format}" (channels on axis {self.channel_axis}), i.e. '
                f"expected either 1, 3 or 4 channels on axis {self.channel_axis}. However, it was "
                f"passed an array with shape {x.shape} ({x.shape[self.channel_axis]} channels).",
                stacklevel=2,
            )
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            ax = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    ax[i + r * x.shape[0]] = self.random_transform(x[i])
            x = ax
        broadcast_shape = [1, 1, 1]
        broadcast_shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.reshape(
                np.mean(x, axis=(0, self.row_axis, self.col_axis)), broadcast_shape
            )
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(
                np.std(x, axis=(0, self.row_axis, self.col_axis)), broadcast_shape
            )
            x /= self.std + 1e-6
        if self.zca_whitening:
            n = len(x)
            flat_x = np.reshape(x, (n, -1))
            u, s, _ = np.linalg.svd(flat_x.T, full_matrices=False)
            s_inv = np.sqrt(n) / (s + self.zca_epsilon)
            self.zca_whitening_matrix = (u * s_inv).dot(u.T)
