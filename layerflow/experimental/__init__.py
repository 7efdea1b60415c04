"""`tf.experimental`: `Optional`, DLPack exchange (`tf.experimental.dlpack`), and the ragged
shape classes `DynamicRaggedShape` and `RowPartition`."""

from layerflow._src.ops.optional_ops import Optional
from layerflow._src.ops.ragged.ragged_shape import DynamicRaggedShape, RowPartition
from layerflow.experimental import dlpack
