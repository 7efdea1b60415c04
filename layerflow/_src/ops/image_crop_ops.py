"""`tf.image` cropping and padding: crop/pad to a bounding box, resize_with_crop_or_pad,
central_crop, crop_and_resize (TF's `CropAndResize` with its gradients to the image and the
boxes), extract_patches and extract_glimpse.

Everything is composed from slices, pads, gathers and elementwise ops, so gradients come from
composition. crop_and_resize computes its sampling positions from the boxes with layerflow
ops, so the gradient to the boxes is the one TF's `CropAndResizeGradBoxes` computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops.array_ops import expand_dims, squeeze, stack, stop_gradient
from layerflow._src.ops.gather_ops import _gather
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import (
    _as_tensor,
    add,
    cast,
    multiply,
    reshape,
    subtract,
    where,
)
from layerflow._src.ops.pool_extra_ops import _taps

__all__ = [
    "central_crop",
    "crop_and_resize",
    "crop_to_bounding_box",
    "extract_glimpse",
    "extract_patches",
    "pad_to_bounding_box",
    "resize_with_crop_or_pad",
]


def _as_batch(image: Any, opname: str) -> tuple:
    x = _as_tensor(image)
    if x._data.ndim == 3:
        return expand_dims(x, 0), False
    if x._data.ndim != 4:
        raise ValueError(
            f"{opname}: 'image' (shape {list(x.shape)}) must have either 3 or 4 dimensions."
        )
    return x, True


def _unbatch(x: Any, is_batch: bool) -> Any:
    return x if is_batch else squeeze(x, [0])


def _int(value: Any, what: str, opname: str) -> int:
    v = value.numpy() if hasattr(value, "numpy") else value
    if np.ndim(v) != 0 or not float(v).is_integer():
        raise TypeError(f"{opname}: {what} must be an int, got {value!r}.")
    return int(v)


def pad_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                        target_width: int) -> Any:  # fmt: skip
    """Pad `image` with zeros to `target_height` x `target_width`, the image's top-left corner
    at (`offset_height`, `offset_width`).

    >>> import layerflow as tf
    >>> tf.image.pad_to_bounding_box(tf.ones((1, 1, 1)), 1, 0, 3, 2)[:, :, 0].numpy()
    array([[0., 0.],
           [1., 0.],
           [0., 0.]], dtype=float32)
    """
    op = "pad_to_bounding_box"
    x, is_batch = _as_batch(image, op)
    oh, ow = _int(offset_height, "offset_height", op), _int(offset_width, "offset_width", op)
    th, tw = _int(target_height, "target_height", op), _int(target_width, "target_width", op)
    h, w = int(x._data.shape[1]), int(x._data.shape[2])
    problems = []
    if oh < 0:
        problems.append(f"offset_height must be >= 0, got {oh}")
    if ow < 0:
        problems.append(f"offset_width must be >= 0, got {ow}")
    if th - oh - h < 0:
        problems.append(f"height must be <= target - offset ({h} > {th} - {oh})")
    if tw - ow - w < 0:
        problems.append(f"width must be <= target - offset ({w} > {tw} - {ow})")
    if problems:
        raise ValueError(f"{op}: " + "; ".join(problems) + ".")
    out = pad(x, [[0, 0], [oh, th - oh - h], [ow, tw - ow - w], [0, 0]])
    return _unbatch(out, is_batch)


def crop_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                         target_width: int) -> Any:  # fmt: skip
    """The `target_height` x `target_width` window of `image` whose top-left corner is at
    (`offset_height`, `offset_width`).

    >>> import layerflow as tf
    >>> img = tf.reshape(tf.range(9.0), (3, 3, 1))
    >>> tf.image.crop_to_bounding_box(img, 1, 1, 2, 2)[:, :, 0].numpy()
    array([[4., 5.],
           [7., 8.]], dtype=float32)
    """
    op = "crop_to_bounding_box"
    x, is_batch = _as_batch(image, op)
    oh, ow = _int(offset_height, "offset_height", op), _int(offset_width, "offset_width", op)
    th, tw = _int(target_height, "target_height", op), _int(target_width, "target_width", op)
    h, w = int(x._data.shape[1]), int(x._data.shape[2])
    problems = []
    if ow < 0:
        problems.append(f"offset_width must be >= 0, got {ow}")
    if oh < 0:
        problems.append(f"offset_height must be >= 0, got {oh}")
    if tw <= 0:
        problems.append(f"target_width must be > 0, got {tw}")
    if th <= 0:
        problems.append(f"target_height must be > 0, got {th}")
    if w < tw + ow:
        problems.append(f"width must be >= target + offset ({w} < {tw} + {ow})")
    if h < th + oh:
        problems.append(f"height must be >= target + offset ({h} < {th} + {oh})")
    if problems:
        raise ValueError(f"{op}: " + "; ".join(problems) + ".")
    return _unbatch(x[:, oh : oh + th, ow : ow + tw, :], is_batch)


def resize_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> Any:
    """Centrally crop or zero-pad `image` (each axis on its own) to the target size.

    >>> import layerflow as tf
    >>> tf.image.resize_with_crop_or_pad(tf.ones((4, 2, 1)), 2, 4)[:, :, 0].numpy()
    array([[0., 1., 1., 0.],
           [0., 1., 1., 0.]], dtype=float32)
    """
    op = "resize_with_crop_or_pad"
    x, is_batch = _as_batch(image, op)
    th, tw = _int(target_height, "target_height", op), _int(target_width, "target_width", op)
    if th <= 0 or tw <= 0:
        raise ValueError(f"{op}: target_height and target_width must be > 0, got {th}x{tw}.")
    h, w = int(x._data.shape[1]), int(x._data.shape[2])
    crop_h, crop_w = max((h - th) // 2, 0), max((w - tw) // 2, 0)
    pad_h, pad_w = max((th - h) // 2, 0), max((tw - w) // 2, 0)
    cropped = crop_to_bounding_box(x, crop_h, crop_w, min(th, h), min(tw, w))
    return _unbatch(pad_to_bounding_box(cropped, pad_h, pad_w, th, tw), is_batch)


def central_crop(image: Any, central_fraction: float) -> Any:
    """The central `central_fraction` of `image` along height and width (TF's rounding).

    >>> import layerflow as tf
    >>> tf.image.central_crop(tf.ones((8, 6, 3)), 0.5).shape
    TensorShape([4, 4, 3])
    """
    x = _as_tensor(image)
    frac = float(
        central_fraction.numpy() if hasattr(central_fraction, "numpy") else central_fraction
    )
    if frac <= 0.0 or frac > 1.0:
        raise ValueError(f"central_crop: central_fraction must be within (0, 1], got {frac}.")
    if frac == 1.0:
        return x
    rank = x._data.ndim
    if rank not in (3, 4):
        raise ValueError(
            f"central_crop: `image` should either be a Tensor with rank = 3 or rank = 4. "
            f"Had rank = {rank}."
        )
    h, w = int(x._data.shape[-3]), int(x._data.shape[-2])
    top, left = int((h - h * frac) / 2), int((w - w * frac) / 2)
    key = (slice(top, h - top), slice(left, w - left), slice(None))
    return x[key] if rank == 3 else x[(slice(None), *key)]


def _box_positions(c1: Any, c2: Any, n: int, crop: int) -> Any:
    """TF's sampling positions along one axis: [num_boxes, crop] (float32, from the boxes)."""
    if crop > 1:
        step = multiply(subtract(c2, c1), np.float32((n - 1) / (crop - 1)))
        grid = Tensor(c1._device.xp.arange(crop, dtype=np.float32)[None, :], c1._device)
        return add(multiply(c1, np.float32(n - 1)), multiply(grid, step))
    return multiply(add(c1, c2), np.float32(0.5 * (n - 1)))


def _bilinear_crops(flat: Any, base: Any, in_y: Any, in_x: Any, w: int) -> Any:
    xp, dev = flat._device.xp, flat._device
    y0, x0 = xp.floor(in_y._data), xp.floor(in_x._data)
    y1, x1 = xp.ceil(in_y._data), xp.ceil(in_x._data)
    ly = expand_dims(expand_dims(subtract(in_y, Tensor(y0, dev)), 2), 3)  # [nb, ch, 1, 1]
    lx = expand_dims(expand_dims(subtract(in_x, Tensor(x0, dev)), 1), 3)  # [nb, 1, cw, 1]

    def at(yy: Any, xx: Any) -> Any:
        idx = base + yy.astype(np.int64)[:, :, None] * w + xx.astype(np.int64)[:, None, :]
        return _gather(flat, Tensor(idx, dev), 0)

    top_l, top_r = at(y0, x0), at(y0, x1)
    bot_l, bot_r = at(y1, x0), at(y1, x1)
    top = add(top_l, multiply(subtract(top_r, top_l), lx))
    bottom = add(bot_l, multiply(subtract(bot_r, bot_l), lx))
    return add(top, multiply(subtract(bottom, top), ly))


def crop_and_resize(image: Any, boxes: Any, box_indices: Any, crop_size: Any,
                    method: str = "bilinear", extrapolation_value: float = 0.0,
                    name: str | None = None) -> Any:  # fmt: skip
    """Crop `boxes` (normalized [y1, x1, y2, x2], rows of `box_indices`' images) out of
    `image` [N, H, W, C] and resize each to `crop_size` (bilinear or nearest, corners aligned
    to the box edges); samples outside the image are `extrapolation_value`. Returns float32
    [num_boxes, crop_height, crop_width, C]. Gradients flow to a float image and to the boxes
    (the latter with TF's bilinear formula, for both methods, as TF's `CropAndResizeGradBoxes`).

    >>> import layerflow as tf
    >>> img = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> tf.image.crop_and_resize(img, [[0.0, 0.0, 1.0, 1.0]], [0], (2, 2))[0, :, :, 0].numpy()
    array([[ 0.,  3.],
           [12., 15.]], dtype=float32)
    """
    op = "crop_and_resize"
    x = _as_tensor(image)
    if x._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: input image must be 4-D, got shape {list(x.shape)}."
        )
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"{op}: method must be 'bilinear' or 'nearest', got {method!r}.")
    n, h, w, c = (int(d) for d in x._data.shape)
    if h <= 0 or w <= 0:
        raise errors.InvalidArgumentError(None, op, f"{op}: image dimensions must be positive.")
    b = cast(_as_tensor(boxes), "float32")
    if b._data.ndim != 2 or int(b._data.shape[1]) != 4:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: boxes must be [num_boxes, 4], got shape {list(b.shape)}."
        )
    nb = int(b._data.shape[0])
    bi = np.asarray(box_indices.numpy() if hasattr(box_indices, "numpy") else box_indices)
    if bi.shape != (nb,):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: box_indices must be [num_boxes] = [{nb}], got shape {bi.shape}."
        )
    if nb and (bi.min() < 0 or bi.max() >= n):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: box_index has values outside [0, batch_size) = [0, {n}): {bi}."
        )
    cs = np.asarray(crop_size.numpy() if hasattr(crop_size, "numpy") else crop_size)
    if cs.shape != (2,) or cs.dtype.kind not in "iu" or (cs <= 0).any():
        raise errors.InvalidArgumentError(
            None, op, f"{op}: crop_size must be two positive ints [crop_height, crop_width], "
            f"got {crop_size!r}.",
        )  # fmt: skip
    ch, cw = int(cs[0]), int(cs[1])
    if not np.all(np.isfinite(b.numpy())):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: Boxes contains at least one element that is not finite."
        )
    if x._data.dtype != np.float32:
        x = cast(x, "float32")
    xp, dev = x._device.xp, x._device
    flat = reshape(x, [n * h * w, c])
    in_y = _box_positions(b[:, 0:1], b[:, 2:3], h, ch)
    in_x = _box_positions(b[:, 1:2], b[:, 3:4], w, cw)
    oky = (in_y._data >= 0) & (in_y._data <= h - 1)
    okx = (in_x._data >= 0) & (in_x._data <= w - 1)
    inside = Tensor(xp.broadcast_to((oky[:, :, None] & okx[:, None, :])[..., None],
                                    (nb, ch, cw, c)), dev)  # fmt: skip
    # Clamp positions outside the image so the gathers stay in range; those samples are
    # replaced by extrapolation_value (and get no gradient) below.
    if not oky.all():
        in_y = where(Tensor(oky, dev), in_y, Tensor(xp.clip(in_y._data, 0, h - 1), dev))
    if not okx.all():
        in_x = where(Tensor(okx, dev), in_x, Tensor(xp.clip(in_x._data, 0, w - 1), dev))
    base = xp.asarray(bi.astype(np.int64) * h * w)[:, None, None]
    crops = _bilinear_crops(flat, base, in_y, in_x, w)
    if method == "nearest":
        # TF's boxes gradient is the bilinear one for both methods: add it without changing
        # the value or the image gradient.
        box_path = _bilinear_crops(stop_gradient(flat), base, in_y, in_x, w)
        ry = xp.floor(in_y._data + 0.5).astype(np.int64)
        rx = xp.floor(in_x._data + 0.5).astype(np.int64)
        near = _gather(flat, Tensor(base + ry[:, :, None] * w + rx[:, None, :], dev), 0)
        crops = add(near, subtract(box_path, stop_gradient(box_path)))
    fill = Tensor(xp.full((nb, ch, cw, c), extrapolation_value, np.float32), dev)
    return where(inside, crops, fill)


