"""`tf.keras.layers.serialize` / `deserialize`: a layer <-> `{"class_name", "config"}`."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from layerflow._src.keras import serialization
from layerflow._src.keras.engine.base_layer import Layer


def _module_objects() -> dict[str, Any]:
    # The package imports this module, so read its namespace when called, not at import.
    package = importlib.import_module("layerflow._src.keras.layers")
    objects = {
        name: obj
        for name, obj in vars(package).items()
        if inspect.isclass(obj) and issubclass(obj, Layer)
    }
    for module, name in (("sequential", "Sequential"), ("training", "Model")):
        try:
            objects[name] = getattr(
                importlib.import_module(f"layerflow._src.keras.engine.{module}"), name
            )
        except (ImportError, AttributeError):  # engine pieces not present in a partial build
            pass
    return objects


def serialize(layer: Layer) -> dict:
    """`{"class_name": ..., "config": ...}` for a layer.

    >>> import layerflow as tf
    >>> tf.keras.layers.serialize(tf.keras.layers.Dropout(0.5, name="d"))["class_name"]
    'Dropout'
    """
    return serialization.serialize_keras_object(layer)


def deserialize(config: dict, custom_objects: dict | None = None,
                safe_mode: bool | None = None) -> Layer:  # fmt: skip
    """A new layer from `serialize`'s output (custom classes via `custom_objects`).

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.deserialize({"class_name": "RepeatVector", "config": {"n": 3}})
    >>> layer.n
    3
    """
    return serialization.deserialize_keras_object(
        config, _module_objects(), custom_objects, printable_module_name="layer",
        safe_mode=safe_mode,
    )  # fmt: skip
