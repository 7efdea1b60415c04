"""`tf.types.experimental.distributed`: the values of `tf.distribute`. Re-exports only."""

from layerflow._src.distribute.values import Mirrored, PerReplica

__all__ = ["Mirrored", "PerReplica"]
