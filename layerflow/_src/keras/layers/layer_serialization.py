"""`tf.keras.layers.serialize` / `deserialize`: a layer <-> `{"class_name", "config"}`.

The built-in classes are read from the `layers` package, which therefore does not import this
module (the facade `tf.keras.layers` re-exports `serialize`/`deserialize` from here).
"""

from __future__ import annotations

import inspect
from typing import Any

from layerflow._src.keras import layers as builtin_layers
from layerflow._src.keras import serialization
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.engine.sequential import Sequential


def _module_objects() -> dict[str, Any]:
    """Every built-in layer class by name, plus the two model classes."""
    objects = {
        name: obj
        for name, obj in vars(builtin_layers).items()
        if inspect.isclass(obj) and issubclass(obj, Layer)
    }
    objects.update({"Sequential": Sequential, "Model": Model})
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
