"""Deferred restore goes through Trackable's restore protocol (`_restore_on_create`,
`_call_after_build`), never through another object's private fields: any trackable that
implements the protocol its own way is restored, and saving touches no Layer private field."""

import ast
import pathlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.saving import h5_weights
from layerflow._src.saving import restore

SAVING = pathlib.Path(restore.__file__).parent


class Lazy(Trackable):
    """Creates its variables on `build()`; keeps restore state under names of its own."""

    def __init__(self, name="lazy"):
        self.name = name
        self.built = False
        self._vars = {}
        self._my_sources = []
        self._my_hooks = []

    def _trackable_children(self):
        return dict(self._vars)

    def _restore_on_create(self, source):
        self._my_sources.insert(0, source)

    def _call_after_build(self, fn):
        self._my_hooks.append(fn)
        return True

    def build(self):
        for key, shape in (("w", (2, 3)), ("b", (3,))):
            value = None
            for source in self._my_sources:
                taken = source.take(key)
                value = taken if value is None else value
            self._vars[key] = Variable(np.zeros(shape, np.float32) if value is None else value)
        self.built = True
        hooks, self._my_hooks = self._my_hooks, []
        for fn in hooks:
            fn()


def _source_values():
    return {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.full(3, 7.0, np.float32)}


def _built_source():
    src = Lazy()
    src._vars = {k: Variable(v) for k, v in _source_values().items()}
    src.built = True
    return src


def _check(target):
    for k, v in _source_values().items():
        np.testing.assert_array_equal(target._vars[k].numpy(), v)


def test_safetensors_restore_into_a_trackable_with_its_own_fields(tmp_path):
    path = tmp_path / "w.params"
    restore.save(_built_source(), path)
    target = Lazy()
    status = restore.load(target, path)
    assert sorted(status.pending) == ["b", "w"]
    target.build()
    _check(target)
    assert status.pending == []
    status.assert_consumed()


def test_keras_h5_restore_into_a_trackable_with_its_own_fields(tmp_path):
    pytest.importorskip("h5py")
    path = str(tmp_path / "w.weights.h5")
    h5_weights.save(_built_source(), path)
    target = Lazy()
    status = h5_weights.load(target, path)
    assert len(status.pending) == 2
    target.build()
    _check(target)
    assert status.pending == []
    status.assert_consumed()


def test_a_trackable_without_the_protocol_gets_values_after_build_or_a_report(tmp_path):
    path = tmp_path / "w.params"
    restore.save(_built_source(), path)

    class Plain(Lazy):  # the defaults: no values at creation, no after-build call
        _restore_on_create = Trackable._restore_on_create
        _call_after_build = Trackable._call_after_build

    target = Plain()
    status = restore.load(target, path)
    target.build()
    assert [v.numpy().sum() for v in target._vars.values()] == [0.0, 0.0]
    with pytest.raises(AssertionError, match="waiting for variables"):
        status.assert_consumed()


def test_two_loads_before_build_the_newest_wins(tmp_path):
    first, second = str(tmp_path / "1.params"), str(tmp_path / "2.params")
    x = np.ones((1, 3), np.float32)
    for path, fill in ((first, 1.0), (second, 2.0)):
        m = tf.keras.Sequential([tf.keras.layers.Dense(2)])
        m(x)
        m.set_weights([np.full(w.shape, fill, np.float32) for w in m.get_weights()])
        m.save_weights(path)
    fresh = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    fresh.load_weights(first)
    fresh.load_weights(second)
    fresh(x)
    for w in fresh.get_weights():
        np.testing.assert_array_equal(w, 2.0)


def test_saving_touches_no_private_field_of_layer():
    layer = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    private = {n for n in vars(layer) if n.startswith("_")} | {
        n for n in vars(tf.keras.layers.Dense(2)) if n.startswith("_")
    }
    assert {"_pending_restore", "_post_build_callbacks"} <= private  # the guard sees them
    used = {}
    for path in SAVING.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                used.setdefault(node.attr, []).append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Constant) and node.value in private:
                used.setdefault(node.value, []).append(f"{path.name}:{node.lineno}")
    # Read-only, and not about restoring: the Keras HDF5 layout lists a Sequential's or a
    # functional model's `layers` first, and tells them apart by these two fields.
    layout_only = {"_stack", "_is_graph_network"}
    assert {k: v for k, v in used.items() if k not in layout_only} == {}
