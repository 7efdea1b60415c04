"""`tf.nn.experimental`: dropout with a stateless seed or a caller's random numbers."""

from layerflow._src.ops.nn_extra_ops import general_dropout, stateless_dropout

__all__ = ["general_dropout", "stateless_dropout"]
