"""`tf.train.experimental`: Python state and checkpoint sharding. Re-exports only."""

from layerflow._src.saving.python_state import PythonState
from layerflow._src.saving.sharding import (
    MaxShardSizePolicy,
    ShardableTensor,
    ShardByTaskPolicy,
    ShardingCallback,
)

__all__ = [
    "MaxShardSizePolicy",
    "PythonState",
    "ShardByTaskPolicy",
    "ShardableTensor",
    "ShardingCallback",
]
