"""`tf.keras.optimizers.experimental`: the Keras 2.11+ optimizers under their TF 2.9-2.10 names
(the same classes as `tf.keras.optimizers`, as in tf_keras)."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.optimizers import (
    SGD,
    Adadelta,
    Adafactor,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Ftrl,
    Nadam,
    Optimizer,
    RMSprop,
)
