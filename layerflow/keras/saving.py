"""`tf.keras.saving`: whole-model files and the custom-object registry."""

from layerflow._src.keras.saving.config_json import ModelFileError
from layerflow._src.keras.saving.saving_lib import load_model, save_model
from layerflow._src.keras.serialization import (
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)

__all__ = [
    "ModelFileError",
    "custom_object_scope",
    "deserialize_keras_object",
    "get_custom_objects",
    "get_registered_name",
    "get_registered_object",
    "load_model",
    "register_keras_serializable",
    "save_model",
    "serialize_keras_object",
]
