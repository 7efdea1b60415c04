"""model_to_dot (structure and Keras 2's record labels) and plot_model (pydot + graphviz)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils import vis_utils


def _functional():
    inp = tf.keras.Input((4,), name="x")
    a = tf.keras.layers.Dense(3, activation="relu", name="d1")(inp)
    b = tf.keras.layers.Dense(3, name="d2")(inp)
    return tf.keras.Model(inp, tf.keras.layers.Add(name="add")([a, b]))


def _graph(dot):
    labels = {n.get_name(): n.get("label").strip('"') for n in dot.get_nodes()
              if n.get_name() not in ("node", "edge", "graph")}  # fmt: skip
    edges = {(labels[e.get_source()], labels[e.get_destination()]) for e in dot.get_edges()}
    return labels, edges


def test_model_to_dot_nodes_edges_and_labels():
    pytest.importorskip("pydot")
    dot = tf.keras.utils.model_to_dot(_functional())
    labels, edges = _graph(dot)
    assert sorted(labels.values()) == ["add|Add", "d1|Dense", "d2|Dense", "x|InputLayer"]
    assert edges == {("x|InputLayer", "d1|Dense"), ("x|InputLayer", "d2|Dense"),
                     ("d1|Dense", "add|Add"), ("d2|Dense", "add|Add")}  # fmt: skip
    assert dot.get("rankdir") == "TB" and dot.get("dpi") == 96


def test_model_to_dot_with_shapes_dtype_activations_trainable():
    pytest.importorskip("pydot")
    model = _functional()
    model.get_layer("d2").trainable = False
    dot = tf.keras.utils.model_to_dot(model, show_shapes=True, show_dtype=True,
                                      show_layer_activations=True, show_trainable=True,
                                      rankdir="LR")  # fmt: skip
    labels = set(_graph(dot)[0].values())
    assert "T|{x|InputLayer|float32}|{input:|output:}|{{[(None, 4)]}|{[(None, 4)]}}" in labels
    assert "T|{d1|{Dense|relu}|float32}|{input:|output:}|{{(None, 4)}|{(None, 3)}}" in labels
    assert "NT|{d2|{Dense|linear}|float32}|{input:|output:}|{{(None, 4)}|{(None, 3)}}" in labels
    assert ("T|{add|Add|float32}|{input:|output:}|{{[(None, 3), (None, 3)]}|{(None, 3)}}"
            in labels)  # fmt: skip
    assert dot.get("rankdir") == "LR"
    names_off = tf.keras.utils.model_to_dot(model, show_layer_names=False)
    assert sorted(_graph(names_off)[0].values()) == ["Add", "Dense", "Dense", "InputLayer"]


def test_model_to_dot_sequential_subclassed_and_layer_range():
    pytest.importorskip("pydot")
    seq = tf.keras.Sequential(
        [tf.keras.layers.Dense(2, name="a"), tf.keras.layers.Dense(1, name="b")]
    )
    seq(np.ones((1, 3), "float32"))
    assert _graph(tf.keras.utils.model_to_dot(seq))[1] == {("a|Dense", "b|Dense")}

    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.d = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.d(x)

    net = Net()
    net(np.ones((1, 2), "float32"))
    labels, edges = _graph(tf.keras.utils.model_to_dot(net))
    assert list(labels.values()) == ["net"] and not edges
    part = tf.keras.utils.model_to_dot(_functional(), layer_range=["d1", "d2"])
    assert sorted(_graph(part)[0].values()) == ["d1|Dense", "d2|Dense"]
    with pytest.raises(ValueError, match="shape \\(2,\\)"):
        tf.keras.utils.model_to_dot(_functional(), layer_range=["d1"])
    with pytest.raises(ValueError, match="does not match"):
        tf.keras.utils.model_to_dot(_functional(), layer_range=["d1", "zzz"])


def test_unbuilt_models_and_missing_pydot_raise(monkeypatch):
    with pytest.raises(ValueError, match="not yet been built"):
        tf.keras.utils.model_to_dot(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
    monkeypatch.setattr(vis_utils, "_pydot", lambda: None)
    with pytest.raises(ImportError, match=r"You must install pydot \(`pip install pydot`\) for "
                                          "model_to_dot to work."):  # fmt: skip
        tf.keras.utils.model_to_dot(_functional())
    with pytest.raises(ImportError, match="and install graphviz"):
        tf.keras.utils.plot_model(_functional(), "m.png")


def test_plot_model_writes_a_png(tmp_path):
    if not vis_utils.check_graphviz():
        pytest.skip("pydot and Graphviz's dot are needed to draw")
    tf.keras.utils.plot_model(_functional(), tmp_path / "m.png", show_shapes=True)
    data = (tmp_path / "m.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    tf.keras.utils.plot_model(_functional(), tmp_path / "m.svg")
    assert "<svg" in (tmp_path / "m.svg").read_text()
