"""`.keras` files and configs never call code: under safe_mode (the default) every name a file
gives resolves only to Keras built-ins, registered objects and `custom_objects`.

Each test puts sentinels in place of `os._exit`, `subprocess.Popen`, `builtins.eval`,
`posix.system`, `numpy.lib.format.open_memmap`, ... (see conftest.py), feeds a hostile config
through one of the places that turn a string from a file into a Python object, and asserts a
clear ValueError/TypeError naming the object, and that no sentinel was ever called.
"""

import json

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras import serialization
from layerflow._src.keras.saving import config_json
from layerflow._src.keras.saving.config_json import ModelFileError
from layerflow._src.saving.weights_file import WeightsFileError

from .hostile import HOSTILE, layer, sequential, write_keras

HOSTILE_IDS = [f"{m}.{a}" for m, a in HOSTILE]
# Ways a file can spell a dangerous name where a class or function name is expected.
SPELLINGS = (
    [f"{m}.{a}" for m, a in HOSTILE] + [a for _, a in HOSTILE] + [f"{m}:{a}" for m, a in HOSTILE]
)


def _load(tmp_path, config, **kwargs):
    return tf.keras.models.load_model(write_keras(tmp_path / "hostile.keras", config), **kwargs)


def _lambda(function, module, name="evil", **extra):
    config = {"name": name, "function": function, "function_type": "function", "module": module,
              "output_shape": None, "output_shape_type": "raw", "output_shape_module": None,
              "arguments": {}}  # fmt: skip
    config.update(extra)
    return layer("Lambda", config)


def _dense(**overrides):
    config = {"name": "dense", "units": 2, "activation": "linear"}
    config.update(overrides)
    return layer("Dense", config)


# --- Lambda -----------------------------------------------------------------------------------
@pytest.mark.parametrize("module,name", HOSTILE, ids=HOSTILE_IDS)
def test_lambda_naming_a_dangerous_function_is_refused(tmp_path, sentinels, module, name):
    with pytest.raises(ValueError, match=rf"Lambda layer 'evil'.*'{name}'.*safe_mode=False"):
        _load(tmp_path, sequential(_lambda(name, module)))
    assert sentinels == []


@pytest.mark.parametrize("module,name", HOSTILE, ids=HOSTILE_IDS)
def test_lambda_output_shape_naming_a_dangerous_function_is_refused(
    tmp_path, sentinels, module, name
):
    spec = _lambda("relu", "layerflow._src.ops.math_ops", output_shape=name,
                   output_shape_type="function", output_shape_module=module)  # fmt: skip
    with pytest.raises(ValueError, match=rf"Lambda layer 'evil'.*output_shape.*'{name}'"):
        _load(tmp_path, sequential(spec))
    assert sentinels == []


@pytest.mark.parametrize("module,name", HOSTILE, ids=HOSTILE_IDS)
def test_lambda_in_keras3_function_form_is_refused(tmp_path, sentinels, module, name):
    fn = {"module": module, "class_name": "function", "config": name, "registered_name": name}
    with pytest.raises(ValueError, match=rf"Lambda layer 'evil'.*'{name}'.*safe_mode=False"):
        _load(tmp_path, sequential(layer("Lambda", {"name": "evil", "function": fn})))
    with pytest.raises(ValueError, match=rf"Lambda layer 'evil'.*'{name}'.*safe_mode=False"):
        tf.keras.layers.Lambda.from_config({"name": "evil", "function": fn})
    assert sentinels == []


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_lambda_with_a_dotted_name_and_no_module_is_refused(tmp_path, sentinels, spelling):
    with pytest.raises(ValueError, match="Lambda layer 'evil'"):
        _load(tmp_path, sequential(_lambda(spelling, None)))
    with pytest.raises(ValueError, match="Lambda layer 'evil'"):
        _load(tmp_path, sequential(_lambda(spelling, "os")))
    assert sentinels == []


