"""`tf.keras.models`: Sequential, Model, clone_model, and whole-model loading."""

import importlib

from layerflow._src.keras.engine.cloning import clone_model
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.engine.sequential import Sequential
from layerflow.keras import _models_experimental as experimental

__all__ = [
    "Model",
    "Sequential",
    "clone_model",
    "load_model",
    "model_from_json",
    "save_model",
    "model_from_config",
    "model_from_yaml",
    "experimental",
]


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True, **kwargs):  # noqa: A002, ANN001, ANN201
    """Load a model saved by `model.save(path)` (implemented in layerflow._src.keras.saving)."""
    saving = importlib.import_module("layerflow._src.keras.saving.saving_lib")
    return saving.load_model(filepath, custom_objects=custom_objects, compile=compile,
                             safe_mode=safe_mode, **kwargs)  # fmt: skip


def model_from_json(json_string, custom_objects=None):  # noqa: ANN001, ANN201
    """A model from `model.to_json()` (implemented in layerflow._src.keras.saving)."""
    saving = importlib.import_module("layerflow._src.keras.saving.model_config")
    return saving.model_from_json(json_string, custom_objects=custom_objects)


def save_model(model, filepath, overwrite=True, **kwargs):  # noqa: ANN001, ANN201
    """Save `model` to `filepath` (same as `model.save(filepath)`)."""
    saving = importlib.import_module("layerflow._src.keras.saving.saving_lib")
    return saving.save_model(model, filepath, overwrite=overwrite, **kwargs)


def model_from_config(config, custom_objects=None):  # noqa: ANN001, ANN201
    """A model from `{"class_name", "config"}` (implemented in layerflow._src.keras.saving)."""
    saving = importlib.import_module("layerflow._src.keras.saving.model_config")
    return saving.model_from_config(config, custom_objects=custom_objects)


def model_from_yaml(yaml_string, custom_objects=None):  # noqa: ANN001, ANN201
    """Removed in TF 2.6: raises RuntimeError, as tf_keras does (use model_from_json)."""
    saving = importlib.import_module("layerflow._src.keras.engine.model_api")
    return saving.model_from_yaml(yaml_string, custom_objects=custom_objects)
