"""Model architecture <-> Keras 3 `config.json`: Sequential, functional and registered models.

Writing follows Keras 3's layout (`module`, `class_name`, `config`, `registered_name`,
`build_config`, and `inbound_nodes` of `__keras_tensor__` references for functional models), so
`.keras` files look like Keras's. Reading accepts both our files and Keras 3's: Keras-3-only
keys holding their default value (`quantization_config: null`, `optional: false`, dtype
policies, ...) are translated or dropped; anything else that layerflow does not support stays
in the config, so the layer's constructor names it in its error.

Names in a config (`class_name`, `registered_name`) resolve only through
`serialization.resolve`: Keras built-ins, registered objects and `custom_objects`. The `module`
key of Keras 3 configs is never used to import or look anything up.
"""

from __future__ import annotations

import json
from typing import Any

from layerflow._src.keras import serialization
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_layer import InputLayer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.engine.sequential import Sequential
from layerflow._src.keras.layers import layer_serialization
from layerflow._src.keras.saving import config_json
from layerflow._src.utils import nest

# Keras 3 config keys layerflow's classes do not take, dropped when they hold these defaults.
_KERAS3_DEFAULTS: dict[str, Any] = {
    "quantization_config": None,
    "lora_rank": None,
    "lora_alpha": None,
    "input_axes": None,
    "output_axes": None,
    "optional": False,
    "synchronized": False,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
}
_DTYPE_POLICIES = ("DTypePolicy", "FloatDTypePolicy", "Policy", "DTypePolicyMap")
_WRAPPER_KEYS = ("module", "registered_name", "shared_object_id")
_MODULES = {"Sequential": "keras", "Functional": "keras.src.models.functional", "Model": "keras"}


# --- reading: Keras 3 -> the Keras 2 shape our deserializers take --------------------------------
def normalize(value: Any) -> Any:
    """A Keras 3 config tree as `{"class_name", "config"}` dicts our deserializers accept.

    >>> normalize({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}})
    'float32'
    """
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "class_name" in value and "config" in value:
        name = value["class_name"]
        if name in _DTYPE_POLICIES and isinstance(value["config"], dict):
            return value["config"].get("name")
        if name == "__keras_tensor__":
            return value
        if name == "function" and isinstance(value["config"], str):
            # Keras 3's reference to a function: by its (registered) name, like Keras 2's.
            registered = value.get("registered_name")
            return registered if isinstance(registered, str) else value["config"]
        out = {k: normalize(v) for k, v in value.items() if k not in _WRAPPER_KEYS}
        out["class_name"] = value.get("registered_name") or name
        return out
    return {
        k: normalize(v)
        for k, v in value.items()
        if not (k in _KERAS3_DEFAULTS and v == _KERAS3_DEFAULTS[k])
    }


# --- writing --------------------------------------------------------------------------------------
def _wrap(obj: Any, config: dict[str, Any], class_name: str) -> dict[str, Any]:
    registered = serialization.get_registered_name(type(obj))
    custom = registered != type(obj).__name__
    module = _MODULES.get(class_name, "keras.layers") if not custom else type(obj).__module__
    return {
        "module": module,
        "class_name": type(obj).__name__ if custom else class_name,
        "config": config,
        "registered_name": registered if custom else None,
    }


def _layer_entry(layer: Any) -> dict[str, Any]:
    if isinstance(layer, Model):
        return serialize_model(layer)
    plain = serialization.serialize_keras_object(layer)
    return _wrap(layer, plain["config"], type(layer).__name__)


