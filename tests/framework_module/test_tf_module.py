"""tf.Module: names, name scopes, and variables/submodules found through attributes (TF order)."""

import layerflow as tf
from layerflow._src.framework.trackable import walk


class Dense(tf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = tf.Variable(tf.ones((n_in, n_out)), name="w")
            self.b = tf.Variable(tf.zeros((n_out,)), name="b")

    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class Stack(tf.Module):
    def __init__(self):
        super().__init__(name="stack")
        self.layers = []
        self.layers.append(Dense(3, 4, name="first"))  # appended after assignment
        self.layers.append(Dense(4, 2, name="second"))
        self.scale = tf.Variable(2.0, trainable=False, name="scale")


def test_names_and_name_scope():
    assert tf.Module().name == "module"
    assert Dense(2, 2).name == "dense"
    d = Dense(2, 2, name="d1")
    assert [v.name for v in d.variables] == ["d1/b:0", "d1/w:0"]  # sorted by attribute, as TF


def test_variables_follow_attributes_and_lists():
    s = Stack()
    names = [v.name for v in s.variables]
    # own variables first (attributes sorted by name), then submodules' (breadth first)
    assert names == ["scale:0", "first/b:0", "first/w:0", "second/b:0", "second/w:0"]
    assert [v.name for v in s.trainable_variables] == names[1:]
    assert [m.name for m in s.submodules] == ["first", "second"]
    out = s.layers[1](s.layers[0](tf.ones((1, 3))))
    assert out.numpy().tolist() == [[12.0, 12.0]]


def test_private_attributes_and_plain_values_are_not_tracked():
    m = tf.Module(name="m")
    m._hidden = tf.Variable(1.0)
    m.numbers = [1, 2, 3]
    m.tensor = tf.constant(1.0)
    assert m.variables == [] and m._trackable_children() == {}


def test_shared_variable_listed_once_and_walk_gives_paths():
    s = Stack()
    s.alias = s.layers[0].w
    assert sum(v is s.alias for v in s.variables) == 1
    paths = [p for p, _ in walk(s)]
    assert "layers/0/w" in paths and "layers/1/b" in paths and "alias" in paths


def test_with_name_scope_decorator():
    class M(tf.Module):
        @tf.Module.with_name_scope
        def make(self):
            return tf.Variable(1.0, name="v")

    assert M(name="outer").make().name == "outer/v:0"
