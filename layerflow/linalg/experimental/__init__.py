"""`tf.linalg.experimental`: iterative solvers."""

from layerflow._src.ops.linalg_iterative_ops import conjugate_gradient

__all__ = ["conjugate_gradient"]
