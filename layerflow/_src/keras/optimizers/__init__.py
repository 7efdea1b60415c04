"""Optimizers: the `Optimizer` base, the built-in rules, schedules, and `get`."""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import serialization
from layerflow._src.keras.optimizers import schedules
from layerflow._src.keras.optimizers.optimizer import Optimizer
from layerflow._src.keras.optimizers.rules import SGD, Adagrad, Adam, AdamW, RMSprop
from layerflow._src.keras.optimizers.rules_extra import (
    Adadelta,
    Adafactor,
    Adamax,
    Ftrl,
    Lion,
    Nadam,
)

_BY_NAME = {
    "sgd": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
    "adadelta": Adadelta,
    "adamax": Adamax,
    "nadam": Nadam,
    "ftrl": Ftrl,
}
# Resolved by their class name only (registered in tf_keras, absent from its table of
# lower-case names): `get("lion")` is an error there too.
_BY_CLASS_NAME_ONLY = {"Adafactor": Adafactor, "Lion": Lion}


def get(identifier: Any, **kwargs: Any) -> Optimizer:
    """An optimizer from an instance, a name (`"sgd"`, `"adam"`, ...) or a config dict.

    >>> type(get("adam")).__name__
    'Adam'
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                f"Unknown optimizer {identifier!r}. Known names: {sorted(_BY_NAME)}; or pass an "
                "optimizer instance such as tf.keras.optimizers.SGD(learning_rate=0.1)."
            )
        return cls(**kwargs)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(
        f"Could not interpret optimizer identifier {identifier!r}: pass a name such as 'sgd' "
        "or an Optimizer instance."
    )


def serialize(optimizer: Optimizer) -> dict[str, Any]:
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Optimizer:
    """An optimizer from `serialize`'s output; its class must be built in, registered, or in
    `custom_objects` (nothing else is looked up).

    >>> type(deserialize({"class_name": "Adam", "config": {}})).__name__
    'Adam'
    """
    table = {c.__name__: c for c in _BY_NAME.values()} | _BY_CLASS_NAME_ONLY
    name = config.get("class_name") if isinstance(config, dict) else None
    if isinstance(name, str) and name.lower() in _BY_NAME and name not in (custom_objects or {}):
        table[name] = _BY_NAME[name.lower()]  # Keras accepts 'adam' and 'ADAM' too
    if name == "LossScaleOptimizer":  # (it wraps this package's optimizers: imported here)
        from layerflow._src.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer

        table[name] = LossScaleOptimizer
    return serialization.deserialize_keras_object(
        config, table, custom_objects, printable_module_name="optimizer"
    )


__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adafactor",
    "Adamax",
    "Ftrl",
    "Lion",
    "Nadam",
    "schedules",
    "get",
    "serialize",
    "deserialize",
]
