"""`tf.experimental`: `Optional`, DLPack exchange (`tf.experimental.dlpack`), and the ragged
shape classes `DynamicRaggedShape` and `RowPartition`."""

from layerflow._src.ops.optional_ops import Optional

# ragged_tensor first: importing ragged_shape first runs into their import cycle (main's bug)
from layerflow._src.ops.ragged import ragged_tensor as _ragged_tensor  # noqa: F401
from layerflow._src.ops.ragged.ragged_shape import DynamicRaggedShape, RowPartition
from layerflow.experimental import dlpack

# isort: split
from layerflow._src.ops.extension_type import (
    BatchableExtensionType,
    ExtensionType,
    ExtensionTypeBatchEncoder,
    ExtensionTypeSpec,
)

# TF's dispatch decorators, and why layerflow does not have them.
_ABSENT = {
    name: "TF matches a call of any public API against parameter-type signatures (and its "
    "lists of elementwise APIs) so that a decorated function takes over tf.math.add(x, y) for "
    "user types. layerflow hands only its own composite types (tf.RaggedTensor) to overrides "
    "registered inside the library (framework/composite_dispatch.py); the public decorators, "
    "with TF's signature matching, are not implemented. Give your ExtensionType methods or "
    "operators instead (def __add__(self, other): ...), or call the op on its fields "
    "(tf.math.add(mt.values, 1))."
    for name in (
        "dispatch_for_api",
        "dispatch_for_unary_elementwise_apis",
        "dispatch_for_binary_elementwise_apis",
        "dispatch_for_binary_elementwise_assert_apis",
        "unregister_dispatch_for",
    )
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name == "StructuredTensor":  # loaded on first use, like the ragged package
        from layerflow._src.ops.structured import structured_tensor as st

        return st.StructuredTensor
    why = _ABSENT.get(name)
    if why is None:
        raise AttributeError(f"module 'layerflow.experimental' has no attribute {name!r}")
    raise AttributeError(f"layerflow has no tf.experimental.{name}: {why}")
