"""`tf.linalg`: matrix operations."""

from layerflow._src.ops.math_ops import matmul
