"""`tf.distribute`: strategies for running one model on several devices or processes."""

from layerflow._src.distribute.cross_device_ops import (
    AllReduceCrossDeviceOps,
    CrossDeviceOps,
    HierarchicalCopyAllReduce,
    NcclAllReduce,
    ReductionToOneDevice,
)
from layerflow._src.distribute.distribute_lib import (
    OneDeviceStrategy,
    ReduceOp,
    ReplicaContext,
    Strategy,
    StrategyExtended,
    experimental_set_strategy,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
)
from layerflow._src.distribute.input_lib import (
    DistributedDataset,
    DistributedIterator,
    InputContext,
)
from layerflow._src.distribute.mirrored import MirroredStrategy
from layerflow._src.distribute.multi_worker import MultiWorkerMirroredStrategy
from layerflow._src.distribute.options import InputOptions, InputReplicationMode, RunOptions
from layerflow._src.distribute.values import DistributedValues
from layerflow.distribute import cluster_resolver, experimental

__all__ = [
    "AllReduceCrossDeviceOps",
    "CrossDeviceOps",
    "DistributedDataset",
    "DistributedIterator",
    "DistributedValues",
    "HierarchicalCopyAllReduce",
    "InputContext",
    "InputOptions",
    "InputReplicationMode",
    "MirroredStrategy",
    "MultiWorkerMirroredStrategy",
    "NcclAllReduce",
    "OneDeviceStrategy",
    "ReduceOp",
    "ReductionToOneDevice",
    "ReplicaContext",
    "RunOptions",
    "Strategy",
    "StrategyExtended",
    "cluster_resolver",
    "experimental",
    "experimental_set_strategy",
    "get_replica_context",
    "get_strategy",
    "has_strategy",
    "in_cross_replica_context",
]
