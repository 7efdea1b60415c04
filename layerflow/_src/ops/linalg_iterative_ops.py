"""`tf.linalg.experimental.conjugate_gradient`: TF's preconditioned conjugate-gradient loop,
run eagerly with layerflow ops (so the result is differentiable)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.ops.array_ops import expand_dims
from layerflow._src.ops.complex_ops import conj
from layerflow._src.ops.linear_operator import LinearOperator
from layerflow._src.ops.math_ops import _as_tensor, add, broadcast_to, divide, multiply, subtract
from layerflow._src.ops.reduce_ops import norm, reduce_sum


def _batch(*shapes: tuple) -> tuple:
    return tuple(np.broadcast_shapes(*shapes))


CGState = collections.namedtuple("CGState", ["i", "x", "r", "p", "gamma"])


def conjugate_gradient(operator: LinearOperator, rhs: Any, preconditioner: Any = None,
                       x: Any = None, tol: float = 1e-5, max_iter: int = 20,
                       name: str = "conjugate_gradient") -> CGState:  # fmt: skip
    """Solve operator @ x = rhs for a self-adjoint positive definite operator by conjugate
    gradients (TF's algorithm: stop after `max_iter` steps or when every residual's norm is
    at most `tol` times the initial one). Returns (i, x, r, p, gamma). Differentiable.

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorFullMatrix([[4.0, 1.0], [1.0, 3.0]],
    ...                                         is_self_adjoint=True, is_positive_definite=True)
    >>> tf.linalg.experimental.conjugate_gradient(op, [1.0, 2.0]).x.numpy().round(4)
    array([0.0909, 0.6364], dtype=float32)
    """
    if not (operator.is_self_adjoint and operator.is_positive_definite):
        raise ValueError(
            "conjugate_gradient: the operator must be self-adjoint and positive definite "
            "(is_self_adjoint=True, is_positive_definite=True)."
        )
    b = _as_tensor(rhs)

    def dot(u: Any, w: Any) -> Any:
        return reduce_sum(multiply(conj(u) if u._data.dtype.kind == "c" else u, w), -1)

    batch = _batch(tuple(b._data.shape[:-1]), tuple(operator.batch_shape))
    if preconditioner is not None:
        batch = _batch(batch, tuple(preconditioner.batch_shape))
    r = broadcast_to(b, [*batch, b._data.shape[-1]])
    limit = multiply(norm(r, axis=-1), tol)
    if x is None:
        x = r * 0.0
    else:
        x = _as_tensor(x)
        r = subtract(b, operator.matvec(x))
    p = r if preconditioner is None else preconditioner.matvec(r)
    gamma = dot(r, p)
    i = 0
    while i < int(max_iter) and bool(np.any(np.asarray(norm(r, axis=-1)) > np.asarray(limit))):
        z = operator.matvec(p)
        alpha = divide(gamma, dot(p, z))
        x = add(x, multiply(expand_dims(alpha, -1), p))
        r = subtract(r, multiply(expand_dims(alpha, -1), z))
        q = r if preconditioner is None else preconditioner.matvec(r)
        new_gamma = dot(r, q)
        p = add(q, multiply(expand_dims(divide(new_gamma, gamma), -1), p))
        gamma = new_gamma
        i += 1
    return CGState(convert_to_tensor(i), x, r, p, gamma)


__all__ = ["CGState", "conjugate_gradient"]
