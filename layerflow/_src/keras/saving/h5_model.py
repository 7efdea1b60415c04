"""Keras 2's whole-model HDF5 file (`model.save("m.h5")`), readable by tf_keras and back.

The layout is tf_keras's `legacy/hdf5_format.save_model_to_hdf5`: the root's attributes
`model_config` (JSON `{"class_name", "config"}`, the model's Keras 2 `get_config()`),
`training_config` (JSON of the compile arguments, when compiled), `keras_version` and `backend`;
the group `model_weights` holds one group per layer (`layer_names` attribute, model order), each
with its weights as datasets named by the variables' names (`weight_names` attribute), trainable
first, then non-trainable. Loading matches layers with weights by order, as tf_keras does.

A file to load is untrusted: it is walked first (`h5_weights._walk`: no links, external or
virtual storage), the config is size- and depth-checked JSON whose names resolve only through
`serialization.resolve`, weight names must stay inside their layer's group, every dataset's shape
and dtype is checked against the model and against the file's size, and every problem is
reported at once; on any problem nothing is assigned.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from layerflow._src.keras import serialization
from layerflow._src.keras.saving import config_json, h5_weights, model_config, saving_lib
from layerflow._src.saving.weights_file import WeightsFileError
from layerflow._src.utils.files import atomic_write

KERAS_VERSION = "2.15.0"  # the Keras 2 format version tf_keras writes and reads
H5_SUFFIXES = (".h5", ".hdf5")


def is_h5_path(filepath: Any, save_format: Any = None) -> bool:
    if save_format in ("h5", "hdf5"):
        return True
    try:
        path = os.fspath(filepath)
    except TypeError:
        return False
    return isinstance(path, str) and path.endswith(H5_SUFFIXES) and not path.endswith(".weights.h5")


def _model_document(model: Any) -> dict[str, Any]:
    from layerflow._src.keras.saving import functional_config

    try:
        return functional_config.layer_config(model)
    except NotImplementedError as err:
        raise NotImplementedError(
            f"Cannot save the model '{model.name}' to HDF5: {err} Or save only its weights "
            "with model.save_weights(...)."
        ) from None


def _training_config(model: Any) -> dict[str, Any]:
    compile_config = saving_lib._compile_config(model)
    opt = compile_config.get("optimizer")
    return {
        "loss": compile_config["loss"],
        "metrics": compile_config["metrics"],
        "weighted_metrics": compile_config["weighted_metrics"],
        "loss_weights": compile_config["loss_weights"],
        # tf_keras reads an optimizer without `is_legacy_optimizer: false` as a legacy one.
        "optimizer_config": None
        if opt is None
        else {
            "class_name": opt["class_name"],
            "config": {**opt["config"], "is_legacy_optimizer": False},
        },  # fmt: skip
    }


def _layer_weights(layer: Any) -> list[Any]:
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def save_model(model: Any, filepath: Any, overwrite: bool = True,
               include_optimizer: bool = True) -> None:  # fmt: skip
    """Write `model` as Keras 2's whole-model HDF5 file (see the module docstring)."""
    h5py = h5_weights._h5py()
    path = os.fspath(filepath)
    if not model.built:
        raise ValueError(
            f"Model '{model.name}' is not built, so it has no weights to save. Call it on data "
            "or build it with model.build(input_shape) first."
        )
    document = _model_document(model)
    with atomic_write(path, overwrite) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = KERAS_VERSION
        f.attrs["model_config"] = json.dumps(document).encode("utf8")
        if include_optimizer and getattr(model, "_is_compiled", False):
            f.attrs["training_config"] = json.dumps(_training_config(model)).encode("utf8")
        group = f.create_group("model_weights")
        layers = list(model.layers)
        group.attrs["layer_names"] = [layer.name.encode("utf8") for layer in layers]
        group.attrs["backend"] = "tensorflow"
        group.attrs["keras_version"] = KERAS_VERSION
        for layer in layers:
            g = group.create_group(layer.name)
            weights = _layer_weights(layer)
            names = _unique_names(weights)
            g.attrs["weight_names"] = [n.encode("utf8") for n in names]
            for name, var in zip(names, weights):
                value = var.numpy()
                g.create_dataset(name, value.shape, dtype=value.dtype)[...] = value


