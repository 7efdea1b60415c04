"""`tf.keras`: the Keras model API. Submodules and classes are imported on first use."""

import importlib

_SUBMODULES = {
    "layers", "models", "initializers", "activations", "regularizers", "constraints", "losses",
    "optimizers", "metrics", "callbacks", "datasets", "utils", "backend", "saving",
    "mixed_precision",
    "preprocessing",
    "applications",
}  # fmt: skip

_NAMES = {
    "Model": ("layerflow._src.keras.engine.model", "Model"),
    "Sequential": ("layerflow._src.keras.engine.sequential", "Sequential"),
    "Input": ("layerflow._src.keras.engine.functional", "Input"),
    "InputSpec": ("layerflow._src.keras.engine.input_spec", "InputSpec"),
    "Layer": ("layerflow._src.keras.engine.base_layer", "Layer"),
}

__version__ = "2.10.0"

# tf_keras names that layerflow does not provide, and why.
_ABSENT = {
    "export": (
        "tf.keras.export.ExportArchive writes a TensorFlow SavedModel (a TF graph of "
        "tf.functions plus a TF checkpoint) for TF Serving/TFLite; layerflow has no TF graph "
        "runtime and no SavedModel format. Save with model.save('model.keras') (or '.h5') and "
        "load with tf.keras.models.load_model."
    ),
}


def __getattr__(name):  # noqa: ANN001, ANN202 - module hook
    if name in _SUBMODULES:
        module = importlib.import_module(f"layerflow.keras.{name}")
        globals()[name] = module
        return module
    target = _NAMES.get(name)
    if target is None:
        if name in _ABSENT:
            raise AttributeError(f"layerflow has no tf.keras.{name}: {_ABSENT[name]}")
        raise AttributeError(f"module 'layerflow.keras' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
