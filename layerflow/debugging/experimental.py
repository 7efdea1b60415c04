"""`tf.debugging.experimental`: the op-by-op dump (`enable_dump_debug_info`). Re-exports only."""

from layerflow._src.autodiff.debug_dump import disable_dump_debug_info, enable_dump_debug_info
