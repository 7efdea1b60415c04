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
