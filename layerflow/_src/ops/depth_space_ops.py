"""`depth_to_space` and `space_to_depth`: moving blocks of pixels between the spatial axes and
the channels (NHWC or NCHW), as one reshape-transpose-reshape, so gradients come for free."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, reshape


def _check(x: Any, block_size: Any, data_format: str, opname: str) -> tuple[Any, int]:
    t = _as_tensor(x)
    b = int(block_size)
    if b < 2:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: block_size must be at least 2, got {block_size}."
        )
    if t._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: input must be 4-D, got shape {list(t.shape)}."
        )
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{opname}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}.")
    if data_format == "NCHW":
        t = transpose(t, [0, 2, 3, 1])
    return t, b


def depth_to_space(input: Any, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Any:  # fmt: skip
    """Rearrange blocks of channels into `block_size` x `block_size` spatial blocks: NHWC
    [n, h, w, c * b * b] becomes [n, h * b, w * b, c].

    >>> import layerflow as tf
    >>> tf.nn.depth_to_space(tf.reshape(tf.range(4.0), [1, 1, 1, 4]), 2).numpy()[0, :, :, 0]
    array([[0., 1.],
           [2., 3.]], dtype=float32)
    """
    t, b = _check(input, block_size, data_format, "depth_to_space")
    n, h, w, c = t._data.shape
    if c % (b * b):
        raise errors.InvalidArgumentError(
            None,
            "depth_to_space",
            f"depth_to_space: the depth {c} is not divisible by block_size * block_size = {b * b}.",
        )
    out_c = c // (b * b)
    y = reshape(t, [n, h, w, b, b, out_c])
    y = reshape(transpose(y, [0, 1, 3, 2, 4, 5]), [n, h * b, w * b, out_c])
    return transpose(y, [0, 3, 1, 2]) if data_format == "NCHW" else y


def space_to_depth(input: Any, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Any:  # fmt: skip
    """Move each `block_size` x `block_size` spatial block into the channels: NHWC
    [n, h, w, c] becomes [n, h / b, w / b, c * b * b]; the inverse of depth_to_space.

    >>> import layerflow as tf
    >>> tf.nn.space_to_depth(tf.reshape(tf.range(4.0), [1, 2, 2, 1]), 2).numpy().ravel()
    array([0., 1., 2., 3.], dtype=float32)
    """
    t, b = _check(input, block_size, data_format, "space_to_depth")
    n, h, w, c = t._data.shape
    if h % b or w % b:
        raise errors.InvalidArgumentError(
            None,
            "space_to_depth",
            f"space_to_depth: the height {h} and width {w} must be divisible by block_size {b}.",
        )
    y = reshape(t, [n, h // b, b, w // b, b, c])
    y = reshape(transpose(y, [0, 1, 3, 2, 4, 5]), [n, h // b, w // b, b * b * c])
    return transpose(y, [0, 3, 1, 2]) if data_format == "NCHW" else y


__all__ = ["depth_to_space", "space_to_depth"]
