"""`tf.image` colour adjustments and colour spaces, as TF's kernels compute them.

Every function is composed from layerflow ops, so gradients reach the image (and the
adjustment's factor) wherever the maths has one. Integer images are converted to float32 in
[0, 1] first and back (saturating where TF saturates). One decision differs from TF: a float64
image is computed in float64, where TF rounds it through float32; the results agree to float32
precision, and float64 gradients stay accurate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.framework.convert import is_symbolic_value
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.array_ops import expand_dims, stack, unstack
from layerflow._src.ops.compare_ops import equal, greater, less
from layerflow._src.ops.elementwise_ops import clip_by_value, floor, rsqrt
from layerflow._src.ops.image_geometry_ops import image_tensor
from layerflow._src.ops.image_ops import convert_image_dtype
from layerflow._src.ops.linalg_ops import tensordot
from layerflow._src.ops.manip_ops import tile
from layerflow._src.ops.math_ops import (
    _as_tensor,
    abs,  # noqa: A004 - TF's name
    add,
    cast,
    floormod,
    maximum,
    multiply,
    pow,  # noqa: A004 - TF's name
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    subtract,
    truediv,
    where,
)
from layerflow._src.ops.reduce_ops import reduce_std

_KEEP = ("float16", "bfloat16", "float32", "float64")


def _float_image(image: Any) -> tuple[Any, Any]:
    """(the image as floats, its original dtype): float images as they are, integer images
    scaled to float32 in [0, 1]."""
    x = _as_tensor(image)
    if x.dtype.name in _KEEP:
        return x, x.dtype
    return convert_image_dtype(x, "float32"), x.dtype


def _scalar(value: Any, like: Any) -> Any:
    if isinstance(value, TensorLike) or is_symbolic_value(value):
        return cast(value, like.dtype)
    return _as_tensor(np.asarray(value, dtype=like.dtype.np))  # a Python number, unrounded


def _concrete(value: Any) -> float | None:
    """A Python float for a number or an eager tensor; None inside a trace."""
    if is_symbolic_value(value):
        return None
    if isinstance(value, TensorLike):
        value = backend.to_host(value._data)
    return float(np.asarray(value))


def _at_least(x: Any, rank: int, opname: str) -> None:
    if x.shape.rank is not None and x.shape.rank < rank:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: input must be at least {rank}-D, got shape {x.shape}."
        )


def _three_channels(x: Any, opname: str, rank: int = 3) -> None:
    _at_least(x, rank, opname)
    if x.shape[-1] is not None and x.shape[-1] != 3:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: input must have 3 channels (RGB) but instead has "
            f"{x.shape[-1]} channels (shape {x.shape}).",  # fmt: skip
        )


# --- brightness, contrast, gamma ----------------------------------------------------------------


def adjust_brightness(image: Any, delta: Any) -> Any:
    """Add `delta` to every pixel (of the image in float form; integer images saturate).

    >>> import layerflow as tf
    >>> tf.image.adjust_brightness([[[0.25, 0.5, 1.0]]], 0.25).numpy()
    array([[[0.5 , 0.75, 1.25]]], dtype=float32)
    """
    flt, orig = _float_image(image)
    return convert_image_dtype(add(flt, _scalar(delta, flt)), orig, saturate=True)


def adjust_contrast(images: Any, contrast_factor: Any) -> Any:
    """Scale each channel's distance from its mean over height and width by `contrast_factor`.

    >>> import layerflow as tf
    >>> tf.image.adjust_contrast([[[1.0], [3.0]]], 2.0)[0, :, 0].numpy()
    array([0., 4.], dtype=float32)
    """
    flt, orig = _float_image(images)
    _at_least(flt, 3, "adjust_contrast")
    mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
    out = add(multiply(subtract(flt, mean), _scalar(contrast_factor, flt)), mean)
    return convert_image_dtype(out, orig, saturate=True)


def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> Any:
    """`gain * image ** gamma` (on the image in float form).

    >>> import layerflow as tf
    >>> tf.image.adjust_gamma([[[0.25]]], gamma=0.5, gain=2.0).numpy()
    array([[[1.]]], dtype=float32)
    """
    flt, orig = _float_image(image)
    g = _concrete(gamma)
    if g is not None and g < 0:
        raise ValueError(f"adjust_gamma: Gamma should be a non-negative real number, got {g}.")
    out = multiply(_scalar(gain, flt), pow(flt, _scalar(gamma, flt)))
    return convert_image_dtype(out, orig, saturate=True)


# --- colour spaces --------------------------------------------------------------------------------


def _hsv_parts(x: Any) -> tuple[Any, Any, Any]:
    """TF's RGBToHSV: hue in [0, 1), saturation, value."""
    r, g, b = unstack(x, axis=-1)
    v = reduce_max(x, axis=-1)
    spread = subtract(v, reduce_min(x, axis=-1))
    zero = cast(0, x.dtype)
    s = where(greater(v, zero), truediv(spread, where(greater(v, zero), v, 1.0)), zero)
    positive = greater(spread, zero)
    norm = truediv(1.0 / 6.0, where(positive, spread, 1.0))
    h = where(
        equal(r, v),
        multiply(norm, subtract(g, b)),
        where(
            equal(g, v),
            add(multiply(norm, subtract(b, r)), 2.0 / 6.0),
            add(multiply(norm, subtract(r, g)), 4.0 / 6.0),
        ),
    )
    h = where(positive, h, zero)
    return where(less(h, zero), add(h, 1.0), h), s, v


