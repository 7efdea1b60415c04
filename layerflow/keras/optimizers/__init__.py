"""`tf.keras.optimizers`: the Optimizer base class, the built-in optimizers and schedules."""

from layerflow._src.keras.optimizers import (
    SGD,
    Adadelta,
    Adafactor,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Ftrl,
    Lion,
    Nadam,
    Optimizer,
    RMSprop,
    deserialize,
    get,
    serialize,
)
from layerflow.keras.optimizers import experimental, legacy, schedules
