"""`load_img`, `img_to_array`, `array_to_img`, `save_img` (Pillow, the `image` extra)."""

from __future__ import annotations

import io
import os
import pathlib
import warnings
from typing import Any

import numpy as np

from layerflow._src.keras.engine import backend_config

INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def pil_image() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(
            "Could not import PIL.Image. The use of `load_img` requires PIL. Install Pillow "
            "(pip install 'layerflow[image]' or pip install pillow)."
        ) from None
    return Image


def _resample(interpolation: str) -> Any:
    image = pil_image()
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"Invalid interpolation method {interpolation} specified. Supported methods are "
            f"{', '.join(INTERPOLATIONS)}"
        )
    return getattr(image.Resampling, interpolation.upper())


def _data_format(data_format: str | None) -> str:
    data_format = data_format or backend_config.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


def convert_mode(img: Any, color_mode: str) -> Any:
    if color_mode == "grayscale":
        return img if img.mode in ("L", "I;16", "I") else img.convert("L")
    if color_mode == "rgba":
        return img if img.mode == "RGBA" else img.convert("RGBA")
    if color_mode == "rgb":
        return img if img.mode == "RGB" else img.convert("RGB")
    raise ValueError(f'color_mode must be "grayscale", "rgb", or "rgba". Received: {color_mode!r}')


def load_img(path: Any, grayscale: bool = False, color_mode: str = "rgb",
             target_size: tuple[int, int] | None = None, interpolation: str = "nearest",
             keep_aspect_ratio: bool = False) -> Any:  # fmt: skip
    """Load an image file into a PIL image (`color_mode` "rgb", "rgba" or "grayscale"),
    resized to `target_size=(height, width)` when given (center-cropped to the target's aspect
    ratio first with `keep_aspect_ratio=True`).

    >>> import layerflow as tf
    >>> img = tf.keras.utils.load_img("cat.png", target_size=(64, 64))  # doctest: +SKIP
    """
    if grayscale:
        warnings.warn("grayscale is deprecated. Please use color_mode = 'grayscale'", stacklevel=2)
        color_mode = "grayscale"
    image = pil_image()
    if isinstance(path, io.BytesIO):
        img = image.open(path)
    elif isinstance(path, pathlib.Path | bytes | str):
        with open(os.fsdecode(path) if isinstance(path, bytes) else path, "rb") as f:
            img = image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    img = convert_mode(img, color_mode)
    if target_size is not None:
        size = (int(target_size[1]), int(target_size[0]))
        if img.size != size:
            resample = _resample(interpolation)
            if keep_aspect_ratio:
                width, height = img.size
                crop_height = min(height, (width * size[1]) // size[0])
                crop_width = min(width, (height * size[0]) // size[1])
                top, left = (height - crop_height) // 2, (width - crop_width) // 2
                box = (left, top, left + crop_width, top + crop_height)
                img = img.resize(size, resample, box=box)
            else:
                img = img.resize(size, resample)
    return img


def img_to_array(img: Any, data_format: str | None = None, dtype: Any = None) -> np.ndarray:
    """A PIL image as a 3-D array (height, width, channels), float32 by default.

    >>> import numpy as np, layerflow as tf
    >>> img = tf.keras.utils.array_to_img(np.zeros((2, 3, 3)))
    >>> tf.keras.utils.img_to_array(img).shape
    (2, 3, 3)
    """
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or backend_config.floatx())
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x[None] if data_format == "channels_first" else x[..., None]
    raise ValueError(f"Unsupported image shape: {x.shape}")


def array_to_img(x: Any, data_format: str | None = None, scale: bool = True,
                 dtype: Any = None) -> Any:  # fmt: skip
    """A 3-D array as a PIL image (1 channel: "L", or "I" above 255; 3: "RGB"; 4: "RGBA");
    `scale=True` maps the array's range onto 0-255."""
    data_format = _data_format(data_format)
    image = pil_image()
    if hasattr(x, "numpy"):
        x = x.numpy()
    x = np.asarray(x, dtype=dtype or backend_config.floatx())
    if x.ndim != 3:
        raise ValueError(
            f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}"
        )
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        peak = np.max(x)
        if peak != 0:
            x = x / peak
        x = x * 255
    channels = x.shape[2]
    if channels == 4:
        return image.fromarray(x.astype("uint8"))
    if channels == 3:
        return image.fromarray(x.astype("uint8"))
    if channels == 1:
        if np.max(x) > 255:
            return image.fromarray(x[:, :, 0].astype("int32"))
        return image.fromarray(x[:, :, 0].astype("uint8"))
    raise ValueError(f"Unsupported channel number: {channels}")


def save_img(path: Any, x: Any, data_format: str | None = None, file_format: str | None = None,
             scale: bool = True, **kwargs: Any) -> None:  # fmt: skip
    """Save a 3-D array as an image file (format from `file_format` or the file name)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format in ("jpg", "jpeg"):
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.",
                      stacklevel=2)  # fmt: skip
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)
