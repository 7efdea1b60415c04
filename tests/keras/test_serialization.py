import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras import initializers, serialization
from layerflow._src.keras.utils.numeric import normalize, set_random_seed, to_categorical


def test_register_and_round_trip_custom_class():
    @tf.keras.utils.register_keras_serializable(package="TestPkg")
    class Scaled(tf.keras.initializers.Initializer):
        def __init__(self, k=1.0):
            self.k = k

        def __call__(self, shape, dtype=None):
            return tf.fill(shape, float(self.k))

        def get_config(self):
            return {"k": self.k}

    assert tf.keras.utils.get_registered_name(Scaled) == "TestPkg>Scaled"
    assert tf.keras.utils.get_registered_object("TestPkg>Scaled") is Scaled
    cfg = tf.keras.utils.serialize_keras_object(Scaled(3.0))
    assert cfg == {"class_name": "TestPkg>Scaled", "config": {"k": 3.0}}
    again = tf.keras.initializers.deserialize(cfg)
    assert isinstance(again, Scaled) and again.k == 3.0


def test_register_rejects_class_without_get_config_and_duplicates():
    with pytest.raises(ValueError, match="get_config"):

        @tf.keras.utils.register_keras_serializable(package="TestPkg")
        class NoConfig:
            pass

    @tf.keras.utils.register_keras_serializable(package="TestPkg", name="fn")
    def f1(x):
        return x

    with pytest.raises(ValueError, match="already registered"):

        @tf.keras.utils.register_keras_serializable(package="TestPkg", name="fn")
        def f2(x):
            return x


def test_custom_objects_and_scope_precedence():
    class A(initializers.Zeros):
        pass

    class B(initializers.Ones):
        pass

    cfg = {"class_name": "Thing", "config": {}}
    with pytest.raises(ValueError, match="Unknown object: 'Thing'.*custom_object_scope"):
        serialization.deserialize_keras_object(cfg)
    with tf.keras.utils.custom_object_scope({"Thing": A}):
        assert isinstance(serialization.deserialize_keras_object(cfg), A)
        got = serialization.deserialize_keras_object(cfg, custom_objects={"Thing": B})
        assert isinstance(got, B)
    assert serialization.get_registered_object("Thing") is None


def test_bad_identifiers():
    with pytest.raises(ValueError, match="class_name"):
        serialization.deserialize_keras_object({"config": {}})
    with pytest.raises(ValueError, match="neither get_config"):
        serialization.serialize_keras_object(3)
    assert serialization.serialize_keras_object(None) is None


def test_nested_objects_are_serialized_in_configs():
    class Holder:
        def __init__(self, init):
            self.init = init

        def get_config(self):
            return {"init": self.init, "arr": np.arange(3)}

    cfg = serialization.serialize_keras_object(Holder(initializers.Constant(2.0)))
    assert cfg["config"]["init"] == {"class_name": "Constant", "config": {"value": 2.0}}
    assert cfg["config"]["arr"] == [0, 1, 2]


def test_to_categorical():
    out = to_categorical([[1], [0], [3]], num_classes=4)
    np.testing.assert_array_equal(out, np.eye(4, dtype=np.float32)[[1, 0, 3]])
    assert out.dtype == np.float32
    assert to_categorical(tf.constant([2, 0])).shape == (2, 3)
    assert to_categorical(np.zeros((2, 5), dtype=int), 2).shape == (2, 5, 2)
    with pytest.raises(ValueError, match="out of range"):
        to_categorical([5], num_classes=3)
    with pytest.raises(ValueError, match=">= 0"):
        to_categorical([-1])


def test_normalize_and_set_random_seed():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(normalize(x), [[0.6, 0.8], [0, 0]])
    np.testing.assert_allclose(normalize(x, axis=0, order=1), [[1, 1], [0, 0]])
    set_random_seed(3)
    a = (tf.random.uniform((3,)).numpy(), np.random.rand())
    set_random_seed(3)
    b = (tf.random.uniform((3,)).numpy(), np.random.rand())
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    with pytest.raises(ValueError, match="expects an int"):
        set_random_seed("x")


def test_utils_facade():
    assert tf.keras.utils.to_categorical is to_categorical
    assert tf.keras.utils.CustomObjectScope is serialization.custom_object_scope
