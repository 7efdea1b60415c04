"""`tf.config.optimizer`: TF's graph-optimizer and XLA settings (kept, with no effect here)."""

from layerflow._src.framework.runtime_config import (
    get_experimental_options,
    get_jit,
    set_experimental_options,
    set_jit,
)
