"""RaggedTensor and its ops. Importing any module of this package first registers the ops'
ragged overrides (ragged_dispatch), so they exist whenever a RaggedTensor can."""

from layerflow._src.ops.ragged import ragged_dispatch as _ragged_dispatch  # noqa: F401 - overrides
from layerflow._src.ops.ragged import ragged_tensor as _ragged_tensor  # noqa: F401 - first
