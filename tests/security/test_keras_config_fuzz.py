"""Fuzzed `.keras` configs never call anything outside the allowed set.

Hypothesis builds config documents from random class names, module paths and argument dicts,
mixing in the names of real dangerous callables (`os._exit`, `subprocess.Popen`, ...) and of a
sentinel module put in `sys.modules`. Each document is loaded as a `.keras` file and through
`model_from_json`. Whatever happens, no dangerous callable is ever called, the sentinel only when
the test passed it in `custom_objects`, and a failure is an ordinary ValueError/TypeError (never
RecursionError, SystemExit, ...).
"""

import json
import sys
import types
import zipfile

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import layerflow as tf

from .hostile import HOSTILE, install_sentinels, write_keras

SENTINEL = "lf_fuzz_sentinel"

NAMES = sorted(
    {"boom", "Boom", f"{SENTINEL}.boom", f"{SENTINEL}>boom", f"Custom>{'boom'}", "function",
     "__lambda__", "Dense", "Lambda", "Activation", "Dropout", "Sequential", "Functional",
     "Model", "InputLayer", "relu", "GlorotUniform", "Zeros", "L2", "MaxNorm", "Adam", "mse",
     "MeanSquaredError", "Mean", "ExponentialDecay", "get_config", "__class__", "__import__",
     "sys", "modules"}
    | {a for _, a in HOSTILE}
    | {f"{m}.{a}" for m, a in HOSTILE}
)  # fmt: skip
MODULES = [SENTINEL, "keras", "keras.layers", "layerflow._src.ops.math_ops", "sys", None] + sorted(
    {m for m, _ in HOSTILE}
)
KEYS = ["units", "activation", "function", "module", "function_type", "output_shape",
        "output_shape_type", "output_shape_module", "arguments", "kernel_initializer",
        "bias_initializer", "kernel_regularizer", "kernel_constraint", "rate", "name", "layers",
        "learning_rate", "loss", "registered_name"]  # fmt: skip

names = st.sampled_from(NAMES) | st.text(max_size=10)
modules = st.sampled_from(MODULES) | st.text(max_size=10)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-2, 6)
    | st.floats(-2, 2, allow_nan=False, width=32)
    | names
    | st.sampled_from(["function", "lambda", "raw"])
)


def _objects(children):
    return st.fixed_dictionaries(
        {"class_name": names, "config": st.dictionaries(st.sampled_from(KEYS) | st.text(
            max_size=6), children, max_size=5)},
        optional={"module": modules, "registered_name": names | st.none()},
    )  # fmt: skip


values = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=3) | _objects(children),
    max_leaves=12,
)
# Names in the forms a config uses for functions: plain, Keras 3's function dict, an object.
functions = (
    names
    | st.fixed_dictionaries(
        {"class_name": st.just("function"), "config": names, "module": modules},
        optional={"registered_name": names | st.none()},
    )
    | st.fixed_dictionaries(
        {"class_name": st.just("__lambda__"), "config": st.dictionaries(names, values, max_size=2)}
    )
    | _objects(values)
)
lambda_layers = st.fixed_dictionaries(
    {"class_name": st.just("Lambda"), "config": st.fixed_dictionaries(
        {"function": functions},
        optional={"module": modules, "function_type": st.sampled_from(["function", "lambda"])
                  | names, "output_shape": functions | st.none(), "output_shape_type":
                  st.sampled_from(["function", "raw", "lambda"]), "output_shape_module": modules,
                  "arguments": st.dictionaries(st.text(max_size=4), leaves, max_size=2)})},
    optional={"module": modules, "registered_name": names | st.none()},
)  # fmt: skip
dense_layers = st.fixed_dictionaries(
    {"class_name": st.just("Dense"), "config": st.fixed_dictionaries(
        {"units": st.integers(1, 4)},
        optional={k: functions | st.none() for k in (
            "activation", "kernel_initializer", "bias_initializer", "kernel_regularizer",
            "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint")})},
)  # fmt: skip
INPUT = {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 2], "name": "in"}}
documents = st.builds(
    lambda layers, kind, with_input: {
        "class_name": kind,
        "module": "keras",
        "config": {"name": "fuzz", "layers": ([INPUT] if with_input else []) + layers},
    },
    st.lists(lambda_layers | dense_layers | _objects(values), min_size=1, max_size=3),
    st.sampled_from(["Sequential"] * 4 + ["Functional", "Model"]) | names,
    st.booleans(),
)
compile_configs = st.fixed_dictionaries(
    {},
    optional={"loss": functions | st.lists(functions, max_size=2), "metrics":
              st.lists(functions, max_size=2), "weighted_metrics": st.lists(functions, max_size=2),
              "optimizer": functions | st.fixed_dictionaries({"class_name": names, "config":
              st.fixed_dictionaries({}, optional={"learning_rate": functions})})},
)  # fmt: skip


