"""`tf.image`: resize (bilinear, nearest; TF 2's half-pixel centres) and resize_with_pad.

Resizing is composed from gathers and multiplies along each spatial axis, so it is
differentiable with respect to the image without a gradient of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import _shape_tuple
from layerflow._src.ops.gather_ops import _gather
from layerflow._src.ops.image_resize_ops import resize_axis_by_matrix
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import _as_tensor, add, cast, multiply


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


def _resize_axis(x: Any, axis: int, out_size: int, method: str) -> Any:
    n = x._data.shape[axis]
    if n == out_size:
        return x
    scale = n / out_size
    xp = x._device.xp
    dst = np.arange(out_size, dtype=np.float64)
    if method == "nearest":
        idx = np.minimum(np.floor((dst + 0.5) * scale), n - 1).astype(np.int64)
        return _gather(x, Tensor(xp.asarray(idx), x._device), axis)
    src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
    hi = np.minimum(lo + 1, n - 1)
    frac = (src - lo).astype(x._data.dtype)
    shape = [1] * x._data.ndim
    shape[axis] = out_size
    w = Tensor(xp.asarray(frac.reshape(shape)), x._device)
    w0 = Tensor(xp.asarray((1 - frac).reshape(shape)), x._device)
    a = _gather(x, Tensor(xp.asarray(lo), x._device), axis)
    b = _gather(x, Tensor(xp.asarray(hi), x._device), axis)
    return add(multiply(a, w0), multiply(b, w))


def resize(images: Any, size: Any, method: str = "bilinear", preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: str | None = None) -> Any:  # fmt: skip
    """Resize images [N, H, W, C] or [H, W, C] to `size` = (height, width).

    Bilinear returns float32; nearest keeps the input dtype (TF's rule).

    >>> import layerflow as tf
    >>> tf.image.resize(tf.ones((1, 2, 2, 1)), (4, 4)).shape
    TensorShape([1, 4, 4, 1])
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
    if antialias:
        raise NotImplementedError("resize: antialias=True is not supported yet.")
    h, w = _shape_tuple(size, "resize", "size")
    if h <= 0 or w <= 0:
        raise ValueError(f"resize: size must be two positive ints, got {list(size)}.")
    in_h, in_w = x._data.shape[-3], x._data.shape[-2]
    if preserve_aspect_ratio:
        scale = min(h / in_h, w / in_w)
        h, w = max(int(round(in_h * scale)), 1), max(int(round(in_w * scale)), 1)
    if method == "bilinear" and x._data.dtype != np.float32:
        x = cast(x, "float32")
    if method in ("bilinear", "nearest"):
        out = _resize_axis(x, rank - 3, h, method)
        return _resize_axis(out, rank - 2, w, method)
    if x._data.dtype not in (np.float32, np.float64):
        x = cast(x, "float32")
    out = resize_axis_by_matrix(x, rank - 3, h, method)
    out = resize_axis_by_matrix(out, rank - 2, w, method)
    return cast(out, "float32") if out._data.dtype != np.float32 else out


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
