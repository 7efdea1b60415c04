"""`tf.random`: random tensors with TF's seeding rules."""

from layerflow._src.ops.random_ops import (
    categorical,
    normal,
    set_seed,
    shuffle,
    truncated_normal,
    uniform,
)
