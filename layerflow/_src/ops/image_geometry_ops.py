"""`tf.image` flips, `transpose`, `rot90`, random flips and random crops, as TF.

Images are [height, width, channels] or [batch, height, width, channels]. Every op here is a
composition of `reverse`, `transpose`, `where` and `slice`, so it is differentiable with respect to
the image. Random ops draw from `tf.random.uniform` (TF's seeding rules; a fresh draw per call of a
`tf.function`); the stateless ones from `tf.random.stateless_uniform` (results depend only on
`seed`; not bit-identical to TF's draws).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.array_ops import transpose as _transpose
from layerflow._src.ops.compare_ops import less
from layerflow._src.ops.gather_ops import gather
from layerflow._src.ops.manip_ops import reverse
from layerflow._src.ops.math_ops import _as_tensor, add, floormod, reshape, where
from layerflow._src.ops.random_ops import uniform
from layerflow._src.ops.stateless_random_ops import stateless_uniform


def image_tensor(image: Any, opname: str, ranks: tuple[int, ...] = (3, 4)) -> Any:
    """`image` as a tensor of one of `ranks` whose inner three dimensions are positive (TF's
    static checks, as ValueError)."""
    x = _as_tensor(image)
    shape = tuple(x.shape.as_list()) if x.shape.rank is not None else None
    if shape is None:
        return x
    if len(shape) < 3:
        raise ValueError(
            f"{opname}: 'image' (shape {x.shape}) must be at least three-dimensional: "
            "[height, width, channels] or [batch, height, width, channels]."
        )
    if any(d == 0 for d in shape[-3:]):
        raise ValueError(f"{opname}: inner 3 dims of 'image.shape' must be > 0: {x.shape}.")
    if len(shape) not in ranks:
        raise ValueError(f"{opname}: 'image' (shape {x.shape}) must have either 3 or 4 dimensions.")
    return x


def _flip(image: Any, axis: int, opname: str) -> Any:
    x = image_tensor(image, opname)
    return reverse(x, [axis + x.shape.rank - 3])


def flip_left_right(image: Any) -> Any:
    """Mirror images horizontally (the width axis).

    >>> import layerflow as tf
    >>> tf.image.flip_left_right([[[1], [2], [3]]])[0, :, 0].numpy()
    array([3, 2, 1], dtype=int32)
    """
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image: Any) -> Any:
    """Mirror images vertically (the height axis).

    >>> import layerflow as tf
    >>> tf.image.flip_up_down([[[1]], [[2]]])[:, 0, 0].numpy()
    array([2, 1], dtype=int32)
    """
    return _flip(image, 0, "flip_up_down")


def transpose(image: Any, name: str | None = None) -> Any:
    """Swap height and width.

    >>> import layerflow as tf
    >>> tf.image.transpose(tf.zeros((2, 5, 3))).shape
    TensorShape([5, 2, 3])
    """
    x = image_tensor(image, "transpose")
    return _transpose(x, [1, 0, 2] if x.shape.rank == 3 else [0, 2, 1, 3])


def _host_int(value: Any, what: str, opname: str) -> int:
    if isinstance(value, TensorLike):
        value = backend.to_host(value._data)
    arr = np.asarray(value)
    if arr.shape != () or arr.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be a scalar integer, got {value!r}.")
    return int(arr)


def rot90(image: Any, k: Any = 1, name: str | None = None) -> Any:
    """Rotate images counter-clockwise by `k` quarter turns (`k` may be negative).

    >>> import layerflow as tf
    >>> tf.image.rot90([[[1], [2]], [[3], [4]]])[:, :, 0].numpy()
    array([[2, 4],
           [1, 3]], dtype=int32)
    """
    x = image_tensor(image, "rot90")
    k = _host_int(k, "k", "rot90") % 4
    h = x.shape.rank - 3  # the height axis
    perm = [1, 0, 2] if h == 0 else [0, 2, 1, 3]
    if k == 1:
        return _transpose(reverse(x, [h + 1]), perm)
    if k == 2:
        return reverse(x, [h, h + 1])
    if k == 3:
        return reverse(_transpose(x, perm), [h + 1])
    return x


def _random_flip(image: Any, axis: int, draw: Any, opname: str) -> Any:
    x = image_tensor(image, opname)
    flipped = reverse(x, [axis + x.shape.rank - 3])
    if x.shape.rank == 3:
        return where(less(draw([]), 0.5), flipped, x)
    batch = x.shape[0]
    # TF flips image i when round(u_i) == 1, i.e. u_i > 0.5 (0.5 rounds to even, 0).
    flips = less(0.5, reshape(draw([batch]), [batch, 1, 1, 1]))
    return where(flips, flipped, x)


def random_flip_left_right(image: Any, seed: int | None = None) -> Any:
    """Flip each image horizontally with probability 1/2 (one draw per image of a batch).

    >>> import layerflow as tf
    >>> tf.image.random_flip_left_right(tf.zeros((2, 3, 1)), seed=1).shape
    TensorShape([2, 3, 1])
    """
    return _random_flip(image, 1, lambda s: uniform(s, seed=seed), "random_flip_left_right")


def random_flip_up_down(image: Any, seed: int | None = None) -> Any:
    """Flip each image vertically with probability 1/2 (one draw per image of a batch)."""
    return _random_flip(image, 0, lambda s: uniform(s, seed=seed), "random_flip_up_down")


def stateless_random_flip_left_right(image: Any, seed: Any) -> Any:
    """`random_flip_left_right` whose outcome depends only on `seed` (shape [2])."""
    return _random_flip(image, 1, lambda s: stateless_uniform(s, seed),
                        "stateless_random_flip_left_right")  # fmt: skip


def stateless_random_flip_up_down(image: Any, seed: Any) -> Any:
    """`random_flip_up_down` whose outcome depends only on `seed` (shape [2])."""
    return _random_flip(image, 0, lambda s: stateless_uniform(s, seed),
                        "stateless_random_flip_up_down")  # fmt: skip


def _random_crop(value: Any, size: Any, draw: Any, opname: str) -> Any:
    x = _as_tensor(value)
    if isinstance(size, TensorLike):
        size = backend.to_host(size._data)
    sz = np.asarray(size)
    shape = x.shape.as_list()
    if sz.ndim != 1 or sz.dtype.kind not in "iu" or sz.size != len(shape):
        raise ValueError(
            f"{opname}: size must be a 1-D list of {len(shape)} ints (one per dimension of the "
            f"value, shape {x.shape}), got {np.asarray(size).tolist()}."
        )
    if any(s < 0 for s in sz.tolist()) or any(d < s for d, s in zip(shape, sz.tolist())):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"Need value.shape >= size, got {shape} {sz.tolist()}; crop to a "
            "size no larger than the value.",  # fmt: skip
        )
    limit = np.asarray(shape, dtype=np.int32) - sz.astype(np.int32) + 1
    # TF draws int32 offsets in [0, int32 max) and takes them modulo the limit. The crop is a
    # gather per axis with tensor indices, so it also runs inside a tf.function.
    offsets = floormod(draw([len(shape)]), limit)
    out = x
    for axis, (dim, count) in enumerate(zip(shape, sz.tolist())):
        if count != dim:
            idx = add(offsets[axis], np.arange(count, dtype=np.int32))
            out = gather(out, idx, axis=axis)
    return out


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Any:
    """A uniformly placed crop of `size` (one int per dimension) from `value`.

    >>> import layerflow as tf
    >>> tf.image.random_crop(tf.zeros((5, 6, 3)), [2, 2, 3], seed=1).shape
    TensorShape([2, 2, 3])
    """
    imax = np.iinfo(np.int32).max
    return _random_crop(
        value, size, lambda s: uniform(s, 0, imax, "int32", seed=seed), "random_crop"
    )


def stateless_random_crop(value: Any, size: Any, seed: Any, name: str | None = None) -> Any:
    """`random_crop` whose placement depends only on `seed` (shape [2])."""
    imax = np.iinfo(np.int32).max
    return _random_crop(
        value, size, lambda s: stateless_uniform(s, seed, 0, imax, "int32"),
        "stateless_random_crop",
    )  # fmt: skip
