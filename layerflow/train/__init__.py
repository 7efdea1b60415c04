"""`tf.train`: checkpoints of models, optimizers and variables."""

from layerflow._src.distribute.cluster_spec import ClusterSpec
from layerflow._src.saving.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from layerflow._src.saving.checkpoint_utils import (
    CheckpointOptions,
    checkpoints_iterator,
    get_checkpoint_state,
    list_variables,
    load_checkpoint,
    load_variable,
)
from layerflow._src.saving.coordinator import Coordinator
from layerflow._src.saving.moving_averages import ExponentialMovingAverage
from layerflow._src.saving.restore import LoadStatus as CheckpointLoadStatus

# isort: split
from layerflow._src.saving.checkpoint_view import CheckpointView, TrackableView
from layerflow.train import experimental

__all__ = ["Checkpoint", "CheckpointLoadStatus", "CheckpointManager", "latest_checkpoint"]
__all__ += [
    "CheckpointOptions", "ClusterSpec", "Coordinator", "ExponentialMovingAverage",
    "checkpoints_iterator", "get_checkpoint_state", "list_variables", "load_checkpoint",
    "load_variable",
]  # fmt: skip
__all__ += ["CheckpointView", "TrackableView", "experimental"]