def _unique_names(weights: list[Any]) -> list[str]:
    out: list[str] = []
    used: set[str] = set()
    for v in weights:
        name = v.name if v.name.endswith(":0") else v.name + ":0"
        base, i = name, 0
        while name in used:
            i += 1
            name = base.replace(":0", f"_{i}:0")
        used.add(name)
        out.append(name)
    return out


# --- loading ------------------------------------------------------------------------------------
def _text(value: Any) -> Any:
    return value.decode("utf8") if isinstance(value, bytes) else value


def _names(path: str, attrs: Any, key: str, where: str) -> list[str]:
    raw = attrs.get(key)
    if raw is None:
        raise config_json.damaged(path, f"{where} has no '{key}' attribute")
    names = [_text(n) for n in np.asarray(raw).reshape(-1).tolist()]
    for n in names:
        if not isinstance(n, str) or not n or n.startswith("/"):
            raise config_json.damaged(path, f"{where} names {str(n)[:80]!r}, not a member name")
    return names


def load_model(filepath: Any, custom_objects: dict | None = None, compile: bool = True,  # noqa: A002
               safe_mode: bool = True) -> Any:  # fmt: skip
    """Read a Keras 2 whole-model HDF5 file (tf_keras's or ours); see the module docstring."""
    h5py = h5_weights._h5py()
    path = os.fspath(filepath)
    f = h5_weights._open(path)
    with f:
        entries = dict(h5_weights._walk(f, path, h5py))  # refuses links and outside storage
        raw = f.attrs.get("model_config")
        if raw is None:
            raise config_json.damaged(
                path,
                "it has no 'model_config' attribute (a weights-only HDF5 file? use "
                "model.load_weights)",  # fmt: skip
            )
        raw = raw if isinstance(raw, bytes | str) else bytes(np.asarray(raw))
        if len(raw) > saving_lib.MAX_JSON_BYTES:
            raise config_json.damaged(path, "its model_config is larger than allowed")
        document = config_json.loads(raw, path, "its model_config")
        if isinstance(document, dict) and document.get("class_name") == "Sequential":
            document = _with_sequential_build(document)
        with (
            serialization.custom_object_scope(custom_objects),
            serialization.safe_mode_scope(safe_mode),
        ):
            _, model = model_config.model_from_document(document, custom_objects, path)
        if "model_weights" not in f:
            raise config_json.damaged(path, "it has no 'model_weights' group")
        _load_weights(f["model_weights"], model, path, entries, f.id.get_filesize(), h5py)
        training = f.attrs.get("training_config")
    if compile and training is not None:
        config = config_json.loads(training, path, "its training_config")
        if isinstance(config, dict):
            compile_config = {
                "optimizer": _builtin_optimizer(config.get("optimizer_config")),
                "loss": config.get("loss"),
                "metrics": _flat_metrics(config.get("metrics")),
                "weighted_metrics": _flat_metrics(config.get("weighted_metrics")),
                "loss_weights": config.get("loss_weights"),
            }
            compile_config = model_config.normalize(compile_config)
            with serialization.custom_object_scope(custom_objects), (
                serialization.safe_mode_scope(safe_mode)
            ):  # fmt: skip
                saving_lib._compile_from_config(model, compile_config, custom_objects, path)
    return model


def is_legacy_weights_file(filepath: Any) -> bool:
    """Whether `filepath` is Keras 2's weights-only HDF5 file (`layer_names` on its root)."""
    with h5_weights._open(os.fspath(filepath)) as f:
        return "layer_names" in f.attrs


def load_legacy_weights(model: Any, filepath: Any) -> None:
    """Load Keras 2's weights-only HDF5 file (tf_keras `save_weights("w.h5")`, and the
    pretrained `tf.keras.applications` files) into `model`, layer by layer in order, as Keras 2
    does; everything is validated first and nothing is assigned on any mismatch."""
    h5py = h5_weights._h5py()
    path = os.fspath(filepath)
    with h5_weights._open(path) as f:
        entries = dict(h5_weights._walk(f, path, h5py))  # refuses links and outside storage
        _load_weights(f, model, path, entries, f.id.get_filesize(), h5py)