def test_lambda_bytecode_is_refused_naming_the_layer(tmp_path, sentinels):
    source = tf.keras.layers.Lambda(lambda t: t * 2.0, name="doubler").get_config()
    assert source["function_type"] == "lambda"
    with pytest.raises(ValueError, match="Lambda layer 'doubler'.*bytecode.*safe_mode=False"):
        _load(tmp_path, sequential(layer("Lambda", source)))
    code = source["function"][0]
    keras3 = {
        "class_name": "__lambda__",
        "config": {"code": code, "defaults": None, "closure": None},
    }
    with pytest.raises(ValueError, match="Lambda layer 'k3'.*bytecode.*safe_mode=False"):
        _load(tmp_path, sequential(layer("Lambda", {"name": "k3", "function": keras3})))
    document = sequential(layer("Lambda", {"name": "k3", "function": keras3}))
    with tf.keras.utils.custom_object_scope(), serialization.safe_mode_scope(False):
        trusted = tf.keras.models.model_from_json(json.dumps(document))
    np.testing.assert_allclose(trusted(np.ones((1, 2), np.float32)).numpy(), [[2.0, 2.0]])
    assert sentinels == []


def test_keras3_function_references_resolve_registered_functions(sentinels):
    @tf.keras.utils.register_keras_serializable(package="SafeModeK3")
    def halve(t):
        return t / 2.0

    fn = {"module": "somewhere", "class_name": "function", "config": "halve",
          "registered_name": "SafeModeK3>halve"}  # fmt: skip
    relu = {"module": "keras.activations", "class_name": "function", "config": "relu"}
    document = sequential(layer("Lambda", {"name": "h", "function": fn}), _dense(activation=relu))
    model = tf.keras.models.model_from_json(json.dumps(document))
    assert model.layers[0].function is halve
    assert model.layers[1].activation is tf.keras.activations.relu
    assert sentinels == []


def test_lambda_from_config_and_layers_deserialize_refuse_too(sentinels):
    config = _lambda("_exit", "os")["config"]
    with pytest.raises(ValueError, match="Lambda layer 'evil'.*safe_mode=False"):
        tf.keras.layers.Lambda.from_config(config)
    with pytest.raises(ValueError, match="Lambda layer 'evil'.*safe_mode=False"):
        tf.keras.layers.deserialize({"class_name": "Lambda", "config": config})
    with pytest.raises(ValueError, match="Lambda layer 'evil'.*safe_mode=False"):
        tf.keras.Sequential.from_config({"name": "s", "layers": [_lambda("_exit", "os")]})
    assert sentinels == []


# --- layer classes, in Sequential, functional and nested models -------------------------------
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_layer_class_names_never_reach_modules(tmp_path, sentinels, spelling):
    module, _, attr = spelling.replace(":", ".").rpartition(".")
    hostile = [
        layer(spelling, {}),
        layer(attr, {}, module=module or "os"),
        layer("Dense", {"units": 1}, registered_name=spelling),
    ]
    for spec in hostile:
        with pytest.raises(ValueError, match="Unknown layer"):
            _load(tmp_path, sequential(spec))
        with pytest.raises(ValueError, match="Unknown layer"):
            tf.keras.layers.deserialize({"class_name": spec["registered_name"] or
                                         spec["class_name"], "config": {}})  # fmt: skip
    assert sentinels == []


def test_functional_and_nested_models_refuse_hostile_layers(tmp_path, sentinels):
    inp = tf.keras.Input((2,), name="x")
    net = tf.keras.Model(inp, tf.keras.layers.Dense(3, name="d")(inp))
    document = json.loads(net.to_json())
    entry = next(e for e in document["config"]["layers"] if e["config"]["name"] == "d")
    entry["class_name"] = "Popen"
    entry["module"] = "subprocess"
    with pytest.raises(ValueError, match="Unknown layer: 'Popen'"):
        _load(tmp_path, document)
    entry.update(_lambda("system", "posix", name="d"))
    with pytest.raises(ValueError, match="Lambda layer 'd'.*safe_mode=False"):
        _load(tmp_path, document)
    nested = sequential(layer("Sequential", sequential(_lambda("eval", "builtins"))["config"],
                              module="keras"))  # fmt: skip
    with pytest.raises(ValueError, match="Lambda layer 'evil'"):
        _load(tmp_path, nested)
    with pytest.raises(ValueError, match="Lambda layer 'evil'"):
        tf.keras.models.model_from_json(json.dumps(nested))
    assert sentinels == []


# --- objects inside layer configs: activations, initializers, regularizers, constraints -----------
ARGUMENTS = ["activation", "kernel_initializer", "kernel_regularizer", "kernel_constraint"]


