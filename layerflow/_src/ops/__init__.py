"""Ops: forward on arrays and gradient on tensors, side by side. Importing installs operators."""

from layerflow._src.ops import operators as _operators  # noqa: F401 - installs operators
from layerflow._src.ops import shape_rules as _shape_rules  # noqa: F401, E402 - declares spec rules
