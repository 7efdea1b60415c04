"""`tf.train`: checkpoints of models, optimizers and variables."""

from layerflow._src.distribute.cluster_spec import ClusterSpec
from layerflow._src.saving.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from layerflow._src.saving.restore import LoadStatus as CheckpointLoadStatus

__all__ = [
    "Checkpoint",
    "CheckpointLoadStatus",
    "CheckpointManager",
    "ClusterSpec",
    "latest_checkpoint",
]