def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: str,
                    name: str | None = None) -> Any:  # fmt: skip
    """Patches of `images` [N, H, W, C] as [N, OH, OW, KH * KW * C] (values in (kh, kw, c)
    order), windows `sizes` apart by `strides`, taps `rates` apart; SAME pads with zeros.

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> tf.image.extract_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID")[0, 0]
    <tf.Tensor: shape=(2, 4), dtype=float32, numpy=
    array([[0., 1., 4., 5.],
           [2., 3., 6., 7.]], dtype=float32)>
    """
    op = "extract_patches"
    x = _as_tensor(images)
    if x._data.ndim != 4:
        raise ValueError(f"{op}: images must be [N, H, W, C], got shape {list(x.shape)}.")
    k = _k.ints(sizes, 2, "sizes", op)
    s = _k.ints(strides, 2, "strides", op)
    r = _k.ints(rates, 2, "rates", op)
    pad_s = str(padding).upper()
    if pad_s not in ("SAME", "VALID"):
        raise ValueError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}.")
    views, outs, _ = _taps(x, k, s, r, pad_s, 0.0, op)
    y = stack(views, axis=3)  # [N, OH, OW, taps, C]
    return reshape(y, (int(x._data.shape[0]), *outs, -1))


def extract_glimpse(input: Any, size: Any, offsets: Any, centered: bool = True,  # noqa: A002
                    normalized: bool = True, noise: str = "uniform",
                    name: str | None = None) -> Any:  # fmt: skip
    """Windows of `size` (height, width) out of `input` [N, H, W, C] at `offsets` ([N, 2]:
    y, x of each window's centre; with `centered` relative to the image centre, with
    `normalized` in units of half the image (centered) or of the image). Parts outside the
    image are filled with `noise`: 'zero', or 'uniform' / 'gaussian' noise shaped by the image
    (TF's rule; the draws are layerflow's own, not TF's).

    >>> import layerflow as tf
    >>> img = tf.reshape(tf.range(25.0), (1, 5, 5, 1))
    >>> tf.image.extract_glimpse(img, [3, 3], [[0.0, 0.0]], noise="zero")[0, :, :, 0].numpy()
    array([[ 6.,  7.,  8.],
           [11., 12., 13.],
           [16., 17., 18.]], dtype=float32)
    """
    op = "extract_glimpse"
    x = _as_tensor(input)
    if x._data.ndim != 4:
        raise ValueError(f"{op}: input must be [N, H, W, C], got shape {list(x.shape)}.")
    if noise not in ("uniform", "gaussian", "zero", ""):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: noise must be 'uniform', 'gaussian' or 'zero', got {noise!r}."
        )
    n, h, w, c = (int(d) for d in x._data.shape)
    gh, gw = _k.ints(size, 2, "size", op)
    offs = np.asarray(offsets.numpy() if hasattr(offsets, "numpy") else offsets, np.float32)
    if offs.shape != (n, 2):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: offsets must be [batch_size, 2] = [{n}, 2], got {offs.shape}."
        )
    f = np.float32
    oy, ox = offs[:, 0].copy(), offs[:, 1].copy()
    if normalized:
        oy, ox = oy * f(h), ox * f(w)
        if centered:
            oy = oy / f(2) + f(h) / f(2) - f(gh) / f(2)
            ox = ox / f(2) + f(w) / f(2) - f(gw) / f(2)
    elif centered:
        oy, ox = oy + f(h) / f(2), ox + f(w) / f(2)
    sy = np.trunc(oy).astype(np.int64)[:, None] + np.arange(gh)  # [n, gh]
    sx = np.trunc(ox).astype(np.int64)[:, None] + np.arange(gw)  # [n, gw]
    ok = ((sy >= 0) & (sy < h))[:, :, None] & ((sx >= 0) & (sx < w))[:, None, :]
    idx = (np.arange(n)[:, None, None] * h + np.clip(sy, 0, h - 1)[:, :, None]) * w
    idx = idx + np.clip(sx, 0, w - 1)[:, None, :]
    xp, dev = x._device.xp, x._device
    vals = _gather(reshape(x, [n * h * w, c]), Tensor(xp.asarray(idx), dev), 0)
    if ok.all():
        return vals
    fill = _glimpse_fill(x, (n, gh, gw, c), noise)
    mask = Tensor(xp.asarray(np.broadcast_to(ok[..., None], (n, gh, gw, c))), dev)
    return where(mask, vals, Tensor(xp.asarray(fill), dev))


def _glimpse_fill(x: Any, shape: tuple, noise: str) -> np.ndarray:
    arr = np.asarray(x.numpy(), np.float64)
    if noise in ("zero", ""):
        return np.zeros(shape, x._data.dtype)
    rng = np.random.default_rng()
    lo = arr.min(axis=(1, 2, 3), keepdims=True)
    hi = arr.max(axis=(1, 2, 3), keepdims=True)
    if noise == "uniform":
        return (lo + rng.random(shape) * (hi - lo)).astype(x._data.dtype)
    mean = arr.mean(axis=(1, 2), keepdims=True)
    sigma = arr.std(axis=(1, 2), keepdims=True)
    lo_c, hi_c = arr.min(axis=(1, 2), keepdims=True), arr.max(axis=(1, 2), keepdims=True)
    draw = mean + rng.standard_normal(shape) * sigma
    return np.clip(draw, lo_c, hi_c).astype(x._data.dtype)
