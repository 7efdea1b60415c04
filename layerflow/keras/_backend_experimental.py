"""`tf.keras.backend.experimental`: the switch between legacy and `tf.random.Generator` RNGs."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.backend_api.nn_api import (
    disable_tf_random_generator,
    enable_tf_random_generator,
    is_tf_random_generator_enabled,
)
