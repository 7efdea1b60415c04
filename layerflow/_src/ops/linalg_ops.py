"""`tf.linalg` and contractions: tensordot, einsum, matvec, inv, det, diag, trace."""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import expand_dims, squeeze, transpose
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _unbroadcast,
    broadcast_to,
    matmul,
    multiply,
    negative,
    reduce_sum,
    reshape,
)

# --- tensordot (composed from transpose, reshape and one matmul) ----------------------------------


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Any:
    """Sum of products over `axes` (an int N: the last N of a with the first N of b; or a pair
    of axis lists).

    >>> import layerflow as tf
    >>> tf.tensordot([[1.0, 2.0]], [[3.0], [4.0]], axes=1).numpy()
    array([[11.]], dtype=float32)
    """
    a, b = _as_tensor(a), _as_tensor(b)
    ra, rb = a._data.ndim, b._data.ndim
    if isinstance(axes, int | np.integer):
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            raise ValueError(f"tensordot: axes={n} must be in [0, min(rank a, rank b)].")
        ax_a, ax_b = list(range(ra - n, ra)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [int(ax_a)] if isinstance(ax_a, int | np.integer) else [int(i) for i in ax_a]
        ax_b = [int(ax_b)] if isinstance(ax_b, int | np.integer) else [int(i) for i in ax_b]
        ax_a, ax_b = [i % ra for i in ax_a], [i % rb for i in ax_b]
    sa, sb = tuple(a._data.shape), tuple(b._data.shape)
    if len(ax_a) != len(ax_b) or any(sa[i] != sb[j] for i, j in zip(ax_a, ax_b)):
        raise errors.InvalidArgumentError(
            None,
            "tensordot",
            f"tensordot: cannot contract axes {ax_a} of shape {sa} with axes {ax_b} of shape "
            f"{sb}: the sizes differ.",
        )
    free_a = [i for i in range(ra) if i not in ax_a]
    free_b = [i for i in range(rb) if i not in ax_b]
    k = int(np.prod([sa[i] for i in ax_a]))
    a2 = reshape(transpose(a, free_a + ax_a), (-1, k))
    b2 = reshape(transpose(b, ax_b + free_b), (k, -1))
    return reshape(matmul(a2, b2), [sa[i] for i in free_a] + [sb[i] for i in free_b])


# --- einsum ---------------------------------------------------------------------------------------


def _parse_einsum(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Operand and output subscripts with every `...` replaced by explicit letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(ranks):
        raise ValueError(f"einsum: {equation!r} names {len(subs)} operands, got {len(ranks)}.")
    used = set(eq) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    n_ell = max((r - (len(s) - 3) for s, r in zip(subs, ranks) if "..." in s), default=0)
    ell = "".join(spare[:n_ell])
    full = []
    for s, r in zip(subs, ranks):
        if "..." in s:
            k = r - (len(s) - 3)
            s = s.replace("...", ell[n_ell - k :] if k else "")
        if len(s) != r:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of rank {r}.")
        full.append(s)
    if not arrow:
        counts = {c: "".join(full).count(c) for c in "".join(full)}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return full, out


@op("einsum", list_input=True)
def _einsum(xp: Any, values: list[Any], subs: tuple[str, ...], out: str) -> Any:
    return xp.einsum(",".join(subs) + "->" + out, *values, optimize=len(values) > 2)


@_einsum.grad
def _(dy: Any, out: Any, values: list[Any], subs: tuple[str, ...], out_subs: str) -> Any:
    grads: list[Any] = []
    for i, (x, s) in enumerate(zip(values, subs)):
        if not input_needed(i):
            grads.append(None)
            continue
        if len(set(s)) != len(s):
            raise NotImplementedError(
                f"einsum: the gradient through repeated subscripts {s!r} (a diagonal) is not "
                "supported; use tf.linalg.diag_part first."
            )
        others = [v for j, v in enumerate(values) if j != i]
        other_subs = [t for j, t in enumerate(subs) if j != i]
        avail = set(out_subs).union(*other_subs) if other_subs else set(out_subs)
        target = "".join(c for c in s if c in avail)
        g = _einsum([dy] + others, (out_subs, *other_subs), target)
        if target != s:
            # Indices summed inside operand i alone: its gradient is constant along them.
            g = reshape(g, [x._data.shape[k] if c in avail else 1 for k, c in enumerate(s)])
            g = broadcast_to(g, tuple(x._data.shape))
        if tuple(g._data.shape) != tuple(x._data.shape):
            g = _unbroadcast(g, x)
        grads.append(g)
    return grads


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Any:
    """Einstein summation, e.g. 'ij,jk->ik' (ellipses broadcast).

    >>> import layerflow as tf
    >>> tf.einsum("ij,jk->ik", [[1.0, 2.0]], [[3.0], [4.0]]).numpy()
    array([[11.]], dtype=float32)
    """
    ts = [_as_tensor(t) for t in inputs]
    subs, out = _parse_einsum(equation, [t._data.ndim for t in ts])
    return _einsum(ts, tuple(subs), out)


# --- matrix functions -----------------------------------------------------------------------------


def matvec(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    adjoint_a: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Any:
    """Matrix-vector product over the last axes: a [..., M, N] times b [..., N].

    >>> import layerflow as tf
    >>> tf.linalg.matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]).numpy()
    array([3., 7.], dtype=float32)
    """
    return squeeze(matmul(a, expand_dims(b, -1), transpose_a=transpose_a or adjoint_a), -1)


def _check_square(x: Any, opname: str) -> None:
    s = x.shape
    if x.ndim < 2 or s[-1] != s[-2]:
        raise ValueError(f"{opname} needs square matrices [..., M, M], got shape {tuple(s)}")


@op("matrix_inverse")
def _inv(xp: Any, x: Any) -> Any:
    _check_square(x, "inv")
    try:
        return xp.linalg.inv(x)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(
            None, "matrix_inverse", "inv: the input is not invertible (singular matrix)."
        ) from None


@_inv.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(matmul(matmul(out, dy, transpose_a=True), out, transpose_b=True))


def inv(input: Any, adjoint: bool = False, name: str | None = None) -> Any:  # noqa: A002
    """The inverse of each square matrix in the last two axes."""
    x = _inv(input)
    return transpose(x, _swap_last(x._data.ndim)) if adjoint else x


def _swap_last(rank: int) -> list[int]:
    return list(range(rank - 2)) + [rank - 1, rank - 2]


@op("matrix_determinant")
def _det(xp: Any, x: Any) -> Any:
    _check_square(x, "det")
    return xp.linalg.det(x)


@_det.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    scale = reshape(multiply(dy, out), tuple(out._data.shape) + (1, 1))
    return multiply(scale, transpose(_inv(x), _swap_last(x._data.ndim)))


def det(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The determinant of each square matrix in the last two axes.

    >>> import layerflow as tf
    >>> float(tf.linalg.det([[2.0, 0.0], [0.0, 3.0]]))
    6.0
    """
    return _det(input)


@op("matrix_diag")
def _diag(xp: Any, v: Any) -> Any:
    n = v.shape[-1]
    out = xp.zeros(v.shape + (n,), dtype=v.dtype)
    idx = xp.arange(n)
    out[..., idx, idx] = v
    return out


@_diag.grad
def _(dy: Any, out: Any, v: Any) -> Any:
    return diag_part(dy)


def diag(diagonal: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:
    """Batched diagonal matrices [..., N, N] from vectors [..., N].

    >>> import layerflow as tf
    >>> tf.linalg.diag([1, 2]).numpy()
    array([[1, 0],
           [0, 2]], dtype=int32)
    """
    if k != 0:
        raise NotImplementedError("linalg.diag: only the main diagonal (k=0) is supported.")
    return _diag(diagonal)


@op("matrix_diag_part")
def _diag_part(xp: Any, x: Any) -> Any:
    return xp.diagonal(x, axis1=-2, axis2=-1).copy()


@_diag_part.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _diag_embed(dy, tuple(x._data.shape))


@op("matrix_diag_embed")
def _diag_embed(xp: Any, v: Any, shape: tuple[int, ...]) -> Any:
    out = xp.zeros(shape, dtype=v.dtype)
    idx = xp.arange(v.shape[-1])
    out[..., idx, idx] = v
    return out


@_diag_embed.grad
def _(dy: Any, out: Any, v: Any, shape: Any) -> Any:
    return _diag_part(dy)


def diag_part(input: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:  # noqa: A002
    """The main diagonals [..., min(M, N)] of matrices [..., M, N]."""
    if k != 0:
        raise NotImplementedError("linalg.diag_part: only the main diagonal (k=0) is supported.")
    x = _as_tensor(input)
    if x._data.ndim < 2:
        raise ValueError(f"diag_part needs a tensor of rank >= 2, got shape {x.shape}.")
    return _diag_part(x)


def trace(x: Any, name: str | None = None) -> Any:
    """The sum of the main diagonal of each matrix."""
    return reduce_sum(diag_part(x), -1)


def matrix_transpose(a: Any, name: str | None = None, conjugate: bool = False) -> Any:
    """Swap the last two axes."""
    a = _as_tensor(a)
    return transpose(a, _swap_last(a._data.ndim))


# --- band_part ------------------------------------------------------------------------------------


@op("matrix_band_part")
def _band_part(xp: Any, x: Any, num_lower: int, num_upper: int) -> Any:
    m, n = x.shape[-2], x.shape[-1]
    i = xp.arange(m)[:, None]
    j = xp.arange(n)[None, :]
    keep = ((num_lower < 0) | (i - j <= num_lower)) & ((num_upper < 0) | (j - i <= num_upper))
    return xp.where(keep, x, xp.zeros((), dtype=x.dtype))


@_band_part.grad
def _(dy: Any, out: Any, x: Any, num_lower: int, num_upper: int) -> Any:
    return _band_part(dy, num_lower, num_upper)


def band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Any:  # noqa: A002
    """Zero everything outside a band of each innermost matrix: keep `num_lower` diagonals
    below the main one and `num_upper` above (a negative count keeps that whole triangle).

    >>> import layerflow as tf
    >>> tf.linalg.band_part(tf.ones((3, 3)), -1, 0).numpy()  # lower triangle
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    x = _as_tensor(input)
    if x._data.ndim < 2:
        raise errors.InvalidArgumentError(
            None, "band_part", f"band_part needs a tensor of rank >= 2, got shape {x.shape}."
        )
    m, n = x._data.shape[-2:]
    lower, upper = int(num_lower), int(num_upper)
    if lower > m or upper > n:
        raise errors.InvalidArgumentError(
            None,
            "band_part",
            f"band_part: num_lower={lower} must be <= {m} (rows) and num_upper={upper} <= {n} "
            "(columns); use -1 to keep a whole triangle.",
        )
    return _band_part(x, lower, upper)