def _builtin_optimizer(config: Any) -> Any:
    """tf_keras writes its Keras 2 optimizers as "Custom>Adam" in HDF5 files: read those as
    the built-in optimizer unless the name was registered as a custom object here."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        return config
    name = config["class_name"]
    if name.startswith("Custom>") and serialization.get_registered_object(name) is None:
        return {**config, "class_name": name[len("Custom>") :]}
    return config


def _flat_metrics(metrics: Any) -> Any:
    # tf_keras writes a single-output model's metrics as [[...]] (one list per output).
    if isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], list):
        metrics = metrics[0]
    if isinstance(metrics, list):
        return [_metric_wrapper(m) for m in metrics]
    return metrics


def _metric_wrapper(metric: Any) -> Any:
    """tf_keras's `MeanMetricWrapper` of a built-in function, as the name `compile` takes:
    "accuracy" (the variant follows the loss) or the function's name."""
    if not (isinstance(metric, dict) and metric.get("class_name") == "MeanMetricWrapper"):
        return metric
    config = metric.get("config") if isinstance(metric.get("config"), dict) else {}
    fn, name = config.get("fn"), config.get("name")
    if isinstance(fn, str):
        if name in ("accuracy", "acc") and fn.endswith("accuracy"):
            return name
        return fn
    return metric


def _with_sequential_build(document: dict[str, Any]) -> dict[str, Any]:
    """A Sequential built without an Input keeps its input shape as `build_input_shape`."""
    config = document.get("config")
    if isinstance(config, dict) and config.get("build_input_shape") is not None:
        document = dict(document)
        document["build_config"] = {"input_shape": config["build_input_shape"]}
    return document


def _load_weights(group: Any, model: Any, path: str, entries: dict, size: int,
                  h5py: Any) -> None:  # fmt: skip
    names = _names(path, group.attrs, "layer_names", "model_weights")
    saved = []
    for name in names:
        g = group.get(name)
        if not isinstance(g, h5py.Group):
            raise config_json.damaged(path, f"model_weights has no group '{name}'")
        weight_names = _names(path, g.attrs, "weight_names", f"the group '{name}'") if len(
            g.attrs.get("weight_names", [])
        ) else []  # fmt: skip
        if weight_names:
            saved.append((name, g, weight_names))
    layers = [layer for layer in model.layers if _layer_weights(layer)]
    if len(layers) != len(saved):
        raise WeightsFileError(
            f"Layer count mismatch when loading weights from file '{path}'. Model expected "
            f"{len(layers)} layers, found {len(saved)} saved layers."
        )
    problems: list[str] = []
    plan: list[tuple[Any, Any]] = []
    for layer, (name, g, weight_names) in zip(layers, saved):
        weights = _layer_weights(layer)
        if len(weights) != len(weight_names):
            problems.append(
                f"layer '{layer.name}' has {len(weights)} weights, the file's '{name}' has "
                f"{len(weight_names)}"
            )
            continue
        for var, wname in zip(weights, weight_names):
            data = g.get(wname)
            if not isinstance(data, h5py.Dataset):
                problems.append(f"'{name}/{wname}' is not a dataset in the file")
                continue
            if data.dtype.kind not in "biuf":
                problems.append(f"'{name}/{wname}' has dtype {data.dtype}, not a number")
            elif tuple(data.shape) != tuple(var.shape):
                problems.append(
                    f"'{name}/{wname}' has shape {tuple(data.shape)}, but '{var.name}' of layer "
                    f"'{layer.name}' has shape {tuple(var.shape)}"
                )
            elif data.compression is None and data.size * data.dtype.itemsize > size:
                problems.append(f"'{name}/{wname}' claims more bytes than the whole file has")
            else:
                plan.append((var, data))
    if problems:
        raise WeightsFileError(
            f"Cannot load the weights of '{path}' into model '{model.name}': "
            + "; ".join(problems)
            + ". Nothing was assigned."
        )
    values = [(var, np.asarray(data[()]).astype(var.dtype.np, copy=False)) for var, data in plan]
    for var, value in values:
        var.assign(value)
    for layer in model._flatten_layers():
        layer.finalize_state()
