"""`tf.autograph`: converts Python control flow on tensors into TF control flow."""

from layerflow._src.autograph.conversion import (
    do_not_convert,
    set_verbosity,
    to_code,
    to_graph,
    trace,
)
from layerflow.autograph import experimental

__all__ = ["do_not_convert", "experimental", "set_verbosity", "to_code", "to_graph", "trace"]
