"""`tf.keras.backend`: global Keras settings and `clear_session`."""

from layerflow._src.keras.engine.backend_config import (
    clear_session,
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
)

__all__ = ["clear_session", "epsilon", "floatx", "image_data_format", "set_epsilon",
           "set_floatx", "set_image_data_format"]  # fmt: skip
