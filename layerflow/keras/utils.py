"""`tf.keras.utils`: helpers gathered from where they are implemented (imported on first use)."""

import importlib

_SERIALIZATION = "layerflow._src.keras.serialization"
_NUMERIC = "layerflow._src.keras.utils.numeric"
_IO = "layerflow._src.keras.utils.io_utils"
_LAYER_UTILS = "layerflow._src.keras.utils.layer_utils"
_ADAPTER = "layerflow._src.keras.training.data_adapter"
_SEQUENCE = "layerflow._src.keras.utils.sequence"
_IMAGE = "layerflow._src.keras.utils.image_utils"

_NAMES = {
    "register_keras_serializable": (_SERIALIZATION, "register_keras_serializable"),
    "get_registered_object": (_SERIALIZATION, "get_registered_object"),
    "get_registered_name": (_SERIALIZATION, "get_registered_name"),
    "serialize_keras_object": (_SERIALIZATION, "serialize_keras_object"),
    "deserialize_keras_object": (_SERIALIZATION, "deserialize_keras_object"),
    "custom_object_scope": (_SERIALIZATION, "custom_object_scope"),
    "CustomObjectScope": (_SERIALIZATION, "custom_object_scope"),
    "to_categorical": (_NUMERIC, "to_categorical"),
    "normalize": (_NUMERIC, "normalize"),
    "set_random_seed": (_NUMERIC, "set_random_seed"),
    "plot_history": ("layerflow._src.keras.utils.plotting", "plot_history"),
    "SidecarEvaluator": ("layerflow._src.keras.training.sidecar", "SidecarEvaluator"),
    "get_file": ("layerflow._src.keras.utils.data_utils", "get_file"),
    "Progbar": ("layerflow._src.keras.utils.progress", "Progbar"),
    "is_interactive_logging_enabled": (_IO, "is_interactive_logging_enabled"),
    "enable_interactive_logging": (_IO, "enable_interactive_logging"),
    "disable_interactive_logging": (_IO, "disable_interactive_logging"),
    "get_custom_objects": (_SERIALIZATION, "get_custom_objects"),
    "to_ordinal": (_NUMERIC, "to_ordinal"),
    "pad_sequences": ("layerflow._src.keras.utils.sequences", "pad_sequences"),
    "TimedThread": ("layerflow._src.keras.utils.timed_threads", "TimedThread"),
    "legacy": ("layerflow._src.keras.utils.legacy", None),
    "get_source_inputs": (_LAYER_UTILS, "get_source_inputs"),
    "warmstart_embedding_matrix": (_LAYER_UTILS, "warmstart_embedding_matrix"),
    "pack_x_y_sample_weight": (_ADAPTER, "pack_x_y_sample_weight"),
    "Sequence": (_SEQUENCE, "Sequence"),
    "model_to_dot": ("layerflow._src.keras.utils.vis_utils", "model_to_dot"),
    "plot_model": ("layerflow._src.keras.utils.vis_utils", "plot_model"),
    "load_img": (_IMAGE, "load_img"),
    "img_to_array": (_IMAGE, "img_to_array"),
    "array_to_img": (_IMAGE, "array_to_img"),
    "save_img": (_IMAGE, "save_img"),
    "image_dataset_from_directory": (
        "layerflow._src.keras.utils.image_dataset", "image_dataset_from_directory"
    ),
    "split_dataset": ("layerflow._src.keras.utils.dataset_utils", "split_dataset"),
    "text_dataset_from_directory": (
        "layerflow._src.keras.utils.text_dataset", "text_dataset_from_directory"
    ),
    "timeseries_dataset_from_array": (
        "layerflow._src.keras.utils.dataset_utils", "timeseries_dataset_from_array"
    ),
    "SequenceEnqueuer": (_SEQUENCE, "SequenceEnqueuer"),
    "OrderedEnqueuer": (_SEQUENCE, "OrderedEnqueuer"),
    "GeneratorEnqueuer": (_SEQUENCE, "GeneratorEnqueuer"),
    "unpack_x_y_sample_weight": (_ADAPTER, "unpack_x_y_sample_weight"),
    "StepsPerExecutionTuner": (
        "layerflow._src.keras.utils.steps_per_execution_tuning", "StepsPerExecutionTuner"
    ),
    "audio_dataset_from_directory": (
        "layerflow._src.keras.utils.audio_dataset", "audio_dataset_from_directory"
    ),
    "FeatureSpace": ("layerflow._src.keras.utils.feature_space", "FeatureSpace"),
    "experimental": ("layerflow.keras._utils_experimental", None),
}  # fmt: skip


def __getattr__(name):  # noqa: ANN001, ANN202 - module hook
    target = _NAMES.get(name)
    if target is None:
        raise AttributeError(f"module 'layerflow.keras.utils' has no attribute {name!r}")
    module = importlib.import_module(target[0])
    return module if target[1] is None else getattr(module, target[1])
