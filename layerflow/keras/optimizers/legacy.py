"""`tf.keras.optimizers.legacy`: the same optimizers under TF 2.11's names (tf_keras's legacy
OptimizerV2 classes are the current ones here)."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.optimizers import (
    SGD,
    Adadelta,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Ftrl,
    Nadam,
    Optimizer,
    RMSprop,
)
