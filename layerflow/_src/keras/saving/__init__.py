"""Whole-model saving (`model.save`, `tf.keras.models.load_model`): Keras 3's `.keras` zip."""

from layerflow._src.keras.saving.saving_lib import load_model, save_model

__all__ = ["load_model", "save_model"]
