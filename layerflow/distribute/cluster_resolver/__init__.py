"""`tf.distribute.cluster_resolver`: where this process sits in a cluster."""

from layerflow._src.distribute.cluster_resolver import (
    ClusterResolver,
    SimpleClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    UnionResolver,
)

__all__ = [
    "ClusterResolver",
    "SimpleClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "UnionResolver",
]
