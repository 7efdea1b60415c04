"""`tf.distribute.cluster_resolver`: where this process sits in a cluster."""

from layerflow._src.distribute.cluster_resolver import (
    ClusterResolver,
    SimpleClusterResolver,
    TFConfigClusterResolver,
    UnionResolver,
)
from layerflow._src.distribute.slurm_cluster_resolver import SlurmClusterResolver

__all__ = [
    "ClusterResolver",
    "SimpleClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "UnionResolver",
]
