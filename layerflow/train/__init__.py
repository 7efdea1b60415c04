"""`tf.train`: checkpoints of models, optimizers and variables."""

from layerflow._src.distribute.cluster_spec import ClusterSpec
from layerflow._src.ops import example_proto as _example_proto
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

# The Example protocol buffers import protobuf (the `proto` extra) on first use only.
__all__ += list(_example_proto.NAMES)


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name in _example_proto.NAMES:
        return _example_proto.classes()[name]
    raise AttributeError(f"module 'layerflow.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_example_proto.NAMES))
