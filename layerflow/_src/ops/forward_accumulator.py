"""`tf.autodiff.ForwardAccumulator`: forward-mode Jacobian-vector products.

Computed by the double-VJP trick on the tape: for a cotangent `u` of the output, the reverse
pass gives `g(u) = J^T u`, which is linear in `u`; the gradient of `<g(u), v>` with respect to
`u` is then `J v`, the JVP along the tangents `v`. Both passes are made of layerflow ops, so the
JVP is itself differentiable (Hessian-vector products with an outer `GradientTape`).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.math_ops import multiply, reduce_sum, zeros_like
from layerflow._src.ops.reduce_ops import add_n
from layerflow._src.utils import nest


class ForwardAccumulator:
    """Watch `primals` with `tangents`; inside the block, `jvp(y)` is the directional derivative
    of `y` along the tangents.

    >>> import layerflow as tf
    >>> x = tf.constant([1.0, 2.0])
    >>> with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0])) as acc:
    ...     y = 3.0 * x * x
    >>> acc.jvp(y).numpy()
    array([6., 0.], dtype=float32)
    """

    def __init__(self, primals: Any, tangents: Any) -> None:
        flat_p, flat_t = nest.flatten(primals), nest.flatten(tangents)
        if len(flat_p) != len(flat_t):
            raise ValueError(
                f"ForwardAccumulator: {len(flat_p)} primals but {len(flat_t)} tangents; give one "
                "tangent per primal, in the same structure."
            )
        self._primals: list[Any] = []
        self._tangents: list[Tensor] = []
        for p, t in zip(flat_p, flat_t, strict=True):
            if not isinstance(p, TensorLike):
                raise TypeError(
                    f"ForwardAccumulator: primals must be tensors or variables, got {p!r}."
                )
            t = t if isinstance(t, TensorLike) else convert_to_tensor(t, p.dtype)
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError(
                    f"Tangent shape {t.shape} does not match the shape of its primal "
                    f"{p.shape}; a tangent is a direction in the primal's space."
                )
            if t.dtype != p.dtype:
                raise TypeError(
                    f"Tangent dtype {t.dtype.name} does not match the primal's {p.dtype.name}."
                )
            self._primals.append(p)
            self._tangents.append(t)
        self._tape = GradientTape(persistent=True, watch_accessed_variables=False)
        self._tape.watch(self._primals)

    def __enter__(self) -> ForwardAccumulator:
        self._tape.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._tape.__exit__(*exc)

    def jvp(self, primals: Any, unconnected_gradients: Any = "none") -> Any:
        """The JVP of each tensor in `primals` (a structure): None (or zeros with
        `unconnected_gradients="zero"`) for a value that does not depend on the watched primals."""
        return nest.map_structure(lambda y: self._jvp(y, str(unconnected_gradients)), primals)

    def _jvp(self, y: Any, unconnected: str) -> Any:
        for p, t in zip(self._primals, self._tangents, strict=True):
            if y is p:
                return t
        if not isinstance(y, TensorLike) or y._data.dtype.kind not in "fc":
            return None
        cotangent = zeros_like(y)
        with GradientTape(watch_accessed_variables=False) as outer:
            outer.watch(cotangent)
            grads = self._tape.gradient(y, self._primals, output_gradients=cotangent)
            terms = [
                reduce_sum(multiply(g, t))
                for g, t in zip(grads, self._tangents, strict=True)
                if g is not None
            ]
            total = add_n(terms) if terms else None
        result = None if total is None else outer.gradient(total, cotangent)
        if result is None and unconnected == "zero":
            return zeros_like(y)
        return result
