"""tf.train.CheckpointView / TrackableView over layerflow checkpoints, and
tf.train.experimental.PythonState saved and restored with variables (TF 2.21's behaviour)."""

import io
import os

import numpy as np
import pytest

import layerflow as tf


class Block(tf.Module):
    def __init__(self, extra=False):
        super().__init__()
        self.v = tf.Variable(1.0)
        self.l = [tf.Variable(2.0)]
        if extra:
            self.extra = tf.Variable(5.0)


def _saved(tmp_path, **children):
    ckpt = tf.train.Checkpoint(**children)
    return ckpt, ckpt.save(os.path.join(str(tmp_path), "c"))


def test_checkpoint_view_graph(tmp_path):
    _, path = _saved(tmp_path, model=Block(), step=tf.Variable(3))
    view = tf.train.CheckpointView(path)
    assert view.children(0) == {"model": 1, "save_counter": 2, "step": 3}
    assert view.children(1) == {"l": 4, "v": 5}
    assert view.children(4) == {"0": 6} and view.children(6) == {}
    assert view.descendants() == list(range(7))
    assert tf.train.CheckpointView(str(tmp_path)).children(0) == view.children(0)  # a folder
    with pytest.raises(ValueError, match="no node 9"):
        view.children(9)


def test_shared_variable_is_one_node(tmp_path):
    m = Block()
    m.alias = m.v
    _, path = _saved(tmp_path, model=m)
    view = tf.train.CheckpointView(path)
    kids = view.children(view.children(0)["model"])
    assert kids["alias"] == kids["v"]


def test_match_and_diff(tmp_path):
    ckpt, path = _saved(tmp_path, model=Block(), step=tf.Variable(3))
    view = tf.train.CheckpointView(path)
    matched = view.match(ckpt)
    assert set(matched) == set(range(7)) and matched[0] is ckpt
    assert matched[5] is ckpt.model.v and matched[6] is ckpt.model.l[0]
    other = tf.train.Checkpoint(model=Block(extra=True))
    both, only_ckpt, only_obj = view.diff(other)
    assert only_ckpt == [3]  # `step`
    assert len(only_obj) == 1 and float(only_obj[0].numpy()) == 5.0
    assert both[5] is other.model.v
    with pytest.raises(ValueError, match="Expected a Trackable"):
        view.match(3)


def test_trackable_view():
    m = Block()
    ckpt = tf.train.Checkpoint(model=m, step=tf.Variable(3))
    view = tf.train.TrackableView(ckpt)
    assert view.root is ckpt
    assert list(tf.train.TrackableView.children(m)) == ["l", "v"]
    assert set(view.children(ckpt)) == {"model", "step", "save_counter"}
    found = view.descendants()
    assert found[0] is ckpt and found[1] is m and any(x is m.v for x in found)
    assert any(x is m.l[0] for x in found) and len(found) == 7
    with pytest.raises(ValueError, match="Trackable root"):
        tf.train.TrackableView(3)


class NumpyWrapper(tf.train.experimental.PythonState):
    """TF's documented example."""

    def __init__(self, array):
        self.array = array

    def serialize(self):
        f = io.BytesIO()
        np.save(f, self.array, allow_pickle=False)
        return f.getvalue()

    def deserialize(self, string_value):
        self.array = np.load(io.BytesIO(string_value), allow_pickle=False)


def test_python_state_round_trip(tmp_path):
    root = tf.train.Checkpoint(numpy=NumpyWrapper(np.array([1.0])), v=tf.Variable(2.0))
    path = root.save(os.path.join(str(tmp_path), "c"))
    names = dict(tf.train.list_variables(path))
    assert "numpy/py_state" in names
    root.numpy.array *= 2.0
    root.v.assign(0.0)
    root.restore(path).assert_consumed()
    np.testing.assert_array_equal(root.numpy.array, [1.0])
    assert float(root.v.numpy()) == 2.0
    # A fresh object receives the bytes too; a missing state is reported as missing.
    fresh = tf.train.Checkpoint(numpy=NumpyWrapper(None), v=tf.Variable(0.0))
    fresh.restore(path).assert_consumed()
    np.testing.assert_array_equal(fresh.numpy.array, [1.0])
    other = tf.train.Checkpoint(v=tf.Variable(0.0), more=NumpyWrapper(np.zeros(1)))
    with pytest.raises(AssertionError, match="more/py_state"):
        other.restore(path).assert_consumed()


def test_python_state_rules(tmp_path):
    with pytest.raises(TypeError, match="abstract"):
        tf.train.experimental.PythonState()

    class Bad(tf.train.experimental.PythonState):
        def serialize(self):
            return 3

        def deserialize(self, s):
            pass

    with pytest.raises(TypeError, match="must return str or bytes"):
        tf.train.Checkpoint(b=Bad()).write(os.path.join(str(tmp_path), "x"))
    assert not os.listdir(tmp_path)  # nothing written
