"""`tf.autodiff`: reverse mode (`GradientTape`) and forward mode (`ForwardAccumulator`)."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.ops.forward_accumulator import ForwardAccumulator