def serialize_model(model: Any) -> dict[str, Any]:
    """The `config.json` document for `model` (without compile_config).

    >>> import layerflow as tf
    >>> net = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    >>> serialize_model(net)["class_name"]
    'Sequential'
    """
    if isinstance(model, Sequential):
        layers = []
        if model._input_layer is not None:
            layers.append(_layer_entry(model._input_layer))
        layers.extend(_layer_entry(layer) for layer in model._stack)
        config = {"name": model.name, "trainable": model.trainable, "layers": layers}
        out = _wrap(model, config, "Sequential")
    elif model._is_graph_network:
        out = _wrap(model, _functional_config(model), "Functional")
    else:
        try:
            plain = serialization.serialize_keras_object(model)
        except NotImplementedError as err:
            raise NotImplementedError(
                f"Cannot save the subclassed model '{model.name}' whole: {err} Or save only its "
                "weights with model.save_weights(...)."
            ) from None
        out = _wrap(model, plain["config"], type(model).__name__)
    shape = model.__dict__.get("_build_input_shape")
    if shape is not None and not isinstance(model, Sequential | InputLayer):
        out["build_config"] = {"input_shape": _shape_list(shape)}
    elif isinstance(model, Sequential) and shape is not None and model._input_layer is None:
        out["build_config"] = {"input_shape": _shape_list(shape)}
    return out


def _shape_list(shape: Any) -> Any:
    if isinstance(shape, dict):
        return {k: _shape_list(v) for k, v in shape.items()}
    if (
        isinstance(shape, list | tuple)
        and shape
        and not all(d is None or isinstance(d, int) for d in shape)
    ):
        return [_shape_list(s) for s in shape]
    return [None if d is None else int(d) for d in shape]


def _functional_config(model: Any) -> dict[str, Any]:
    nodes_of: dict[int, list[Any]] = {}
    for node in model._graph_nodes:
        nodes_of.setdefault(id(node.layer), []).append(node)

    def ref(kt: KerasTensor) -> list[Any]:
        layer, _, tensor_index = kt._keras_history
        if isinstance(layer, InputLayer):
            return [layer.name, 0, tensor_index]
        index = next(
            i
            for i, n in enumerate(nodes_of[id(layer)])
            if any(t is kt for t in nest.flatten(n.outputs))
        )
        return [layer.name, index, tensor_index]

    def tensor(value: Any) -> Any:
        if isinstance(value, KerasTensor):
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": _shape_list(value.shape), "dtype": value.dtype.name,
                               "keras_history": ref(value)}}  # fmt: skip
        return value

    layers = []
    for layer in _graph_layers(model):
        entry = _layer_entry(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            {"args": [nest.map_structure(tensor, n.inputs)]
                     + [nest.map_structure(tensor, a) for a in n.args],
             "kwargs": {k: nest.map_structure(tensor, v) for k, v in n.kwargs.items()}}
            for n in nodes_of.get(id(layer), [])
        ]  # fmt: skip
        layers.append(entry)
    inputs = nest.map_structure(ref, model._graph_inputs)
    outputs = nest.map_structure(ref, model._graph_outputs)
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": inputs, "output_layers": outputs}  # fmt: skip


def _graph_layers(model: Any) -> list[Any]:
    from layerflow._src.keras.engine import functional

    return functional.graph_layers(model)


# --- reading --------------------------------------------------------------------------------------
def _layer_objects(custom_objects: dict | None) -> dict[str, Any]:
    objects = dict(layer_serialization._module_objects())
    objects["InputLayer"] = InputLayer
    from layerflow._src.keras.engine.functional import TFOpLambda

    objects["TFOpLambda"] = TFOpLambda  # an op by name, resolved by tf_op_by_name only
    # Sequential, Functional and Model configs are rebuilt by deserialize_model, never by a
    # constructor: a bare `Model` has no call().
    for name in ("Sequential", "Functional", "Model"):
        objects.pop(name, None)
    return objects


def model_from_document(
    document: Any, custom_objects: dict | None, path: str | None
) -> tuple[Any, Any]:
    """`(normalized document, model)` for a parsed `config.json` (or `to_json()`) document.

    `path` names the file in errors (None: a JSON string). The document must already be within
    `config_json.MAX_DEPTH`; a RecursionError left anyway (a config nesting models in models)
    becomes `ModelFileError`.
    """
    try:
        normalized = normalize(document)
        return normalized, deserialize_model(normalized, custom_objects)
    except RecursionError:
        raise config_json.damaged(path, "its config nests too deeply to rebuild") from None
    except (KeyError, IndexError, AttributeError) as e:
        # A key, index or attribute the config promised is not there: the document is malformed.
        raise config_json.damaged(
            path, f"its config is malformed ({type(e).__name__}: {str(e)[:200]})"
        ) from e


