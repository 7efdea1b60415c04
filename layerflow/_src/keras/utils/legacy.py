"""`tf.keras.utils.legacy`: Keras 2's legacy (`class_name`/`config`) serialization.

Both go through `keras/serialization.py`: only Keras built-ins and registered or custom objects
resolve, never arbitrary import paths.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import serialization


def serialize_keras_object(instance: Any) -> Any:
    """`{'class_name': ..., 'config': ...}` for an object, its name for a function.

    >>> import layerflow as tf
    >>> tf.keras.utils.legacy.serialize_keras_object(tf.keras.initializers.Constant(2.0))
    {'class_name': 'Constant', 'config': {'value': 2.0}}
    """
    return serialization.serialize_keras_object(instance)


def deserialize_keras_object(identifier: Any, module_objects: dict | None = None,
                             custom_objects: dict | None = None,
                             printable_module_name: str = "object") -> Any:  # fmt: skip
    """Rebuild an object from `serialize_keras_object`'s output, through the safe resolver."""
    return serialization.deserialize_keras_object(
        identifier, module_objects, custom_objects, printable_module_name
    )