def _rgb_from_hsv(h: Any, s: Any, v: Any) -> Any:
    """TF's HSVToRGB (piecewise-linear ramps in 6 * hue)."""
    dh = multiply(h, 6.0)
    dr = clip_by_value(subtract(abs(subtract(dh, 3.0)), 1.0), 0.0, 1.0)
    dg = clip_by_value(subtract(2.0, abs(subtract(dh, 2.0))), 0.0, 1.0)
    db = clip_by_value(subtract(2.0, abs(subtract(dh, 4.0))), 0.0, 1.0)
    one_s = subtract(1.0, s)
    return stack([multiply(add(one_s, multiply(s, d)), v) for d in (dr, dg, db)], axis=-1)


def _float_only(images: Any, opname: str) -> Any:
    x = _as_tensor(images)
    if x.dtype.is_integer:
        x = cast(x, "float32")  # TF's wrapper converts integer values as numbers, unscaled
    elif not x.dtype.is_floating:
        raise TypeError(f"{opname}: images must be a float tensor, got {x.dtype.name}.")
    _three_channels(x, opname, 1)
    return x


def rgb_to_hsv(images: Any, name: str | None = None) -> Any:
    """RGB (floats in [0, 1]) to HSV, each channel in [0, 1].

    >>> import layerflow as tf
    >>> tf.image.rgb_to_hsv([[[0.0, 0.5, 1.0]]]).numpy().round(4)
    array([[[0.5833, 1.    , 1.    ]]], dtype=float32)
    """
    return stack(list(_hsv_parts(_float_only(images, "rgb_to_hsv"))), axis=-1)


def hsv_to_rgb(images: Any, name: str | None = None) -> Any:
    """HSV (each channel in [0, 1]) to RGB.

    >>> import layerflow as tf
    >>> tf.image.hsv_to_rgb([[[0.5833333, 1.0, 1.0]]]).numpy().round(4)
    array([[[0. , 0.5, 1. ]]], dtype=float32)
    """
    h, s, v = unstack(_float_only(images, "hsv_to_rgb"), axis=-1)
    return _rgb_from_hsv(h, s, v)


def adjust_saturation(image: Any, saturation_factor: Any, name: str | None = None) -> Any:
    """Multiply the HSV saturation by `saturation_factor` (clipped to [0, 1]).

    >>> import layerflow as tf
    >>> tf.image.adjust_saturation([[[1.0, 2.0, 3.0]]], 0.5).numpy().round(4)
    array([[[2. , 2.5, 3. ]]], dtype=float32)
    """
    flt, orig = _float_image(image)
    _three_channels(flt, "adjust_saturation")
    h, s, v = _hsv_parts(flt)
    s = clip_by_value(multiply(s, _scalar(saturation_factor, flt)), 0.0, 1.0)
    return convert_image_dtype(_rgb_from_hsv(h, s, v), orig)


def adjust_hue(image: Any, delta: Any, name: str | None = None) -> Any:
    """Rotate the hue by `delta` (a fraction of a full turn, in [-1, 1]).

    >>> import layerflow as tf
    >>> tf.image.adjust_hue([[[1.0, 2.0, 3.0]]], 0.2).numpy().round(4)
    array([[[2.4, 1. , 3. ]]], dtype=float32)
    """
    d = _concrete(delta)
    if d is not None and not -1 <= d <= 1:
        raise ValueError(f"adjust_hue: delta must be in the interval [-1, 1], got {d}.")
    flt, orig = _float_image(image)
    _three_channels(flt, "adjust_hue")
    # TF's AdjustHue: hue in [0, 6) between the smallest and largest channel, which keep their
    # values; the middle channel moves along the ramp.
    r, g, b = unstack(flt, axis=-1)
    v_max = reduce_max(flt, axis=-1)
    v_min = reduce_min(flt, axis=-1)
    v_mid = subtract(subtract(reduce_sum(flt, axis=-1), v_max), v_min)
    category = where(
        less(r, g),
        where(less(b, r), 1.0, where(greater(b, g), 3.0, 2.0)),
        where(less(b, g), 0.0, where(greater(b, r), 4.0, 5.0)),
    )
    spread = subtract(v_max, v_min)
    flat = equal(spread, 0.0)
    ratio = truediv(subtract(v_mid, v_min), where(flat, 1.0, spread))
    even = equal(floormod(category, 2.0), 0.0)
    h = where(flat, 0.0, add(cast(category, flt.dtype), where(even, ratio, subtract(1.0, ratio))))
    h = floormod(add(h, multiply(_scalar(delta, flt), 6.0)), 6.0)
    cat = floor(h)
    frac = subtract(h, cat)
    frac = where(equal(floormod(cat, 2.0), 0.0), frac, subtract(1.0, frac))
    mid = add(v_min, multiply(frac, spread))

    def pick(maxes: tuple[float, ...], mids: tuple[float, ...]) -> Any:
        is_max = _any_equal(cat, maxes)
        return where(is_max, v_max, where(_any_equal(cat, mids), mid, v_min))

    out = stack([pick((0, 5), (1, 4)), pick((1, 2), (0, 3)), pick((3, 4), (2, 5))], axis=-1)
    return convert_image_dtype(out, orig)


