"""`tf.keras.utils`: helpers gathered from where they are implemented (imported on first use)."""

import importlib

_NAMES = {
    "register_keras_serializable": ("layerflow._src.keras.serialization", "register_keras_serializable"),
    "get_registered_object": ("layerflow._src.keras.serialization", "get_registered_object"),
    "get_registered_name": ("layerflow._src.keras.serialization", "get_registered_name"),
    "serialize_keras_object": ("layerflow._src.keras.serialization", "serialize_keras_object"),
    "deserialize_keras_object": ("layerflow._src.keras.serialization", "deserialize_keras_object"),
    "custom_object_scope": ("layerflow._src.keras.serialization", "custom_object_scope"),
    "CustomObjectScope": ("layerflow._src.keras.serialization", "custom_object_scope"),
    "to_categorical": ("layerflow._src.keras.utils_numeric", "to_categorical"),
    "normalize": ("layerflow._src.keras.utils_numeric", "normalize"),
    "set_random_seed": ("layerflow._src.keras.utils_numeric", "set_random_seed"),
    "plot_history": ("layerflow._src.keras.plotting", "plot_history"),
}  # fmt: skip


def __getattr__(name):  # noqa: ANN001, ANN202 - module hook
    target = _NAMES.get(name)
    if target is None:
        raise AttributeError(f"module 'layerflow.keras.utils' has no attribute {name!r}")
    return getattr(importlib.import_module(target[0]), target[1])
