"""`tf.bitwise`: bitwise operations on integer tensors."""

from layerflow._src.autodiff import dispatch as _public_names
from layerflow._src.ops.bitwise_ops import (
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    invert,
    left_shift,
    right_shift,
)

# TFOpLambda layers name these ops tf.bitwise.<name> (the namespace loads lazily).
_public_names.register_namespace("bitwise", dict(globals()))

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
