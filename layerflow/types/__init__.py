"""`tf.types`: TF's public type hierarchy. Re-exports only."""

from layerflow.types import experimental

__all__ = ["experimental"]
