"""`tf.sets`: set operations on the last dimension of dense or sparse tensors."""

from layerflow._src.ops.sets_ops import (
    difference,
    intersection,
    set_difference,
    set_intersection,
    set_size,
    set_union,
    size,
    union,
)

__all__ = [
    "difference",
    "intersection",
    "set_difference",
    "set_intersection",
    "set_size",
    "set_union",
    "size",
    "union",
]
