"""Array-level image augmentation of `tf.keras.preprocessing.image`, as tf_keras 2.x.

`apply_affine_transform` (and the `random_*` helpers built on it) resample with
`scipy.ndimage.affine_transform`, so SciPy is needed for them (the `special` extra); brightness goes
through Pillow's `ImageEnhance` (the `image` extra). Both are imported on first use.
The random helpers draw from NumPy's global generator, like tf_keras's, so `np.random.seed`
reproduces tf_keras's draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.keras.utils import image_utils

FILL_MODES = ("constant", "nearest", "reflect", "wrap")


def _ndimage() -> Any:
    try:
        from scipy import ndimage
    except ImportError:
        raise ImportError(
            "Image transformations (apply_affine_transform, random_rotation/shift/shear/zoom, "
            "ImageDataGenerator's geometric augmentation) require SciPy. Install it: "
            "pip install scipy (or pip install 'layerflow[special]')."
        ) from None
    return ndimage


def _image_enhance() -> Any:
    image_utils.pil_image()  # the shared "install Pillow" error
    from PIL import ImageEnhance

    return ImageEnhance


def transform_matrix_offset_center(matrix: np.ndarray, x: float, y: float) -> np.ndarray:
    """Conjugate `matrix` by a shift to the image centre, so it acts around the centre."""
    o_x = float(x) / 2 - 0.5
    o_y = float(y) / 2 - 0.5
    offset_matrix = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset_matrix = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return np.dot(np.dot(offset_matrix, matrix), reset_matrix)


def apply_affine_transform(
    x: Any,
    theta: float = 0,
    tx: float = 0,
    ty: float = 0,
    shear: float = 0,
    zx: float = 1,
    zy: float = 1,
    row_axis: int = 1,
    col_axis: int = 2,
    channel_axis: int = 0,
    fill_mode: str = "nearest",
    cval: float = 0.0,
    order: int = 1,
) -> np.ndarray:
    """Rotate by `theta` degrees, shift by `tx` rows and `ty` columns, shear by `shear` degrees and
    zoom by `zx`, `zy` (a zoom > 1 shows less of the image), all about the image centre, on a
    rank-3 image. Points outside are filled by `fill_mode` ("constant" with `cval`, "nearest",
    "reflect", "wrap"); `order` is the spline order of the interpolation.

    >>> import numpy as np
    >>> x = np.arange(9.0).reshape(1, 3, 3)
    >>> np.round(apply_affine_transform(x, theta=90)[0], 6) + 0.0
    array([[2., 5., 8.],
           [1., 4., 7.],
           [0., 3., 6.]])
    """
    x = np.asarray(x)
    if np.unique([row_axis, col_axis, channel_axis]).size != 3:
        raise ValueError(
            "apply_affine_transform: 'row_axis', 'col_axis', and 'channel_axis' must be distinct, "
            f"got {row_axis}, {col_axis}, {channel_axis}."
        )
    actual = {row_axis, col_axis, channel_axis}
    if actual != {0, 1, 2}:
        raise ValueError(f"apply_affine_transform: invalid axis indices {actual - {0, 1, 2}}.")
    if x.ndim != 3:
        raise ValueError(
            "apply_affine_transform expects a rank-3 (multi-channel 2D) image, got shape "
            f"{x.shape}."
        )
    if channel_axis not in (0, 2):
        raise ValueError("apply_affine_transform: channels must be the first or the last axis.")
    if fill_mode not in FILL_MODES:
        raise ValueError(
            f"apply_affine_transform: fill_mode must be one of {FILL_MODES}, got {fill_mode!r}."
        )
    transform_matrix = None
    if theta != 0:
        theta = np.deg2rad(theta)
        transform_matrix = np.array(
            [[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0], [0, 0, 1]]
        )
    for needed, matrix in (
        (tx != 0 or ty != 0, lambda: np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]])),
        (
            shear != 0,
            lambda: np.array(
                [[1, -np.sin(np.deg2rad(shear)), 0], [0, np.cos(np.deg2rad(shear)), 0], [0, 0, 1]]
            ),
        ),
        (zx != 1 or zy != 1, lambda: np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])),
    ):
        if needed:
            m = matrix()
            transform_matrix = m if transform_matrix is None else np.dot(transform_matrix, m)
    if transform_matrix is None:
        return x
    ndimage = _ndimage()
    h, w = x.shape[row_axis], x.shape[col_axis]
    transform_matrix = transform_matrix_offset_center(transform_matrix, h, w)
    x = np.rollaxis(x, channel_axis, 0)
    # Trap kept from tf_keras: the matrix is in (row, col) order, and with channels first the
    # spatial axes of each channel image are (row, col) too, yet tf_keras swaps whenever
    # col_axis > row_axis. Reproduced so augmented images match tf_keras's bit for bit.
    if col_axis > row_axis:
        transform_matrix[:, [0, 1]] = transform_matrix[:, [1, 0]]
        transform_matrix[[0, 1]] = transform_matrix[[1, 0]]
    final_affine_matrix = transform_matrix[:2, :2]
    final_offset = transform_matrix[:2, 2]
    channel_images = [
        ndimage.affine_transform(
            x_channel, final_affine_matrix, final_offset, order=order, mode=fill_mode, cval=cval
        )
        for x_channel in x
    ]
    x = np.stack(channel_images, axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


def random_rotation(
    x: Any,
    rg: float,
    row_axis: int = 1,
    col_axis: int = 2,
    channel_axis: int = 0,
    fill_mode: str = "nearest",
    cval: float = 0.0,
    interpolation_order: int = 1,
) -> np.ndarray:
    """Rotate by an angle drawn uniformly from `[-rg, rg]` degrees (channels-first default axes)."""
    theta = np.random.uniform(-rg, rg)
    return apply_affine_transform(
        x,
        theta=theta,
        row_axis=row_axis,
        col_axis=col_axis,
        channel_axis=channel_axis,
        fill_mode=fill_mode,
        cval=cval,
        order=interpolation_order,
    )


def random_shift(
    x: Any,
    wrg: float,
    hrg: float,
    row_axis: int = 1,
    col_axis: int = 2,
    channel_axis: int = 0,
    fill_mode: str = "nearest",
    cval: float = 0.0,
    interpolation_order: int = 1,
) -> np.ndarray:
    """Shift by fractions drawn from `[-hrg, hrg]` of the height and `[-wrg, wrg]` of the width."""
    x = np.asarray(x)
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return apply_affine_transform(
        x,
        tx=tx,
        ty=ty,
        row_axis=row_axis,
        col_axis=col_axis,
        channel_axis=channel_axis,
        fill_mode=fill_mode,
        cval=cval,
        order=interpolation_order,
    )


def random_shear(
    x: Any,
    intensity: float,
    row_axis: int = 1,
    col_axis: int = 2,
    channel_axis: int = 0,
    fill_mode: str = "nearest",
    cval: float = 0.0,
    interpolation_order: int = 1,
) -> np.ndarray:
    """Shear by an angle drawn from `[-intensity, intensity]` degrees."""
    shear = np.random.uniform(-intensity, intensity)
    return apply_affine_transform(
        x,
        shear=shear,
        row_axis=row_axis,
        col_axis=col_axis,
        channel_axis=channel_axis,
        fill_mode=fill_mode,
        cval=cval,
        order=interpolation_order,
    )


def random_zoom(
    x: Any,
    zoom_range: Any,
    row_axis: int = 1,
    col_axis: int = 2,
    channel_axis: int = 0,
    fill_mode: str = "nearest",
    cval: float = 0.0,
    interpolation_order: int = 1,
) -> np.ndarray:
    """Zoom by `zx`, `zy` drawn independently from `zoom_range=(lower, upper)`."""
    if len(zoom_range) != 2:
        raise ValueError(
            f"`zoom_range` should be a tuple or list of two floats. Received: {zoom_range}"
        )
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        zx, zy = 1, 1
    else:
        zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return apply_affine_transform(
        x,
        zx=zx,
        zy=zy,
        row_axis=row_axis,
        col_axis=col_axis,
        channel_axis=channel_axis,
        fill_mode=fill_mode,
        cval=cval,
        order=interpolation_order,
    )


def apply_channel_shift(x: Any, intensity: float, channel_axis: int = 0) -> np.ndarray:
    """Add `intensity` to every channel, clipped to the image's own `[min, max]`.

    >>> apply_channel_shift(np.array([[[0.0, 10.0]]]), 4.0, channel_axis=2)
    array([[[ 4., 10.]]])
    """
    x = np.rollaxis(np.asarray(x), channel_axis, 0)
    min_x, max_x = np.min(x), np.max(x)
    x = np.stack([np.clip(c + intensity, min_x, max_x) for c in x], axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


def random_channel_shift(x: Any, intensity_range: float, channel_axis: int = 0) -> np.ndarray:
    """`apply_channel_shift` by an intensity drawn from `[-intensity_range, intensity_range]`."""
    intensity = np.random.uniform(-intensity_range, intensity_range)
    return apply_channel_shift(x, intensity, channel_axis=channel_axis)


def apply_brightness_shift(x: Any, brightness: float, scale: bool = True) -> np.ndarray:
    """Scale brightness by `brightness` with Pillow's `ImageEnhance.Brightness` on a
    channels-last image (values go through uint8, as in tf_keras). With `scale=False`, an image
    outside [0, 255] is mapped back to its original range."""
    image_enhance = _image_enhance()
    x = np.asarray(x)
    x_min, x_max = np.min(x), np.max(x)
    local_scale = (x_min < 0) or (x_max > 255)
    img = image_utils.array_to_img(x, scale=local_scale or scale)
    img = image_enhance.Brightness(img).enhance(brightness)
    x = image_utils.img_to_array(img)
    if not scale and local_scale:
        x = x / 255 * (x_max - x_min) + x_min
    return x


def random_brightness(x: Any, brightness_range: Any, scale: bool = True) -> np.ndarray:
    """`apply_brightness_shift` by a factor drawn from `brightness_range=(lower, upper)`."""
    if len(brightness_range) != 2:
        raise ValueError(
            f"`brightness_range should be tuple or list of two floats. Received: {brightness_range}"
        )
    u = np.random.uniform(brightness_range[0], brightness_range[1])
    return apply_brightness_shift(x, u, scale)


def flip_axis(x: np.ndarray, axis: int) -> np.ndarray:
    """Reverse `x` along `axis`."""
    x = np.asarray(x).swapaxes(axis, 0)
    return x[::-1, ...].swapaxes(0, axis)


def smart_resize(x: Any, size: Any, interpolation: str = "bilinear") -> np.ndarray:
    """`keras.preprocessing.image.smart_resize`: crop to the target aspect ratio, then resize;
    takes and returns NumPy arrays (rank 3 or 4, channels last)."""
    from layerflow._src.keras.layers.preprocessing import image_preprocessing

    return np.asarray(image_preprocessing.smart_resize(np.asarray(x), size, interpolation))
