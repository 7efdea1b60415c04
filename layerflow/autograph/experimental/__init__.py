"""`tf.autograph.experimental`."""

from layerflow._src.autograph.conversion import do_not_convert
from layerflow._src.autograph.directives import Feature, set_loop_options

__all__ = ["Feature", "do_not_convert", "set_loop_options"]
