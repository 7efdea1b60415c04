"""Whole-model saving (`model.save`, `tf.keras.models.load_model`): Keras 3's `.keras` zip."""

from layerflow._src.keras.saving.config_json import ModelFileError
from layerflow._src.keras.saving.model_config import model_from_json, to_json
from layerflow._src.keras.saving.saving_lib import load_model, save_model

__all__ = ["ModelFileError", "load_model", "model_from_json", "save_model", "to_json"]
