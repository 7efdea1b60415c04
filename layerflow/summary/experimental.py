"""`tf.summary.experimental`: the default step, summary scopes, raw summary protos."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.summary import get_step, set_step, summary_scope, write_raw_pb
