"""`tf.ragged`: ragged tensors (rows of different lengths)."""

from layerflow._src.ops.ragged.ragged_dispatch import stack
from layerflow._src.ops.ragged.ragged_ops import (
    boolean_mask,
    constant,
    cross,
    cross_hashed,
    map_flat_values,
    range,
    row_splits_to_segment_ids,
    segment_ids_to_row_splits,
    stack_dynamic_partitions,
)
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor

__all__ = [
    "RaggedTensor", "boolean_mask", "constant", "cross", "cross_hashed", "map_flat_values",
    "range", "row_splits_to_segment_ids", "segment_ids_to_row_splits", "stack",
    "stack_dynamic_partitions",
]  # fmt: skip