def model_from_json(json_string: str, custom_objects: dict | None = None) -> Any:
    """A new model from `model.to_json()` (or tf.keras's JSON); weights are fresh.

    Names in the JSON resolve only to Keras built-ins, registered objects and `custom_objects`;
    Lambda layers whose function is anything else are refused unless the call runs inside
    `safe_mode_scope(False)`.

    >>> import layerflow as tf
    >>> net = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    >>> tf.keras.models.model_from_json(net.to_json()).output_shape
    (None, 2)
    """
    if not isinstance(json_string, str | bytes):
        raise TypeError(
            f"model_from_json takes the JSON string of model.to_json(), got "
            f"{type(json_string).__name__}."
        )
    document = config_json.loads(json_string, None, "the JSON")
    with serialization.custom_object_scope(custom_objects):
        return model_from_document(document, custom_objects, None)[1]


def model_from_config(config: Any, custom_objects: dict | None = None) -> Any:
    """A model (or layer) from `{"class_name", "config"}` (Keras 2's `model_from_config`).

    >>> import layerflow as tf
    >>> net = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    >>> doc = {"class_name": "Sequential", "config": net.get_config()}
    >>> tf.keras.models.model_from_config(doc).output_shape
    (None, 2)
    """
    if isinstance(config, list):
        raise TypeError(
            "`model_from_config` expects a dictionary, not a list. Received: "
            f"config={str(config)[:200]}. Did you meant to use `Sequential.from_config(config)`?"
        )
    if not isinstance(config, dict):
        raise TypeError(f"`model_from_config` expects a dictionary, got {type(config).__name__}.")
    with serialization.custom_object_scope(custom_objects):
        return model_from_document(config, custom_objects, None)[1]


def to_json(model: Any, **kwargs: Any) -> str:
    """`model`'s architecture as a JSON string (`json.dumps` keyword arguments pass through)."""
    return json.dumps(serialize_model(model), **kwargs)


