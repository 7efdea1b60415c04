"""`tf.experimental.dlpack`: zero-copy exchange with other frameworks through DLPack."""

from layerflow._src.ops.optional_ops import from_dlpack, to_dlpack
