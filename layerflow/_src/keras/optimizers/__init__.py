"""Optimizers: the `Optimizer` base, the built-in rules, schedules, and `get`."""

from __future__ import annotations

from typing import Any

from layerflow._src.keras.optimizers import schedules
from layerflow._src.keras.optimizers.optimizer import Optimizer
from layerflow._src.keras.optimizers.rules import SGD, Adagrad, Adam, AdamW, RMSprop

_BY_NAME = {
    "sgd": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
}


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
    table = {c.__name__: c for c in _BY_NAME.values()}
    table.update(custom_objects or {})
    cls = table.get(config.get("class_name", ""))
    if cls is None:
        cls = _BY_NAME.get(str(config.get("class_name", "")).lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer class {config.get('class_name')!r}.")
    return cls.from_config(config.get("config", {}), custom_objects)


__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "schedules",
    "get",
    "serialize",
    "deserialize",
]
