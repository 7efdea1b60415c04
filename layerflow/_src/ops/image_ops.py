"""`tf.image`: resize (every method, TF 2's half-pixel centres, antialias) and resize_with_pad.

Resizing is composed from gathers, multiplies and matmuls along each spatial axis (kernels in
`image_resize_ops`), so it is differentiable with respect to the image without a gradient of
its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.ops.array_ops import _shape_tuple
from layerflow._src.ops.image_resize_ops import resize_axis
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import _as_tensor, cast, multiply


class ResizeMethod:
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_METHODS = frozenset(v for k, v in vars(ResizeMethod).items() if k.isupper())


def _target_size(size: Any, in_h: int, in_w: int, preserve_aspect_ratio: bool) -> tuple:
    h, w = _shape_tuple(size, "resize", "size")
    if h <= 0 or w <= 0:
        raise ValueError(
            f"resize: size must be two positive ints (new_height, new_width), got {[h, w]}."
        )
    if preserve_aspect_ratio:
        # TF's arithmetic: float32 scale factors, round half to even.
        f = np.float32
        scale = min(f(h) / f(in_h), f(w) / f(in_w))
        h, w = int(np.round(scale * f(in_h))), int(np.round(scale * f(in_w)))
    return h, w


def resize(images: Any, size: Any, method: str = "bilinear", preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: str | None = None) -> Any:  # fmt: skip
    """Resize images [N, H, W, C] or [H, W, C] to `size` = (height, width), as TF 2's
    `tf.image.resize`: half-pixel centres, every `ResizeMethod`, `antialias` (a kernel widened
    by the downscale factor; bilinear and bicubic then use TF's triangle and Keys-cubic
    `scale_and_translate` kernels; nearest and area ignore it).

    Returns float32, except `nearest`, which keeps the input dtype (TF's rule). Gradients flow
    to the image for every method.

    >>> import layerflow as tf
    >>> tf.image.resize(tf.ones((1, 2, 2, 1)), (4, 4)).shape
    TensorShape([1, 4, 4, 1])
    >>> tf.image.resize(tf.ones((5, 10, 1)), (8, 8), preserve_aspect_ratio=True).shape
    TensorShape([4, 8, 1])
    """
    x = _as_tensor(images)
    rank = x._data.ndim
    if rank not in (3, 4):
        raise ValueError(f"resize: images must be [N, H, W, C] or [H, W, C], got shape {x.shape}.")
    method = getattr(method, "value", method)
    method = str(method).lower()
    if method not in _METHODS:
        raise ValueError(
            f"resize: unknown method {method!r}; expected one of {sorted(_METHODS)} "
            "(or a tf.image.ResizeMethod)."
        )
    in_h, in_w = int(x._data.shape[-3]), int(x._data.shape[-2])
    if in_h <= 0 or in_w <= 0:
        raise ValueError(f"resize: images must have a non-zero height and width, got {x.shape}.")
    h, w = _target_size(size, in_h, in_w, preserve_aspect_ratio)
    if method != "nearest" and x._data.dtype != np.float32:
        x = cast(x, "float32")
    out = resize_axis(x, rank - 3, h, method, bool(antialias))
    return resize_axis(out, rank - 2, w, method, bool(antialias))


def resize_with_pad(image: Any, target_height: int, target_width: int, method: str = "bilinear",
                    antialias: bool = False) -> Any:  # fmt: skip
    """Resize keeping the aspect ratio, then pad with zeros (centred) to the target size.

    >>> import layerflow as tf
    >>> tf.image.resize_with_pad(tf.ones((2, 4, 1)), 4, 4)[:, 0, 0].numpy()
    array([0., 1., 1., 0.], dtype=float32)
    """
    x = _as_tensor(image)
    rank = x._data.ndim
    if rank not in (3, 4):
        raise ValueError(f"resize_with_pad: image must be rank 3 or 4, got shape {x.shape}.")
    th, tw = int(target_height), int(target_width)
    if th <= 0 or tw <= 0:
        raise ValueError(f"resize_with_pad: target size must be positive, got {th}x{tw}.")
    in_h, in_w = x._data.shape[-3], x._data.shape[-2]
    # TF's arithmetic, in float32: the offsets come from the unrounded resized size.
    f = np.float32
    ratio = max(f(in_w) / f(tw), f(in_h) / f(th))
    rh_f, rw_f = f(in_h) / ratio, f(in_w) / ratio
    rh, rw = int(np.floor(rh_f)), int(np.floor(rw_f))
    top = max(int(np.floor((f(th) - rh_f) / 2)), 0)
    left = max(int(np.floor((f(tw) - rw_f) / 2)), 0)
    out = resize(x, (rh, rw), method=method, antialias=antialias)
    spatial = [[top, th - rh - top], [left, tw - rw - left], [0, 0]]
    return pad(out, ([[0, 0]] if rank == 4 else []) + spatial)


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Any:  # fmt: skip
    """Convert between integer images (0..MAX of the dtype) and float images (0..1), as TF.

    Integer to integer rescales by a power of two; `saturate=True` clamps before casting where
    the value could overflow (float to int, or a narrowing cast).

    >>> import layerflow as tf
    >>> tf.image.convert_image_dtype(tf.constant([0, 255], tf.uint8), tf.float32).numpy()
    array([0., 1.], dtype=float32)
    >>> tf.image.convert_image_dtype(tf.constant([1.5, 0.5]), tf.uint8, saturate=True).numpy()
    array([255, 127], dtype=uint8)
    """
    from layerflow._src.framework import dtypes
    from layerflow._src.ops.elementwise_more_ops import saturate_cast
    from layerflow._src.ops.math_ops import floordiv

    x = _as_tensor(image)
    src, dst = x.dtype, dtypes.as_dtype(dtype)
    if not (dst.is_floating or dst.is_integer):
        raise AttributeError(f"dtype must be either floating point or integer, got {dst.name}.")
    if not (src.is_floating or src.is_integer):
        raise AttributeError(
            f"image dtype must be either floating point or integer, got {src.name}; cast a "
            "boolean image to uint8 first."
        )
    if src == dst:
        return x
    to = saturate_cast if saturate else cast
    if src.is_integer and dst.is_integer:
        if src.max > dst.max:  # scale down first, then cast: in.max maps below out.max + 1
            return to(floordiv(x, (src.max + 1) // (dst.max + 1)), dst)
        return multiply(to(x, dst), (dst.max + 1) // (src.max + 1))
    if src.is_floating and dst.is_floating:
        return cast(x, dst)
    if src.is_integer:
        if dst.name in ("float16", "bfloat16") and src.max > 65504:
            # TF casts first and gets inf * 0 = NaN; scale in float32, then narrow.
            return cast(multiply(cast(x, "float32"), 1.0 / src.max), dst)
        return multiply(cast(x, dst), 1.0 / src.max)
    # + 0.5 so that 1.0 reaches dst.max. Out-of-range values clamp even without `saturate`, as
    # TF's CPU cast does for them (NumPy's cast would wrap around).
    return saturate_cast(multiply(x, dst.max + 0.5), dst)