@pytest.mark.parametrize("argument", ARGUMENTS)
@pytest.mark.parametrize("module,name", HOSTILE, ids=HOSTILE_IDS)
def test_objects_inside_layer_configs(tmp_path, sentinels, argument, module, name):
    forms = [
        f"{module}.{name}",
        name,
        {"class_name": name, "config": {}},
        {"module": module, "class_name": name, "config": {}, "registered_name": None},
        {"module": module, "class_name": "function", "config": name, "registered_name": name},
        {"module": "keras", "class_name": "Zeros", "config": {}, "registered_name": name},
    ]
    for form in forms:
        with pytest.raises((ValueError, TypeError), match=rf"{name}"):
            _load(tmp_path, sequential(_dense(**{argument: form})))
    assert sentinels == []


@pytest.mark.parametrize("module,name", HOSTILE, ids=HOSTILE_IDS)
def test_get_and_deserialize_of_every_kind(sentinels, module, name):
    k = tf.keras
    getters = [k.activations.get, k.activations.deserialize, k.initializers.get,
               k.initializers.deserialize, k.regularizers.get, k.regularizers.deserialize,
               k.constraints.get, k.constraints.deserialize, k.losses.get, k.losses.deserialize,
               k.metrics.get, k.optimizers.get, k.utils.deserialize_keras_object]  # fmt: skip
    dict_only = [k.metrics.deserialize, k.optimizers.deserialize,
                 k.optimizers.schedules.deserialize, k.layers.deserialize]  # fmt: skip
    for spelling in (f"{module}.{name}", name, f"{module}>{name}"):
        for get in getters:
            with pytest.raises((ValueError, TypeError), match=name):
                get(spelling)
        for get in getters + dict_only:
            with pytest.raises((ValueError, TypeError), match=name):
                get({"class_name": spelling, "config": {}})
    assert sentinels == []


def test_a_name_that_is_not_a_string_is_a_type_error(sentinels):
    with pytest.raises(TypeError, match="must be a string"):
        tf.keras.layers.deserialize({"class_name": ["os", "_exit"], "config": {}})
    with pytest.raises(TypeError, match="'config' must be a dict"):
        tf.keras.layers.deserialize({"class_name": "Dense", "config": ["os._exit"]})
    with pytest.raises(TypeError, match="must be a string"):
        tf.keras.optimizers.deserialize({"class_name": {"a": 1}, "config": {}})
    assert sentinels == []


# --- compile configuration ----------------------------------------------------------------------
@pytest.mark.parametrize("module,name", HOSTILE, ids=HOSTILE_IDS)
def test_compile_config_names_are_resolved_safely(tmp_path, sentinels, module, name):
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.save(tmp_path / "ok.keras")
    import zipfile

    with zipfile.ZipFile(tmp_path / "ok.keras") as zf:
        document = json.loads(zf.read("config.json"))
        names = zf.namelist()
        weights_name = next(n for n in names if n.startswith("model.weights"))
        weights = zf.read(weights_name)
    hostile = {"class_name": name, "module": module, "config": {}, "registered_name": None}
    schedule = {"class_name": "Adam", "module": "keras.optimizers", "registered_name": None,
                "config": {"learning_rate": hostile}}  # fmt: skip
    edits = [
        {"loss": f"{module}.{name}"}, {"loss": name}, {"loss": hostile},
        {"metrics": [f"{module}.{name}"]}, {"metrics": [hostile]},
        {"weighted_metrics": [name]}, {"optimizer": name}, {"optimizer": hostile},
        {"optimizer": schedule},
    ]  # fmt: skip
    for edit in edits:
        doc = json.loads(json.dumps(document))
        doc["compile_config"].update(edit)
        path = write_keras(tmp_path / "c.keras", doc, weights, weights_name)
        with pytest.raises(ValueError, match=rf"compile configuration.*{name}"):
            tf.keras.models.load_model(path)
        assert tf.keras.models.load_model(path, compile=False).built
    assert sentinels == []


# --- what still loads -----------------------------------------------------------------------------
def _relu6(x):
    return tf.minimum(tf.nn.relu(x), 6.0)


