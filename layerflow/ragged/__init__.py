"""`tf.ragged`: ragged tensors (rows of different lengths)."""

from layerflow._src.ops.ragged.ragged_ops import (
    constant,
    map_flat_values,
    range,
    row_splits_to_segment_ids,
    segment_ids_to_row_splits,
)
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor

__all__ = [
    "RaggedTensor", "constant", "map_flat_values", "range", "row_splits_to_segment_ids",
    "segment_ids_to_row_splits",
]  # fmt: skip
