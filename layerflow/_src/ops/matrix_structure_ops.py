"""Structural matrix ops of `tf.linalg`, composed (gradients come from the parts): adjoint,
cross, set_diag, tensor_diag and tensor_diag_part."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.ops.array_ops import stack, transpose
from layerflow._src.ops.linalg_ops import _diag, _diag_embed, _diag_part
from layerflow._src.ops.math_ops import _as_tensor, add, multiply, reshape, subtract


def _swap_last(rank: int) -> list[int]:
    return list(range(rank - 2)) + [rank - 1, rank - 2]


def adjoint(matrix: Any, name: str | None = None) -> Any:
    """The conjugate transpose of the last two axes.

    >>> import layerflow as tf
    >>> tf.linalg.adjoint(tf.constant([[1 + 1j, 2j], [3.0, 4.0]])).numpy()
    array([[1.-1.j, 3.-0.j],
           [0.-2.j, 4.-0.j]])
    """
    from layerflow._src.ops.complex_ops import conj

    x = _as_tensor(matrix)
    if x._data.ndim < 2:
        raise ValueError(f"adjoint needs a tensor of rank >= 2, got shape {list(x.shape)}.")
    return conj(transpose(x, _swap_last(x._data.ndim)))


def cross(a: Any, b: Any, name: str | None = None) -> Any:
    """The cross product of 3-vectors along the last axis (batch axes broadcast).

    >>> import layerflow as tf
    >>> tf.linalg.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]).numpy()
    array([0., 0., 1.], dtype=float32)
    """
    u, v = _as_tensor(a), _as_tensor(b)
    if u._data.shape[-1:] != (3,) or v._data.shape[-1:] != (3,):
        raise errors.InvalidArgumentError(
            None,
            "cross",
            f"cross: the last dimension of both inputs must be 3, got shapes {list(u.shape)} "
            f"and {list(v.shape)}.",
        )
    u0, u1, u2 = u[..., 0], u[..., 1], u[..., 2]
    v0, v1, v2 = v[..., 0], v[..., 1], v[..., 2]
    return stack(
        [
            subtract(multiply(u1, v2), multiply(u2, v1)),
            subtract(multiply(u2, v0), multiply(u0, v2)),
            subtract(multiply(u0, v1), multiply(u1, v0)),
        ],
        axis=-1,
    )


def set_diag(input: Any, diagonal: Any, name: str | None = None, k: int = 0,  # noqa: A002
             align: str = "RIGHT_LEFT") -> Any:  # fmt: skip
    """`input` with the main diagonal of each innermost matrix replaced by `diagonal`
    ([..., min(M, N)]).

    >>> import layerflow as tf
    >>> tf.linalg.set_diag(tf.zeros([2, 3]), [1.0, 2.0]).numpy()
    array([[1., 0., 0.],
           [0., 2., 0.]], dtype=float32)
    """
    if k != 0:
        raise NotImplementedError(
            "set_diag: only the main diagonal (k=0) is supported; build off-diagonals with "
            "tf.linalg.band_part."
        )
    x = _as_tensor(input)
    if x._data.ndim < 2:
        raise ValueError(f"set_diag needs a tensor of rank >= 2, got shape {list(x.shape)}.")
    d = diagonal if hasattr(diagonal, "_data") else convert_to_tensor(diagonal, dtype=x.dtype)
    m, n = x._data.shape[-2:]
    want = tuple(x._data.shape[:-2]) + (min(m, n),)
    if tuple(d._data.shape) != want:
        raise errors.InvalidArgumentError(
            None,
            "set_diag",
            f"set_diag: diagonal must have shape {list(want)} for input {list(x.shape)}, got "
            f"{list(d.shape)}.",
        )
    shape = tuple(x._data.shape)
    return add(subtract(x, _diag_embed(_diag_part(x), shape)), _diag_embed(d, shape))


def tensor_diag(diagonal: Any, name: str | None = None) -> Any:
    """The tensor of shape D + D with `diagonal` (shape D) on its diagonal.

    >>> import layerflow as tf
    >>> tf.linalg.tensor_diag([1.0, 2.0]).numpy()
    array([[1., 0.],
           [0., 2.]], dtype=float32)
    """
    d = _as_tensor(diagonal)
    shape = list(d._data.shape)
    return reshape(_diag(reshape(d, [-1])), shape + shape)


def tensor_diag_part(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The diagonal (shape D) of a tensor of shape D + D; tensor_diag's inverse.

    >>> import layerflow as tf
    >>> tf.linalg.tensor_diag_part([[1.0, 0.0], [0.0, 2.0]]).numpy()
    array([1., 2.], dtype=float32)
    """
    x = _as_tensor(input)
    shape = list(x._data.shape)
    half = len(shape) // 2
    if len(shape) % 2 or shape[:half] != shape[half:]:
        raise errors.InvalidArgumentError(
            None,
            "tensor_diag_part",
            f"tensor_diag_part: the input's shape must be D + D (an even rank, the halves "
            f"equal), got {shape}.",
        )
    n = 1
    for s in shape[:half]:
        n *= s
    return reshape(_diag_part(reshape(x, [n, n])), shape[:half])


__all__ = ["adjoint", "cross", "set_diag", "tensor_diag", "tensor_diag_part"]
