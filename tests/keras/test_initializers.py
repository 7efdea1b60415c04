import math

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras import initializers as I

FAN_CASES = [
    ("GlorotUniform", "uniform", lambda fi, fo: 1.0 / ((fi + fo) / 2)),
    ("GlorotNormal", "normal", lambda fi, fo: 1.0 / ((fi + fo) / 2)),
    ("HeNormal", "normal", lambda fi, fo: 2.0 / fi),
    ("HeUniform", "uniform", lambda fi, fo: 2.0 / fi),
    ("LecunNormal", "normal", lambda fi, fo: 1.0 / fi),
    ("LecunUniform", "uniform", lambda fi, fo: 1.0 / fi),
]


@pytest.mark.parametrize("name,kind,variance", FAN_CASES)
def test_variance_scaling_family_statistics(name, kind, variance):
    fan_in, fan_out = 200, 300
    w = getattr(tf.keras.initializers, name)(seed=7)((fan_in, fan_out)).numpy()
    assert w.dtype == np.float32 and w.shape == (fan_in, fan_out)
    var = variance(fan_in, fan_out)
    assert abs(w.mean()) < 0.01 * math.sqrt(var) * 10
    assert w.var() == pytest.approx(var, rel=0.05)
    if kind == "uniform":
        limit = math.sqrt(3 * var)
        assert np.abs(w).max() <= limit + 1e-7
        assert np.abs(w).max() > 0.98 * limit
    else:  # truncated at two (pre-correction) standard deviations
        assert np.abs(w).max() <= 2 * math.sqrt(var) / 0.87962566103423978 + 1e-6


def test_glorot_uniform_limit_formula():
    w = tf.keras.initializers.GlorotUniform(seed=1)((4, 8)).numpy()
    assert np.abs(w).max() <= math.sqrt(6 / 12)


def test_conv_kernel_fans_include_receptive_field():
    w = tf.keras.initializers.HeUniform(seed=3)((3, 3, 16, 32)).numpy()
    assert np.abs(w).max() <= math.sqrt(6 / (9 * 16)) + 1e-7
    assert w.var() == pytest.approx(2 / (9 * 16), rel=0.1)


def test_seeded_initializer_repeats_unseeded_varies_and_follows_global_seed():
    init = tf.keras.initializers.RandomNormal(seed=5)
    np.testing.assert_array_equal(init((3, 3)).numpy(), init((3, 3)).numpy())
    free = tf.keras.initializers.RandomNormal()
    tf.random.set_seed(11)
    a1, a2 = free((4,)).numpy(), free((4,)).numpy()
    assert not np.array_equal(a1, a2)
    tf.random.set_seed(11)
    np.testing.assert_array_equal(free((4,)).numpy(), a1)
    np.testing.assert_array_equal(free((4,)).numpy(), a2)


def test_random_normal_uniform_truncated_moments():
    n = tf.random_normal_initializer(mean=1.0, stddev=0.01, seed=0)((10000,)).numpy()
    assert n.mean() == pytest.approx(1.0, abs=1e-3) and n.std() == pytest.approx(0.01, rel=0.05)
    u = tf.random_uniform_initializer(-3.0, 5.0, seed=0)((10000,)).numpy()
    assert u.min() >= -3 and u.max() < 5 and u.mean() == pytest.approx(1.0, abs=0.1)
    t = tf.keras.initializers.TruncatedNormal(2.0, 0.5, seed=0)((10000,)).numpy()
    assert np.abs(t - 2.0).max() <= 1.0 and t.mean() == pytest.approx(2.0, abs=0.02)
    i = tf.keras.initializers.RandomUniform(0, 4, seed=0)((1000,), dtype=tf.int32).numpy()
    assert i.dtype == np.int32 and set(np.unique(i)) == {0, 1, 2, 3}


