"""Projective image transforms as TF's `ImageProjectiveTransformV3` (the kernel behind
`tf.raw_ops.ImageProjectiveTransformV3` and Keras's random rotation/zoom/translation):
fill modes reflect / wrap / constant / nearest, interpolation nearest / bilinear.

Source coordinates are computed on the host; sampling is composed from a gather and
multiplies, so the output is differentiable with respect to the images.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import concat, reshape
from layerflow._src.ops.gather_ops import _gather
from layerflow._src.ops.math_ops import _as_tensor, add, cast, multiply

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")


def _map_coord(c: np.ndarray, n: int, mode: str) -> np.ndarray:
    c = c.astype(np.float32)
    if mode == "constant":
        return c
    if mode == "nearest" or n <= 1:
        return np.clip(c, 0, max(n - 1, 0)) if n > 1 else np.zeros_like(c)
    if mode == "reflect":
        sz2 = np.float32(2 * n)
        lo = c < 0
        cl = np.where(c < -sz2, sz2 * np.trunc(-c / sz2) + c, c)
        cl = np.where(cl < -n, cl + sz2, -cl - 1)
        hi = c > n - 1
        ch = c - sz2 * np.trunc(c / sz2)
        ch = np.where(ch >= n, sz2 - ch - 1, ch)
        out = np.where(lo, cl, np.where(hi, ch, c))
    else:  # wrap
        sz = np.float32(n - 1)
        lo = c < 0
        cl = c + n * (np.trunc(-c / sz) + 1)
        hi = c > n - 1
        ch = c - n * np.trunc(c / sz)
        out = np.where(lo, cl, np.where(hi, ch, c))
    return np.clip(out, 0, n - 1).astype(np.float32)


def transform(images: Any, transforms: Any, interpolation: str = "bilinear",
              fill_mode: str = "constant", fill_value: float = 0.0) -> Any:  # fmt: skip
    """Apply per-image projective `transforms` ([N, 8] or [1, 8]: a0 a1 a2 b0 b1 b2 c0 c1, mapping
    output (x, y) to input ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1)
    to `images` [N, H, W, C].

    >>> import layerflow as tf
    >>> from layerflow._src.ops.image_transform_ops import transform
    >>> img = tf.reshape(tf.range(4.0), (1, 2, 2, 1))
    >>> transform(img, [[1, 0, -1, 0, 1, 0, 0, 0]], fill_mode="nearest")[0, :, :, 0].numpy()
    array([[0., 0.],
           [2., 2.]], dtype=float32)
    """
    x = _as_tensor(images)
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"transform: interpolation must be one of {INTERPOLATIONS}, got "
                         f"{interpolation!r}.")  # fmt: skip
    if fill_mode not in FILL_MODES:
        raise ValueError(f"transform: fill_mode must be one of {FILL_MODES}, got {fill_mode!r}.")
    if x._data.ndim != 4:
        raise ValueError(f"transform: images must be [N, H, W, C], got shape {list(x.shape)}.")
    n, h, w, c = (int(d) for d in x._data.shape)
    t = np.asarray(transforms.numpy() if hasattr(transforms, "numpy") else transforms, np.float32)
    t = np.broadcast_to(t.reshape(-1, 8), (n, 8))
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32),
                         indexing="ij")  # fmt: skip
    k = t[:, 6, None, None] * xs + t[:, 7, None, None] * ys + 1
    in_x = (t[:, 0, None, None] * xs + t[:, 1, None, None] * ys + t[:, 2, None, None]) / k
    in_y = (t[:, 3, None, None] * xs + t[:, 4, None, None] * ys + t[:, 5, None, None]) / k
    in_x = _map_coord(in_x, w, fill_mode)
    in_y = _map_coord(in_y, h, fill_mode)
    batch = np.arange(n)[:, None, None]
    fill_row = n * h * w  # index of the appended fill_value row

    def index(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        inside = (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
        yi = np.clip(yy, 0, h - 1).astype(np.int64)
        xi = np.clip(xx, 0, w - 1).astype(np.int64)
        return np.where(inside, batch * h * w + yi * w + xi, fill_row).reshape(-1)

    flat = reshape(x, [n * h * w, c])
    fill = Tensor(x._device.xp.full((1, c), fill_value, dtype=x._data.dtype), x._device)
    table = concat([flat, fill], 0)
    xp = x._device.xp

    def gather(idx: np.ndarray) -> Any:
        return _gather(table, Tensor(xp.asarray(idx), x._device), 0)

    if interpolation == "nearest":
        # std::round: halves away from zero.
        ry = np.sign(in_y) * np.floor(np.abs(in_y) + 0.5)
        rx = np.sign(in_x) * np.floor(np.abs(in_x) + 0.5)
        return reshape(gather(index(ry, rx)), [n, h, w, c])
    y0, x0 = np.floor(in_y), np.floor(in_x)
    y1, x1 = y0 + 1, x0 + 1
    dt = x._data.dtype

    def wt(a: np.ndarray) -> Any:
        return Tensor(xp.asarray(a.reshape(-1, 1).astype(dt)), x._device)

    top = add(multiply(gather(index(y0, x0)), wt(x1 - in_x)),
              multiply(gather(index(y0, x1)), wt(in_x - x0)))  # fmt: skip
    bottom = add(multiply(gather(index(y1, x0)), wt(x1 - in_x)),
                 multiply(gather(index(y1, x1)), wt(in_x - x0)))  # fmt: skip
    out = add(multiply(top, wt(y1 - in_y)), multiply(bottom, wt(in_y - y0)))
    return cast(reshape(out, [n, h, w, c]), x.dtype)