def deserialize_model(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """Rebuild a model (or layer) from a normalized `config.json` document."""
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ValueError(
            f"The model config is not a {{'class_name', 'config'}} document: {str(config)[:200]}"
        )
    name, inner = config["class_name"], config["config"]
    if not isinstance(inner, dict):
        raise TypeError(
            f"The config of {str(name)[:80]!r} must be a dict, got {type(inner).__name__}."
        )
    if name == "Sequential":
        layers = [_layer(spec, custom_objects) for spec in _list(inner, "layers", name)]
        model = Sequential(name=inner.get("name"))
        for layer in layers:
            model.add(layer)
    elif name in ("Functional", "Model"):
        if "input_layers" not in inner or "output_layers" not in inner:
            raise TypeError(
                f"The config of a functional model ({name!r}) needs 'layers', 'input_layers' and "
                f"'output_layers'; it has {sorted(map(str, inner))[:10]}."
            )
        model = _functional_from_config(inner, custom_objects)
    else:
        model = _layer(config, custom_objects)
    if not isinstance(model, Layer):
        raise TypeError(
            f"The model config names {str(name)[:80]!r}, which gave a {type(model).__name__}, "
            "not a Keras model or layer."
        )
    build = config.get("build_config") or {}
    if not isinstance(build, dict):
        raise TypeError(f"The build_config of {str(name)[:80]!r} must be a dict, got {build!r}.")
    if not model.built and build.get("input_shape") is not None:
        model.build(_shape_tuple(build["input_shape"]))
    return model


def _shape_tuple(shape: Any) -> Any:
    if isinstance(shape, dict):
        return {k: _shape_tuple(v) for k, v in shape.items()}
    if shape and isinstance(shape[0], list | dict):
        return [_shape_tuple(s) for s in shape]
    return tuple(shape)


def _list(inner: dict[str, Any], key: str, owner: Any) -> list[Any]:
    value = inner.get(key, [])
    if not isinstance(value, list):
        raise TypeError(
            f"The {key!r} of {str(owner)[:80]!r} must be a list, got {type(value).__name__}."
        )
    return value


def _layer(spec: dict[str, Any], custom_objects: dict | None) -> Any:
    if not isinstance(spec, dict) or "class_name" not in spec or "config" not in spec:
        raise TypeError(
            f"A layer entry must be a {{'class_name', 'config'}} dict, got {str(spec)[:200]}."
        )
    if spec["class_name"] in ("Sequential", "Functional", "Model"):
        return deserialize_model(spec, custom_objects)
    return serialization.deserialize_keras_object(
        {"class_name": spec["class_name"], "config": spec["config"]},
        _layer_objects(custom_objects), custom_objects, printable_module_name="layer",
    )  # fmt: skip


def functional_from_keras2(
    config: dict[str, Any], custom_objects: dict | None, cls: type = Model
) -> Model:
    """A functional model from tf_keras's `get_config()` layout (`functional_config`)."""
    from layerflow._src.keras.saving import functional_config

    with serialization.custom_object_scope(custom_objects):
        return functional_config.from_config(config, lambda spec: _layer(spec, custom_objects), cls)


def _keras2_nodes(inner: dict[str, Any]) -> bool:
    return any(
        isinstance(node, list)
        for spec in inner.get("layers", [])
        if isinstance(spec, dict)
        for node in spec.get("inbound_nodes", []) or []
    )


def _functional_from_config(inner: dict[str, Any], custom_objects: dict | None) -> Model:
    if _keras2_nodes(inner):
        return functional_from_keras2(inner, custom_objects)
    made: dict[str, Any] = {}
    tensors: dict[tuple[str, int, int], KerasTensor] = {}
    calls: dict[str, int] = {}
    for spec in _list(inner, "layers", inner.get("name")):
        layer = _layer(spec, custom_objects)
        made[spec.get("name") or spec["config"]["name"]] = layer
        if isinstance(layer, InputLayer):
            tensors[(layer.name, 0, 0)] = layer.output
            key = spec.get("name") or layer.name
            tensors[(key, 0, 0)] = layer.output
    pending = [(spec.get("name") or spec["config"]["name"], node)
               for spec in inner["layers"] for node in spec.get("inbound_nodes", [])]  # fmt: skip
    while pending:
        left = []
        for name, node in pending:
            try:
                args, kwargs = _node_call(node, tensors)
            except KeyError:
                left.append((name, node))  # its inputs come from a node not made yet
                continue
            layer = made[name]
            out = layer(*args, **kwargs)
            index = calls.get(name, 0)
            calls[name] = index + 1
            for i, t in enumerate(nest.flatten(out)):
                tensors[(name, index, i)] = t
        if len(left) == len(pending):
            raise ValueError(
                f"The functional model config of '{inner.get('name')}' cannot be rebuilt: the "
                f"inputs of layers {[n for n, _ in left]} are never produced."
            )
        pending = left
    inputs = _resolve_refs(inner["input_layers"], tensors)
    outputs = _resolve_refs(inner["output_layers"], tensors)
    return Model(inputs, outputs, name=inner.get("name"))


def _is_ref(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and all(isinstance(v, int) for v in value[1:]))  # fmt: skip


def _resolve_refs(refs: Any, tensors: dict) -> Any:
    if _is_ref(refs):
        return tensors[tuple(refs)]
    out = [_resolve_refs(r, tensors) for r in refs]
    return out[0] if len(out) == 1 else out


def _node_call(node: Any, tensors: dict) -> tuple[list[Any], dict[str, Any]]:
    def real(value: Any) -> Any:
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            return tensors[tuple(value["config"]["keras_history"])]
        if isinstance(value, list):
            return [real(v) for v in value]
        if isinstance(value, dict):
            return {k: real(v) for k, v in value.items()}
        return value

    if isinstance(node, dict):  # Keras 3: {"args": [...], "kwargs": {...}}
        return [real(a) for a in node.get("args", [])], real(node.get("kwargs", {}))
    # Keras 2: [[layer_name, node_index, tensor_index, kwargs], ...]
    inputs = [tensors[(e[0], e[1], e[2])] for e in node]
    kwargs = node[0][3] if node and len(node[0]) > 3 else {}
    return [inputs[0] if len(inputs) == 1 else inputs], dict(kwargs)
