"""Ops: forward on arrays and gradient on tensors, side by side. Importing installs operators."""

from layerflow._src.ops import operators as _operators  # noqa: F401 - installs operators
from layerflow._src.ops import shape_rules as _shape_rules  # noqa: F401, E402 - declares spec rules
from layerflow._src.ops import tensor_methods as _tensor_methods  # noqa: F401, E402 - Tensor.cpu, IndexedSlices
