"""Whole models in Keras 3's `.keras` zip: `config.json`, `metadata.json`, `model.weights.h5`.

`save_model` writes the zip atomically (temporary file, fsync, rename). The weights inside are
Keras 3's HDF5 layout when h5py is installed (the `h5` extra); without h5py they are written
as layerflow's safetensors file `model.weights.safetensors` instead (Keras cannot read that
one; layerflow reads both). `load_model` trusts nothing in the file: a damaged zip, bad or too
deeply nested JSON raise `ModelFileError` (a `WeightsFileError`), members are size-checked before
they are read, and no code from the file runs: names in the config resolve only to Keras
built-ins, registered objects and `custom_objects` (`serialization.resolve`), and Lambda layers
holding bytecode or naming any other function are refused unless `safe_mode=False`.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import tempfile
import zipfile
from typing import Any

from layerflow._src.keras import optimizers as optimizers_mod
from layerflow._src.keras import serialization
from layerflow._src.keras.losses import core as losses_mod
from layerflow._src.keras.metrics import core as metrics_mod
from layerflow._src.keras.saving import config_json, model_config
from layerflow._src.saving import restore
from layerflow._src.saving.weights_file import WeightsFileError, atomic_write

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS_H5 = "model.weights.h5"
WEIGHTS_SAFETENSORS = "model.weights.safetensors"
MAX_JSON_BYTES = 64 * 1024 * 1024
# A member may expand at most this much over its compressed size (zip bombs).
MAX_RATIO = 200


def _have_h5py() -> bool:
    try:
        import h5py  # noqa: F401
    except ImportError:
        return False
    return True


def _check_path(filepath: Any, verb: str) -> str:
    try:
        path = os.fspath(filepath)
    except TypeError:
        raise TypeError(
            f"{verb} needs a file path (str or os.PathLike), got {type(filepath).__name__}."
        ) from None
    if not path.endswith(".keras"):
        raise ValueError(
            f"{verb}: the file name must end in `.keras` (Keras 3's whole-model format), got "
            f"'{path}'. For weights only use model.save_weights(...) with any name "
            "(`.weights.h5` for Keras's HDF5 layout)."
        )
    return path


# --- saving -------------------------------------------------------------------------------------
def save_model(
    model: Any,
    filepath: Any,
    overwrite: bool = True,
    save_format: Any = None,
    include_optimizer: bool = True,
    **kwargs: Any,
) -> None:
    """Save architecture, weights and compile configuration to a `.keras` file.

    The weights go in as Keras's `model.weights.h5` when h5py is installed, otherwise as
    layerflow's `model.weights.safetensors` (which only layerflow reads).

    >>> # model.save("mlp.keras"); clone = tf.keras.models.load_model("mlp.keras")
    """
    from layerflow._src.keras.saving import h5_model  # it builds on this module: deferred

    if h5_model.is_h5_path(filepath, save_format):  # Keras 2's whole-model HDF5 (`m.h5`)
        extra = sorted(set(kwargs) - {"signatures", "options", "save_traces"})
        if extra:
            raise TypeError(f"save_model() got unexpected keyword arguments {extra}.")
        return h5_model.save_model(model, filepath, overwrite, include_optimizer)
    if save_format not in (None, "keras"):
        raise ValueError(
            f"save_format={save_format!r} is not supported: layerflow saves whole models in "
            "the `.keras` format only (save_format=None or 'keras'). For weights alone use "
            "model.save_weights(...)."
        )
    unknown = sorted(set(kwargs) - {"signatures", "options", "save_traces", "zipped"})
    if unknown:
        raise TypeError(f"save_model() got unexpected keyword arguments {unknown}.")
    path = _check_path(filepath, "save_model")
    config = model_config.serialize_model(model)
    if include_optimizer and getattr(model, "_is_compiled", False):
        config["compile_config"] = _compile_config(model)
    metadata = {
        "keras_version": "3",
        "layerflow_version": _version(),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
    }
    with tempfile.TemporaryDirectory() as work:
        if _have_h5py():
            from layerflow._src.keras.saving import h5_weights

            weights_name = WEIGHTS_H5
            h5_weights.save(model, os.path.join(work, weights_name))
        else:
            weights_name = WEIGHTS_SAFETENSORS
            restore.save(model, os.path.join(work, weights_name))
        with atomic_write(path, overwrite) as tmp, zipfile.ZipFile(tmp, "w") as zf:
            zf.writestr(METADATA, json.dumps(metadata))
            zf.writestr(CONFIG, json.dumps(config))
            zf.write(os.path.join(work, weights_name), weights_name)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("layerflow")
    except Exception:  # not installed as a distribution (a source checkout)
        return "unknown"


def _compile_config(model: Any) -> dict[str, Any]:
    optimizer = model._optimizer
    opt = optimizers_mod.serialize(optimizer) if optimizer is not None else None
    if opt is not None:
        # Keras 2 keys Keras 3's optimizers refuse; ours take their defaults without them.
        inner = {k: v for k, v in opt["config"].items()
                 if k not in ("jit_compile", "is_legacy_optimizer")}  # fmt: skip
        opt = {"module": "keras.optimizers", "class_name": opt["class_name"], "config": inner,
               "registered_name": None}  # fmt: skip
    return {
        "optimizer": opt,
        "loss": _serialize_tree(model._loss_identifier, losses_mod.serialize),
        "loss_weights": model._compiled_loss._user_weights,
        "metrics": _serialize_tree(model._compiled_metrics._user, _metric),
        "weighted_metrics": _serialize_tree(model._compiled_metrics._user_weighted, _metric),
        "run_eagerly": model._run_eagerly,
        "steps_per_execution": model._steps_per_execution,
        "jit_compile": model._jit_compile,
    }


def _metric(m: Any) -> Any:
    if isinstance(m, metrics_mod.Metric):
        return metrics_mod.serialize(m)
    return serialization.serialize_keras_object(m) if callable(m) else m


def _serialize_tree(value: Any, one: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {k: _serialize_tree(v, one) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_serialize_tree(v, one) for v in value]
    return one(value)


# --- loading ------------------------------------------------------------------------------------
_damaged = config_json.damaged


def _member(zf: zipfile.ZipFile, path: str, name: str, limit: int | None = None) -> zipfile.ZipInfo:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise _damaged(path, f"it has no '{name}'") from None
    if limit is not None and info.file_size > limit:
        raise _damaged(path, f"'{name}' claims {info.file_size} bytes, over the {limit} allowed")
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_RATIO * max(
        info.compress_size, 1024
    ):
        raise _damaged(path, f"'{name}' expands {info.file_size} bytes from "
                       f"{info.compress_size} (a zip bomb?)")  # fmt: skip
    return info


def _read_json(zf: zipfile.ZipFile, path: str, name: str) -> Any:
    info = _member(zf, path, name, MAX_JSON_BYTES)
    return config_json.loads(zf.read(info), path, f"'{name}'")


def load_model(
    filepath: Any,
    custom_objects: dict | None = None,
    compile: bool = True,  # noqa: A002 - Keras's argument name
    safe_mode: bool = True,
    **kwargs: Any,
) -> Any:
    """Load a model saved by `model.save("....keras")` (layerflow's or Keras 3's).

    Custom classes are found through `custom_objects`, `custom_object_scope` or
    `@tf.keras.utils.register_keras_serializable`. With `safe_mode=True` (the default) nothing
    in the file can run code: every name resolves only to Keras built-ins, registered objects and
    `custom_objects`, and a Lambda layer holding bytecode or any other function is refused.
    A damaged file, or a config nested too deeply, raises `ModelFileError` naming the file.

    >>> # clone = tf.keras.models.load_model("mlp.keras"); clone(X)
    """
    unknown = sorted(set(kwargs) - {"options"})
    if unknown:
        raise TypeError(f"load_model() got unexpected keyword arguments {unknown}.")
    from layerflow._src.keras.saving import h5_model  # it builds on this module: deferred

    if h5_model.is_h5_path(filepath):  # Keras 2's whole-model HDF5 (`m.h5`)
        return h5_model.load_model(filepath, custom_objects, compile, safe_mode)
    path = _check_path(filepath, "load_model")
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model file at '{path}'. Check the path.")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise _damaged(path, f"it is not a readable zip archive ({e})") from None
    with zf, tempfile.TemporaryDirectory() as work:
        try:
            config = _read_json(zf, path, CONFIG)
            names = set(zf.namelist())
            weights_name = WEIGHTS_H5 if WEIGHTS_H5 in names else WEIGHTS_SAFETENSORS
            info = _member(zf, path, weights_name)
            weights_path = os.path.join(work, weights_name)
            with zf.open(info) as src, open(weights_path, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            if isinstance(e, WeightsFileError):
                raise
            raise _damaged(path, f"reading the archive failed ({type(e).__name__}: {e})") from None
        with (
            serialization.custom_object_scope(custom_objects),
            serialization.safe_mode_scope(safe_mode),
        ):
            normalized, model = model_config.model_from_document(config, custom_objects, path)
        if weights_name == WEIGHTS_H5:
            from layerflow._src.keras.saving import h5_weights

            h5_weights.load(model, weights_path)
        else:
            restore.load(model, weights_path)
    compile_config = normalized.get("compile_config") if isinstance(normalized, dict) else None
    if compile and compile_config:
        with (
            serialization.custom_object_scope(custom_objects),
            serialization.safe_mode_scope(safe_mode),
        ):
            _compile_from_config(model, compile_config, custom_objects, path)
    return model


def _compile_from_config(model: Any, config: dict, custom_objects: dict | None, path: str) -> None:
    try:
        optimizer = config.get("optimizer")
        if isinstance(optimizer, dict):
            optimizer = optimizers_mod.deserialize(optimizer, custom_objects)
        elif optimizer is not None and not isinstance(optimizer, str):
            raise TypeError(f"the optimizer must be a name or a config dict, got {optimizer!r}")
        loss = _deserialize_tree(config.get("loss"), losses_mod.deserialize, custom_objects)
        metrics = _deserialize_tree(config.get("metrics"), _metric_from, custom_objects)
        weighted = _deserialize_tree(config.get("weighted_metrics"), _metric_from, custom_objects)
        model.compile(
            optimizer=optimizer if optimizer is not None else "rmsprop",
            loss=loss,
            metrics=metrics,
            loss_weights=config.get("loss_weights"),
            weighted_metrics=weighted,
            steps_per_execution=config.get("steps_per_execution"),
        )
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"'{path}' loaded, but its compile configuration could not be restored: {e} "
            "Pass compile=False to load_model and call model.compile(...) yourself."
        ) from None


def _metric_from(config: Any, custom_objects: dict | None) -> Any:
    return metrics_mod.deserialize(config, custom_objects)


def _deserialize_tree(value: Any, one: Any, custom_objects: dict | None) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and "class_name" in value:
        return one(value, custom_objects)
    if isinstance(value, dict):
        return {k: _deserialize_tree(v, one, custom_objects) for k, v in value.items()}
    if isinstance(value, list):
        return [_deserialize_tree(v, one, custom_objects) for v in value]
    return value