def _any_equal(x: Any, values: tuple[float, ...]) -> Any:
    a, b = values
    return where(equal(x, float(a)), True, equal(x, float(b)))


_GRAY = [0.2989, 0.587, 0.114]
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]  # fmt: skip
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]  # fmt: skip
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]  # fmt: skip
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def rgb_to_grayscale(images: Any, name: str | None = None) -> Any:
    """Luma (0.2989 R + 0.587 G + 0.114 B) as a last dimension of size 1, in the input's dtype.

    >>> import layerflow as tf
    >>> tf.image.rgb_to_grayscale([[[1.0, 2.0, 3.0]]]).numpy().round(4)
    array([[[1.8149]]], dtype=float32)
    """
    flt, orig = _float_image(images)
    if flt.dtype.name != "float64":
        flt = convert_image_dtype(flt, "float32")
    _three_channels(flt, "rgb_to_grayscale", 1)
    gray = tensordot(flt, np.asarray(_GRAY, dtype=flt.dtype.np), [[flt.shape.rank - 1], [0]])
    return convert_image_dtype(expand_dims(gray, -1), orig)


def grayscale_to_rgb(images: Any, name: str | None = None) -> Any:
    """Repeat the single channel three times.

    >>> import layerflow as tf
    >>> tf.image.grayscale_to_rgb([[[1.0], [2.0]]]).shape
    TensorShape([1, 2, 3])
    """
    x = _as_tensor(images)
    if x.shape.rank is not None and x.shape.rank < 2:
        raise ValueError(
            f"grayscale_to_rgb: A grayscale image (shape {x.shape}) must be at least "
            "two-dimensional."
        )
    if x.shape[-1] is not None and x.shape[-1] != 1:
        raise ValueError(
            f"grayscale_to_rgb: Last dimension of a grayscale image should be size 1, got shape "
            f"{x.shape}."
        )
    return tile(x, [1] * (x.shape.rank - 1) + [3])


def _convert(images: Any, kernel: list, opname: str) -> Any:
    x = _as_tensor(images)
    if not x.dtype.is_floating:
        raise TypeError(
            f"{opname}: images must be a float tensor, got {x.dtype.name}; convert it with "
            "tf.image.convert_image_dtype first."
        )
    _three_channels(x, opname, 1)
    return tensordot(x, np.asarray(kernel, dtype=x.dtype.np), [[x.shape.rank - 1], [0]])


def rgb_to_yiq(images: Any) -> Any:
    """RGB to YIQ (NTSC): Y in [0, 1], I in [-0.5957, 0.5957], Q in [-0.5226, 0.5226]."""
    return _convert(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images: Any) -> Any:
    """YIQ to RGB (the inverse of `rgb_to_yiq`)."""
    return _convert(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images: Any) -> Any:
    """RGB to YUV: Y in [0, 1], U and V in [-0.5, 0.5]."""
    return _convert(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images: Any) -> Any:
    """YUV to RGB (the inverse of `rgb_to_yuv`)."""
    return _convert(images, _YUV_TO_RGB, "yuv_to_rgb")


def per_image_standardization(image: Any) -> Any:
    """`(x - mean) / max(stddev, 1 / sqrt(N))` per image (N = height * width * channels), in
    float32 as TF.

    >>> import layerflow as tf
    >>> tf.image.per_image_standardization([[[1.0], [3.0]]])[0, :, 0].numpy()
    array([-1.,  1.], dtype=float32)
    """
    x = image_tensor(image, "per_image_standardization", ranks=tuple(range(3, 33)))
    x = cast(x, "float32")
    n = int(np.prod(x.shape.as_list()[-3:]))
    mean = reduce_mean(x, axis=[-1, -2, -3], keepdims=True)
    std = reduce_std(x, axis=[-1, -2, -3], keepdims=True)
    floor_std = rsqrt(cast(n, "float32"))
    return truediv(subtract(x, mean), maximum(std, floor_std))
