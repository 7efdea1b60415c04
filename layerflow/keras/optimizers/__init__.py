"""`tf.keras.optimizers`: the Optimizer base class, the built-in optimizers and schedules."""

from layerflow._src.keras.optimizers import (
    SGD,
    Adagrad,
    Adam,
    AdamW,
    Optimizer,
    RMSprop,
    deserialize,
    get,
    serialize,
)
from layerflow.keras.optimizers import legacy, schedules

experimental = legacy
