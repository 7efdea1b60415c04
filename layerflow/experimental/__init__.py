"""`tf.experimental`: `Optional` and DLPack exchange (`tf.experimental.dlpack`)."""

from layerflow._src.ops.optional_ops import Optional
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
    name: "TF's public ops check a dispatch table on every call, so that a decorated function "
    "can take over tf.math.add(x, y) (and every other op) for user types. layerflow's ops are "
    "plain functions without that per-call hook, which keeps the eager overhead small. Give "
    "your ExtensionType methods or operators instead (def __add__(self, other): ...), or call "
    "the op on its fields (tf.math.add(mt.values, 1))."
    for name in (
        "dispatch_for_api",
        "dispatch_for_unary_elementwise_apis",
        "dispatch_for_binary_elementwise_apis",
        "dispatch_for_binary_elementwise_assert_apis",
        "unregister_dispatch_for",
    )
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    why = _ABSENT.get(name)
    if why is None:
        raise AttributeError(f"module 'layerflow.experimental' has no attribute {name!r}")
    raise AttributeError(f"layerflow has no tf.experimental.{name}: {why}")
