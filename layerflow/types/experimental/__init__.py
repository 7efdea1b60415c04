"""`tf.types.experimental`. Re-exports only; see `layerflow/_src/function/types_api.py`."""

from layerflow._src.function.types_api import (
    AtomicFunction,
    Callable,
    ConcreteFunction,
    FunctionType,
    GenericFunction,
    PolymorphicFunction,
    SupportsTracingProtocol,
    TensorLike,
    TraceType,
)
from layerflow.types.experimental import distributed

__all__ = [
    "AtomicFunction", "Callable", "ConcreteFunction", "FunctionType", "GenericFunction",
    "PolymorphicFunction", "SupportsTracingProtocol", "TensorLike", "TraceType", "distributed",
]  # fmt: skip
