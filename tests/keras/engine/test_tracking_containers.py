"""Lists and dicts of layers held by layer attributes are Keras 2's ListWrapper/DictWrapper:
still a list/dict, plus `.layers` and weight lists (checked against tf_keras 2.21)."""

import copy
import json
import pickle

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.engine.data_structures import DictWrapper, ListWrapper

L = tf.keras.layers


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


class Net(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = [L.Dense(3, name="a"), L.Dense(2, name="b")]
        self.heads = {"x": L.Dense(1, name="hx")}
        self.later = []
        self.sizes = [3, 2]

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        for layer in self.later:
            x = layer(x)
        return {k: head(x) for k, head in self.heads.items()}


def test_list_and_dict_of_layers_become_wrappers_that_are_still_list_and_dict():
    net = Net()
    assert type(net.blocks) is ListWrapper and isinstance(net.blocks, list)
    assert type(net.heads) is DictWrapper and isinstance(net.heads, dict)
    assert type(net.later) is ListWrapper  # empty: to be filled, as in tf_keras
    assert type(net.sizes) is list  # holds no layers: stays a plain list
    assert net.blocks == list(net.blocks) and net.heads == dict(net.heads)
    assert [layer.name for layer in net.blocks.layers] == ["a", "b"]
    assert [layer.name for layer in net.heads.layers] == ["hx"]
    assert net.later.layers == []
    assert repr(net.blocks).startswith("ListWrapper([") and repr(net.heads).startswith(
        "DictWrapper({"
    )
    # Slices and sums are plain lists (as in tf_keras).
    assert type(net.blocks[:1]) is list and type(net.blocks + []) is list


def test_wrappers_track_what_is_added_through_them():
    net = Net()
    net.later.append(L.Dense(4, name="c"))
    net.later += [L.Dense(4, name="d")]
    net.later.insert(0, L.Dense(4, name="first"))
    net.heads["y"] = L.Dense(5, name="hy")
    net.heads.update(z=L.Dense(6, name="hz"))
    net.heads.setdefault("w", [L.Dense(1, name="hw")])
    assert [layer.name for layer in net.later.layers] == ["first", "c", "d"]
    assert type(net.heads["w"]) is ListWrapper
    assert [layer.name for layer in net.heads.layers] == ["hx", "hy", "hz", "hw"]
    net.heads.pop("w")
    out = net(tf.ones((2, 5)))
    assert sorted(out) == ["x", "y", "z"]
    names = {w.name for w in net.weights}
    for layer in ("a", "b", "first", "c", "d", "hx", "hy", "hz"):
        assert f"{layer}/kernel:0" in names
    assert "hw/kernel:0" not in names


def test_nested_lists_are_wrapped_and_layers_looks_inside_them():
    class Grid(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.rows = [[L.Dense(1, name="r0")], [L.Dense(1, name="r1"), L.Dense(1, name="r2")]]

    grid = Grid()
    assert type(grid.rows[0]) is ListWrapper
    assert [layer.name for layer in grid.rows.layers] == ["r0", "r1", "r2"]
    grid.rows[1][0] = [L.Dense(1, name="r3")]
    assert type(grid.rows[1][0]) is ListWrapper
    assert [layer.name for layer in grid.rows.layers] == ["r0", "r3", "r2"]


def test_wrapper_weight_lists():
    net = Net()
    net(tf.ones((2, 5)))
    net.blocks[1].trainable = False
    assert [w.name for w in net.blocks.trainable_weights] == ["a/kernel:0", "a/bias:0"]
    assert [w.name for w in net.blocks.non_trainable_weights] == ["b/kernel:0", "b/bias:0"]
    assert len(net.blocks.weights) == 4 and net.blocks.variables == net.blocks.weights


def test_wrapped_containers_serialize_copy_and_save_like_plain_ones(tmp_path):
    net = Net()
    net(tf.ones((2, 5)))
    assert json.loads(json.dumps({"sizes": net.sizes, "empty": net.later})) == {
        "sizes": [3, 2],
        "empty": [],
    }
    clone = copy.deepcopy(net)
    assert type(clone.blocks) is ListWrapper and clone.blocks[0] is not net.blocks[0]
    restored = pickle.loads(pickle.dumps(net))
    assert type(restored.heads) is DictWrapper
    np.testing.assert_array_equal(restored.blocks[0].kernel.numpy(), net.blocks[0].kernel.numpy())
    # Checkpoint keys are still structural paths through the containers.
    net.save_weights(str(tmp_path / "net.weights.h5"))
    fresh = Net()
    fresh(tf.ones((2, 5)))
    fresh.load_weights(str(tmp_path / "net.weights.h5"))
    for a, b in zip(net.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_model_with_a_list_of_layers_trains_all_of_them():
    class Stack(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = []
            for units in (4, 3):
                self.hidden.append(L.Dense(units, activation="relu"))
            self.out = L.Dense(1)

        def call(self, x):
            for layer in self.hidden:
                x = layer(x)
            return self.out(x)

    model = Stack()
    model.compile("sgd", "mse")
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), epochs=1, verbose=0)
    assert len(model.trainable_weights) == 6
    assert model.hidden.layers == model.layers[:2]
