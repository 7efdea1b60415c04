"""`tf.image` metrics and filters: `psnr`, `ssim`, `ssim_multiscale`, `sobel_edges`,
`total_variation`, `image_gradients`, composed from layerflow ops exactly as TF composes them
(Gaussian window by softmax, depthwise convolutions, symmetric padding before each 2x2 average
pool), so values and gradients follow TF's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import concat, stack, zeros
from layerflow._src.ops.conv_ops import depthwise_conv2d
from layerflow._src.ops.image_ops import convert_image_dtype
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import (
    _as_tensor,
    abs,  # noqa: A004 - TF's name
    add,
    cast,
    divide,
    log,
    multiply,
    pow,  # noqa: A004 - TF's name
    reduce_mean,
    reduce_sum,
    relu,
    reshape,
    square,
    squared_difference,
    subtract,
)
from layerflow._src.ops.pool_ops import avg_pool
from layerflow._src.ops.reduce_ops import reduce_prod

__all__ = [
    "image_gradients",
    "psnr",
    "sobel_edges",
    "ssim",
    "ssim_multiscale",
    "total_variation",
]

_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def _pair_of_images(img1: Any, img2: Any, opname: str) -> tuple:
    a, b = _as_tensor(img1), _as_tensor(img2)
    s1, s2 = tuple(a.shape), tuple(b.shape)
    if len(s1) < 3 or len(s2) < 3 or s1[-3:] != s2[-3:]:
        raise ValueError(
            f"{opname}: the two images must have the same last three dimensions "
            f"[height, width, channels]; got shapes {list(s1)} and {list(s2)}."
        )
    for d1, d2 in zip(reversed(s1[:-3]), reversed(s2[:-3])):
        if d1 != d2 and 1 not in (d1, d2):
            raise ValueError(f"{opname}: two images are not compatible: {list(s1)} and {list(s2)}.")
    return a, b


def _max_val_and_floats(a: Any, b: Any, max_val: Any) -> tuple:
    """TF's rule: max_val is cast to the images' dtype, then everything to float32 [0, 1]-scale."""
    mv = convert_image_dtype(cast(_as_tensor(max_val), a.dtype), "float32")
    return mv, convert_image_dtype(a, "float32"), convert_image_dtype(b, "float32")


def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Any:
    """Peak signal-to-noise ratio between image batches `a` and `b` ([..., H, W, C]), in dB:
    20 log10(max_val) - 10 log10(MSE), one value per image.

    >>> import layerflow as tf
    >>> float(tf.image.psnr(tf.zeros((4, 4, 1)), tf.fill((4, 4, 1), 0.1), 1.0))
    20.0
    """
    a, b = _pair_of_images(a, b, "psnr")
    mv, a, b = _max_val_and_floats(a, b, max_val)
    mse = reduce_mean(squared_difference(a, b), [-3, -2, -1])
    return subtract(
        divide(multiply(log(mv), 20.0), np.log(np.float32(10.0))),
        multiply(log(mse), np.float32(10 / np.log(10))),
    )


def _gauss_window(size: int, sigma: float) -> np.ndarray:
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2.0)
    g = np.square(coords) * (np.float32(-0.5) / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = np.exp(g - g.max())
    return (g / g.sum(dtype=np.float32)).astype(np.float32).reshape(size, size, 1, 1)


def _ssim_per_channel(x: Any, y: Any, max_val: Any, filter_size: int, filter_sigma: float,
                      k1: float, k2: float, index_map: bool = False) -> tuple:  # fmt: skip
    for img in (x, y):
        h, w = int(img.shape[-3]), int(img.shape[-2])
        if h < filter_size or w < filter_size:
            raise errors.InvalidArgumentError(
                None, "ssim", f"ssim: images must be at least filter_size x filter_size "
                f"({filter_size}x{filter_size}), got shape {list(img.shape)}; use a smaller "
                "filter_size.",
            )  # fmt: skip
    c = int(x.shape[-1])
    window = np.tile(_gauss_window(filter_size, filter_sigma), (1, 1, c, 1))
    kernel = Tensor(x._device.xp.asarray(window), x._device)

    def reducer(t: Any) -> Any:
        shape = tuple(t.shape)
        flat = reshape(t, [-1, *shape[-3:]])
        out = depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
        return reshape(out, [*shape[:-3], *tuple(out.shape)[1:]])

    c1 = square(multiply(max_val, k1))
    c2 = square(multiply(max_val, k2))
    mean0, mean1 = reducer(x), reducer(y)
    num0 = multiply(multiply(mean0, mean1), 2.0)
    den0 = add(square(mean0), square(mean1))
    luminance = divide(add(num0, c1), add(den0, c1))
    num1 = multiply(reducer(multiply(x, y)), 2.0)
    den1 = reducer(add(square(x), square(y)))
    cs = divide(add(subtract(num1, num0), c2), add(subtract(den1, den0), c2))
    if index_map:
        return multiply(luminance, cs), cs
    return reduce_mean(multiply(luminance, cs), [-3, -2]), reduce_mean(cs, [-3, -2])


def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03, return_index_map: bool = False) -> Any:  # fmt: skip
    """Structural similarity (Wang et al. 2004) between image batches [..., H, W, C], with an
    `filter_size` Gaussian window of width `filter_sigma`; the mean over pixels and channels,
    or (`return_index_map`) the per-pixel map. Differentiable in both images.

    >>> import layerflow as tf
    >>> x = tf.random.stateless_uniform((1, 16, 16, 3), seed=[1, 2])
    >>> float(tf.image.ssim(x, x, 1.0))
    1.0
    """
    a, b = _pair_of_images(img1, img2, "ssim")
    mv, a, b = _max_val_and_floats(a, b, max_val)
    per_channel, _ = _ssim_per_channel(a, b, mv, int(filter_size), filter_sigma, k1, k2,
                                       return_index_map)  # fmt: skip
    return reduce_mean(per_channel, [-1])


def ssim_multiscale(img1: Any, img2: Any, max_val: Any, power_factors: Any = _MSSSIM_WEIGHTS,
                    filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
                    k2: float = 0.03) -> Any:  # fmt: skip
    """Multi-scale SSIM (Wang et al. 2003): the contrast-structure terms of successive 2x
    downscalings and the SSIM of the last, weighted by `power_factors` (one per scale).

    >>> import layerflow as tf
    >>> x = tf.random.stateless_uniform((1, 64, 64, 1), seed=[1, 2])
    >>> round(float(tf.image.ssim_multiscale(x, x, 1.0, filter_size=3)), 5)
    1.0
    """
    a, b = _pair_of_images(img1, img2, "ssim_multiscale")
    mv, a, b = _max_val_and_floats(a, b, max_val)
    imgs = [a, b]
    heads = [tuple(t.shape)[:-3] for t in imgs]
    mcs = []
    per_channel = None
    for k in range(len(power_factors)):
        if k > 0:
            down = []
            for t, head in zip(imgs, heads):
                tail = tuple(t.shape)[-3:]
                flat = reshape(t, [-1, *tail])
                rem_h, rem_w = tail[0] % 2, tail[1] % 2
                if rem_h or rem_w:
                    flat = pad(flat, [[0, 0], [0, rem_h], [0, rem_w], [0, 0]], mode="SYMMETRIC")
                pooled = avg_pool(flat, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                down.append(reshape(pooled, [*head, *tuple(pooled.shape)[1:]]))
            imgs = down
        per_channel, cs = _ssim_per_channel(imgs[0], imgs[1], mv, int(filter_size),
                                            filter_sigma, k1, k2)  # fmt: skip
        mcs.append(relu(cs))
    mcs.pop()
    values = stack([*mcs, relu(per_channel)], axis=-1)
    weights = np.asarray(power_factors, np.float32)
    return reduce_mean(reduce_prod(pow(values, weights), [-1]), [-1])


def image_gradients(image: Any) -> tuple:
    """One-step finite differences `(dy, dx)` of images [N, H, W, C], zero in the last row
    (dy) and the last column (dx).

    >>> import layerflow as tf
    >>> dy, dx = tf.image.image_gradients(tf.reshape(tf.range(9.0), (1, 3, 3, 1)))
    >>> dy[0, :, :, 0].numpy()
    array([[3., 3., 3.],
           [3., 3., 3.],
           [0., 0., 0.]], dtype=float32)
    """
    x = _as_tensor(image)
    if x._data.ndim != 4:
        raise ValueError(
            f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {list(x.shape)}."
        )
    n, h, w, c = (int(d) for d in x._data.shape)
    dy = subtract(x[:, 1:], x[:, :-1])
    dx = subtract(x[:, :, 1:], x[:, :, :-1])
    dy = concat([dy, zeros([n, 1, w, c], x.dtype)], 1)
    dx = concat([dx, zeros([n, h, 1, c], x.dtype)], 2)
    return dy, dx


def sobel_edges(image: Any) -> Any:
    """Sobel filter responses [N, H, W, C, 2] (last axis: dy, dx) of images [N, H, W, C]
    (float), with the borders reflected.

    >>> import layerflow as tf
    >>> img = tf.reshape(tf.range(9.0), (1, 3, 3, 1))
    >>> tf.image.sobel_edges(img)[0, 1, 1, 0].numpy()
    array([24.,  8.], dtype=float32)
    """
    x = _as_tensor(image)
    if x._data.ndim != 4:
        raise ValueError(f"sobel_edges: image must be [N, H, W, C], got shape {list(x.shape)}.")
    c = int(x._data.shape[-1])
    k = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]])
    k = np.tile(np.transpose(k, (1, 2, 0))[:, :, None, :], (1, 1, c, 1))
    kernel = Tensor(x._device.xp.asarray(k.astype(x._data.dtype)), x._device)
    padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    out = depthwise_conv2d(padded, kernel, [1, 1, 1, 1], "VALID")
    return reshape(out, [*tuple(x.shape), 2])


def total_variation(images: Any, name: str | None = None) -> Any:
    """Sum of absolute differences of neighbouring pixels: a scalar for one image [H, W, C],
    one value per image for a batch [N, H, W, C].

    >>> import layerflow as tf
    >>> float(tf.image.total_variation(tf.reshape(tf.range(4.0), (2, 2, 1))))
    6.0
    """
    x = _as_tensor(images)
    if x._data.ndim == 3:
        d1, d2 = subtract(x[1:], x[:-1]), subtract(x[:, 1:], x[:, :-1])
        axis = None
    elif x._data.ndim == 4:
        d1, d2 = subtract(x[:, 1:], x[:, :-1]), subtract(x[:, :, 1:], x[:, :, :-1])
        axis = [1, 2, 3]
    else:
        raise ValueError("total_variation: 'images' must be either 3 or 4-dimensional.")
    return add(reduce_sum(abs(d1), axis=axis), reduce_sum(abs(d2), axis=axis))