def test_keras_defaults():
    assert tf.keras.initializers.RandomNormal().get_config() == {
        "mean": 0.0, "stddev": 0.05, "seed": None}  # fmt: skip
    assert tf.keras.initializers.RandomUniform().get_config()["minval"] == -0.05


def test_constant_zeros_ones_dtype():
    c = tf.keras.initializers.Constant(1)((2, 3))
    assert c.dtype == tf.float32 and np.all(c.numpy() == 1)
    np.testing.assert_array_equal(tf.constant_initializer([1, 2, 3, 4])((2, 2)).numpy(),
                                  [[1, 2], [3, 4]])  # fmt: skip
    assert tf.zeros_initializer()((2,), dtype=tf.float64).dtype == tf.float64
    assert tf.ones_initializer()((2,), dtype="int32").numpy().tolist() == [1, 1]
    with pytest.raises(ValueError, match="cannot fill shape"):
        tf.keras.initializers.Constant([1, 2, 3])((2, 2))


def test_random_initializer_rejects_int_dtype():
    with pytest.raises(ValueError, match="floating"):
        tf.keras.initializers.GlorotUniform()((2, 2), dtype="int32")


def test_orthogonal_and_identity():
    q = tf.keras.initializers.Orthogonal(gain=2.0, seed=0)((4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(4), atol=1e-5)
    q = tf.keras.initializers.Orthogonal(seed=0)((6, 4)).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    np.testing.assert_array_equal(tf.keras.initializers.Identity(3.0)((2, 3)).numpy(),
                                  3 * np.eye(2, 3))  # fmt: skip
    with pytest.raises(ValueError, match="rank >= 2"):
        tf.keras.initializers.Orthogonal()((3,))


def test_variance_scaling_validation():
    with pytest.raises(ValueError, match="mode"):
        tf.keras.initializers.VarianceScaling(mode="fan_sideways")
    with pytest.raises(ValueError, match="positive"):
        tf.keras.initializers.VarianceScaling(scale=0.0)


def test_get_by_string_class_instance_dict_callable():
    assert isinstance(I.get("glorot_uniform"), I.GlorotUniform)
    assert isinstance(I.get("Zeros"), I.Zeros)
    assert isinstance(I.get(I.HeNormal), I.HeNormal)
    inst = I.Ones()
    assert I.get(inst) is inst
    assert I.get(None) is None
    got = I.get({"class_name": "RandomNormal", "config": {"mean": 2.0, "stddev": 1.0, "seed": 1}})
    assert got.get_config() == {"mean": 2.0, "stddev": 1.0, "seed": 1}

    def fn(shape, dtype=None):
        return tf.zeros(shape)

    assert I.get(fn) is fn
    with pytest.raises(ValueError, match="Unknown initializer"):
        I.get("glorot_sideways")
    with pytest.raises(ValueError, match="Could not interpret"):
        I.get(3)


@pytest.mark.parametrize("name", sorted(I._MODULE_OBJECTS))
def test_every_initializer_round_trips(name):
    cls = I._MODULE_OBJECTS[name]
    if cls is I.Initializer:
        return
    init = cls()
    again = I.deserialize(I.serialize(init))
    assert type(again) is cls and again.get_config() == init.get_config()


def test_seed_user_subclass_myinit():
    class MyInit(tf.keras.initializers.Initializer):
        def __call__(self, shape, dtype=None):
            data = tf.random.uniform(shape, -10, 10, dtype=dtype)
            factor = tf.cast(tf.abs(data) >= 5, tf.float32)
            return data * factor

    w = MyInit()((1000,), dtype=tf.float32).numpy()
    assert np.all((w == 0) | (np.abs(w) >= 5))
    assert 0.3 < np.mean(w == 0) < 0.7


def test_tf1_aliases_point_at_keras_classes():
    assert tf.random_normal_initializer is I.RandomNormal
    assert tf.zeros_initializer is I.Zeros
    assert tf.initializers.GlorotUniform is I.GlorotUniform
    assert tf.keras.initializers.glorot_uniform is I.GlorotUniform