class Boom:
    """A sentinel class: constructing or configuring it records a call."""

    def __init__(self, *args, **kwargs):
        _SENTINEL_CALLS.append(("Boom", args))

    def __call__(self, *args, **kwargs):
        _SENTINEL_CALLS.append(("Boom()", args))
        return args[0] if args else None

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        _SENTINEL_CALLS.append(("Boom.from_config", (config,)))
        return cls()


def boom(*args, **kwargs):
    _SENTINEL_CALLS.append(("boom", args))
    return args[0] if args else None


_SENTINEL_CALLS = []


def _sentinel_module():
    module = types.ModuleType(SENTINEL)
    module.boom, module.Boom = boom, Boom
    for _, attr in HOSTILE:  # the sentinel module also offers the dangerous names
        setattr(module, attr, boom)
    return module


def _check(load, pass_custom, dangerous, text):
    try:
        load()
        event("loaded")
    except (ValueError, TypeError) as e:  # refused or malformed: the expected outcomes
        event(f"{type(e).__name__}: {str(e)[:28]}")
    assert dangerous == [], f"called {dangerous} for {text}"
    if not pass_custom:
        assert _SENTINEL_CALLS == [], f"called {_SENTINEL_CALLS} for {text}"


FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


def test_fuzzed_model_configs_never_call_outside_the_allowed_set(tmp_path):
    path = tmp_path / "fuzz.keras"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, SENTINEL, _sentinel_module())
        dangerous = install_sentinels(mp)

        @FUZZ
        @given(document=documents, pass_custom=st.booleans())
        def load_everywhere(document, pass_custom):
            _SENTINEL_CALLS.clear()
            custom = {"boom": boom, "Boom": Boom} if pass_custom else None
            text = json.dumps(document)
            write_keras(path, text)
            _check(lambda: tf.keras.models.model_from_json(text, custom_objects=custom),
                   pass_custom, dangerous, text)  # fmt: skip
            _check(lambda: tf.keras.models.load_model(path, custom_objects=custom),
                   pass_custom, dangerous, text)  # fmt: skip

        load_everywhere()


def test_fuzzed_compile_configs_never_call_outside_the_allowed_set(tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.save(tmp_path / "ok.keras")
    with zipfile.ZipFile(tmp_path / "ok.keras") as zf:
        document = json.loads(zf.read("config.json"))
        weights_name = next(n for n in zf.namelist() if n.startswith("model.weights"))
        weights = zf.read(weights_name)
    path = tmp_path / "fuzz.keras"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, SENTINEL, _sentinel_module())
        dangerous = install_sentinels(mp)

        @FUZZ
        @given(compile_config=compile_configs, pass_custom=st.booleans())
        def load(compile_config, pass_custom):
            _SENTINEL_CALLS.clear()
            custom = {"boom": boom, "Boom": Boom} if pass_custom else None
            text = json.dumps({**document, "compile_config": compile_config})
            write_keras(path, text, weights, weights_name)
            _check(lambda: tf.keras.models.load_model(path, custom_objects=custom),
                   pass_custom, dangerous, text)  # fmt: skip

        load()
