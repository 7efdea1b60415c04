"""StructuredTensor (`tf.experimental.StructuredTensor`). Importing the package loads the class
and its Spec (which sets `StructuredTensor.Spec`)."""

from layerflow._src.ops.structured import structured_spec as _structured_spec  # noqa: F401
from layerflow._src.ops.structured import structured_tensor as _structured_tensor  # noqa: F401
