"""Functional models' get_config/from_config in tf_keras's layout (issue 11)."""

import json

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


def _model():
    a, b = tf.keras.Input((3,), name="a"), tf.keras.Input((3,), name="b")
    shared = L.Dense(2, name="shared")
    inner_in = tf.keras.Input((2,), name="inner_in")
    inner = tf.keras.Model(inner_in, L.Dense(1, name="inner_dense")(inner_in), name="inner")
    head = tf.keras.Sequential([tf.keras.Input((4,)), L.Dense(2, name="head_dense")],
                               name="head")  # fmt: skip
    ya, yb = shared(a), shared(b)
    out1 = inner(tf.nn.relu(ya + yb))
    joined = L.Concatenate(name="cat")([ya, 1.0 - yb * 2.0])
    out2 = head(joined)
    return tf.keras.Model([a, b], [out1, out2], name="outer")


def test_round_trip_nested_shared_multi_io_and_op_layers():
    model = _model()
    config = model.get_config()
    json.dumps(config)  # plain JSON
    layers = {entry["name"]: entry for entry in config["layers"]}
    assert layers["shared"]["inbound_nodes"] == [[["a", 0, 0, {}]], [["b", 0, 0, {}]]]
    ops = {e["config"]["function"]: e for e in config["layers"] if e["class_name"] == "TFOpLambda"}
    assert sorted(ops) == ["__operators__.add", "math.multiply", "math.subtract", "nn.relu"]
    assert ops["math.subtract"]["inbound_nodes"][0][:3] == ["_CONSTANT_VALUE", -1, 1.0]
    # tf_keras counts a nested functional model's construction as its node 0.
    assert config["output_layers"] == [["inner", 1, 0], ["head", 1, 0]]
    rebuilt = tf.keras.Model.from_config(config)
    assert rebuilt.get_config() == config
    rebuilt.set_weights(model.get_weights())
    x = [np.random.default_rng(0).normal(size=(2, 3)).astype("float32")] * 2
    for got, want in zip(rebuilt(x), model(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_tf_keras_style_config_with_names_and_kwargs_reads():
    # As tf_keras writes it: a flat node for op layers, `name: null` kwargs, dtype policies.
    config = {
        "name": "m", "trainable": True,
        "layers": [
            {"class_name": "InputLayer", "name": "x", "inbound_nodes": [],
             "config": {"batch_input_shape": [None, 2], "dtype": "float32", "name": "x"}},
            {"class_name": "TFOpLambda", "name": "tf.math.multiply",
             "config": {"name": "tf.math.multiply", "trainable": True, "dtype": "float32",
                        "function": "math.multiply"},
             "inbound_nodes": [["x", 0, 0, {"y": 3.0, "name": None}]]},
        ],
        "input_layers": [["x", 0, 0]], "output_layers": [["tf.math.multiply", 0, 0]],
    }  # fmt: skip
    model = tf.keras.Model.from_config(config)
    np.testing.assert_allclose(model(np.ones((1, 2), np.float32)).numpy(), [[3.0, 3.0]])


@pytest.mark.parametrize("function", ["io.write_file", "print", "py_function", "os.system",
                                      "__operators__.__class__"])  # fmt: skip
def test_op_layers_resolve_only_math_ops(function):
    config = {
        "name": "m", "layers": [
            {"class_name": "InputLayer", "name": "x", "inbound_nodes": [],
             "config": {"batch_input_shape": [None, 2], "dtype": "float32", "name": "x"}},
            {"class_name": "TFOpLambda", "name": "op", "config": {"name": "op",
                                                                  "function": function},
             "inbound_nodes": [["x", 0, 0, {}]]},
        ],
        "input_layers": [["x", 0, 0]], "output_layers": [["op", 0, 0]],
    }  # fmt: skip
    with pytest.raises(ValueError, match="not a layerflow math, nn or array op"):
        tf.keras.Model.from_config(config)


def test_a_config_whose_inputs_are_never_made_is_refused():
    config = _model().get_config()
    config["layers"] = [e for e in config["layers"] if e["name"] != "b"]
    with pytest.raises(ValueError, match="never produced"):
        tf.keras.Model.from_config(config)