def test_builtins_registered_and_custom_functions_load_in_safe_mode(tmp_path, sentinels):
    x = np.array([[-1.0, 3.0], [8.0, 0.5]], np.float32)

    @tf.keras.utils.register_keras_serializable(package="SafeModeTest")
    def clipped(t):
        return tf.minimum(t, 1.0)

    model = tf.keras.Sequential([
        tf.keras.Input((2,)),
        tf.keras.layers.Lambda(tf.nn.relu),
        tf.keras.layers.Lambda(tf.keras.activations.tanh),
        tf.keras.layers.Lambda(clipped),
        tf.keras.layers.Lambda(_relu6, name="six"),
    ])  # fmt: skip
    y = model(x).numpy()
    model.save(tmp_path / "m.keras")
    with pytest.raises(ValueError, match="Lambda layer 'six'.*'_relu6'.*safe_mode=False"):
        tf.keras.models.load_model(tmp_path / "m.keras")
    clone = tf.keras.models.load_model(tmp_path / "m.keras", custom_objects={"_relu6": _relu6})
    np.testing.assert_allclose(clone(x).numpy(), y)
    with tf.keras.utils.custom_object_scope({"_relu6": _relu6}):
        np.testing.assert_allclose(tf.keras.models.load_model(tmp_path / "m.keras")(x), y)
    trusted = tf.keras.models.load_model(tmp_path / "m.keras", safe_mode=False)
    np.testing.assert_allclose(trusted(x).numpy(), y)
    assert sentinels == []


def test_custom_classes_in_custom_objects_resolve_for_every_kind(tmp_path):
    class MyLoss(tf.keras.losses.MeanSquaredError):
        pass

    class MyMetric(tf.keras.metrics.Mean):
        pass

    class MyAdam(tf.keras.optimizers.Adam):
        pass

    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=MyAdam(0.01), loss=MyLoss(), metrics=[MyMetric(name="mm")])
    model.save(tmp_path / "custom.keras")
    with pytest.raises(ValueError, match="compile configuration.*MyAdam"):
        tf.keras.models.load_model(tmp_path / "custom.keras")
    custom = {"MyLoss": MyLoss, "MyMetric": MyMetric, "MyAdam": MyAdam}
    clone = tf.keras.models.load_model(tmp_path / "custom.keras", custom_objects=custom)
    assert type(clone.optimizer) is MyAdam and clone.optimizer.learning_rate.numpy() == 0.01


# --- deeply nested JSON ---------------------------------------------------------------------------
def _deep_inside_a_layer():
    text = json.dumps(sequential(_dense(units=[0])))
    return text.replace("[0]", "[" * 150 + "0" + "]" * 150)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        _deep_inside_a_layer(),
    ],
    ids=["lists", "dicts", "deep-inside-a-layer"],
)
def test_deeply_nested_config_is_a_model_file_error(tmp_path, text):
    path = write_keras(tmp_path / "deep.keras", text)
    with pytest.raises(ModelFileError, match=r"deep\.keras.*config\.json.*deeper than"):
        tf.keras.models.load_model(path)
    with pytest.raises(ModelFileError, match="model JSON.*deeper than"):
        tf.keras.models.model_from_json(text)


def test_model_file_error_is_a_value_error_and_weights_file_error():
    assert issubclass(ModelFileError, WeightsFileError)
    assert issubclass(ModelFileError, ValueError)
    assert tf.keras.saving.ModelFileError is ModelFileError


def test_nesting_just_within_the_limit_parses():
    ok = "[" * config_json.MAX_DEPTH + "]" * config_json.MAX_DEPTH
    assert config_json.depth(config_json.loads(ok, "x.keras")) == config_json.MAX_DEPTH
    too_deep = "[" + ok + "]"
    with pytest.raises(ModelFileError, match="x.keras"):
        config_json.loads(too_deep, "x.keras")


def test_model_from_json_round_trip_and_bad_input():
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="d")])
    clone = tf.keras.models.model_from_json(model.to_json())
    assert [type(la).__name__ for la in clone.layers] == ["Dense"] and clone.output_shape == (
        None,
        2,
    )
    with pytest.raises(ModelFileError, match="not valid JSON"):
        tf.keras.models.model_from_json("{oops")
    with pytest.raises(TypeError, match="JSON string"):
        tf.keras.models.model_from_json({"class_name": "Sequential"})
