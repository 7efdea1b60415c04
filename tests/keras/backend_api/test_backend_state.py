"""keras.backend state and symbolic helpers, checked against tf_keras 2.21's behaviour."""

import numpy as np
import pytest

import layerflow as tf

K = tf.keras.backend


@pytest.fixture(autouse=True)
def _fresh_session():
    K.clear_session()
    yield
    K.clear_session()


def test_gradients_raise_eagerly_like_tf():
    with pytest.raises(RuntimeError, match="GradientTape"):
        K.gradients(tf.constant(1.0), [tf.Variable(1.0)])


def test_stop_gradient_of_a_list_is_a_map_and_blocks_gradients():
    assert isinstance(K.stop_gradient([tf.ones(1)]), map)
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(K.stop_gradient(v) * v)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [1.0, 2.0])


def test_uids_count_per_prefix_and_reset_with_clear_session():
    K.reset_uids()
    assert (K.get_uid("a"), K.get_uid("a"), K.get_uid("b")) == (1, 2, 1)
    K.clear_session()
    assert K.get_uid("a") == 1
    assert tf.keras.layers.Dense(1).name == "dense"  # clear_session still resets layer names


def test_learning_phase_set_scope_and_clear():
    assert K.learning_phase() == 0
    with pytest.warns(UserWarning, match="set_learning_phase` is deprecated"):
        K.set_learning_phase(1)
    assert K.learning_phase() == 1
    assert K.in_train_phase(1, 2) == 1 and K.in_test_phase(1, 2) == 2
    K.clear_session()
    assert K.learning_phase() == 0 and K.in_train_phase(1, 2) == 2
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="0 or 1"):
        K.set_learning_phase(2)
    assert K.learning_phase() == 0
    with pytest.warns(UserWarning, match="learning_phase_scope"):
        with K.learning_phase_scope(1):
            assert K.learning_phase() == 1
    assert K.learning_phase() == 0


def test_in_train_phase_follows_the_training_flag_of_a_layer_call():
    class Noisy(tf.keras.layers.Layer):
        def call(self, x):
            return K.in_train_phase(x + 1.0, x)

    layer = Noisy()
    x = tf.zeros((1, 2))
    assert float(tf.reduce_sum(layer(x, training=True))) == 2.0
    assert float(tf.reduce_sum(layer(x, training=False))) == 0.0


def test_is_keras_tensor_placeholder_and_function():
    with pytest.raises(ValueError, match="Expected a symbolic tensor"):
        K.is_keras_tensor(np.ones(2))
    assert not K.is_keras_tensor(tf.ones(2))
    p = K.placeholder((None, 3))
    assert K.is_keras_tensor(p) and tuple(p.shape) == (None, 3)
    assert K.int_shape(K.placeholder(ndim=2)) == (None, None)
    x = tf.keras.Input((3,))
    y = tf.keras.layers.Dense(2, kernel_initializer="ones")(x)
    f = K.function([x], [y])
    out = f([np.ones((1, 3), np.float32)])
    assert isinstance(out, list) and isinstance(out[0], np.ndarray)
    np.testing.assert_allclose(out[0], [[3.0, 3.0]])
    assert isinstance(K.function(x, y)(np.ones((1, 3), np.float32)), np.ndarray)
    with pytest.raises(ValueError, match="updates"):
        K.function([x], [y], updates=[(1, 2)])


def test_backend_functions_work_on_keras_tensors():
    x = tf.keras.Input((4,))
    y = K.sum(K.square(x), axis=-1, keepdims=True)
    model = tf.keras.Model(x, y)
    np.testing.assert_allclose(model(np.full((2, 4), 2.0, np.float32)).numpy(), [[16.0]] * 2)


def test_variables_values_and_assignment():
    v = K.variable([1, 2])
    assert isinstance(v, tf.Variable) and v.dtype == tf.float32 and v.name == "Variable:0"
    assert not isinstance(K.zeros((0, 2)), tf.Variable)
    assert isinstance(K.ones((2, 2)), tf.Variable)
    K.set_value(v, [5, 6])
    np.testing.assert_array_equal(K.get_value(v), [5.0, 6.0])
    w = K.variable(0.0, dtype="float64")
    K.batch_set_value([(v, [1, 1]), (w, 3)])
    assert [a.tolist() for a in K.batch_get_value([v, w])] == [[1.0, 1.0], 3.0]
    assert K.get_value(3) == 3


def test_floatx_and_epsilon_feed_the_defaults():
    K.set_floatx("float64")
    try:
        assert K.variable(1).dtype == tf.float64
        assert K.cast_to_floatx([1]).dtype == np.float64
        assert K.constant(1).dtype == tf.float64
    finally:
        K.set_floatx("float32")
    K.set_epsilon(0.1)
    try:
        got = K.binary_crossentropy(tf.constant([1.0]), tf.constant([1.0])).numpy()
        np.testing.assert_allclose(got, [-np.log(0.9 + 0.1)], rtol=1e-6)
    finally:
        K.set_epsilon(1e-7)


def test_sparse_helpers_and_misc():
    s = tf.sparse.from_dense(tf.constant([[1, 0]]))
    assert K.is_sparse(s) and not K.is_sparse(tf.ones(1))
    np.testing.assert_array_equal(K.to_dense(s).numpy(), [[1, 0]])
    assert K.backend() == "tensorflow"
    assert K.manual_variable_initialization(True) is None
    with K.name_scope("abc") as scope:
        assert scope == "abc/"
    assert not K.experimental.is_tf_random_generator_enabled()
    K.experimental.enable_tf_random_generator()
    assert K.experimental.is_tf_random_generator_enabled()
    K.experimental.disable_tf_random_generator()


def test_print_tensor_prints_and_returns(capsys):
    out = K.print_tensor(tf.ones(2), "msg")
    assert "msg [1 1]" in capsys.readouterr().out
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0])


def test_random_tensors_have_keras_dtypes_and_ranges():
    r = K.random_uniform((1000,), seed=3)
    assert r.dtype == tf.float32 and 0 <= float(K.min(r)) and float(K.max(r)) < 1
    np.testing.assert_array_equal(K.eval(K.random_bernoulli((4,), p=1.0)), np.ones(4))
    n = K.random_normal((2000,), 1.0, 2.0, seed=1)
    assert abs(float(K.mean(n)) - 1.0) < 0.2 and abs(float(K.std(n)) - 2.0) < 0.2
    t = K.truncated_normal((500,), stddev=1.0, seed=2)
    assert float(K.max(K.abs(t))) <= 2.0
    assert isinstance(K.random_uniform_variable((2, 2), 0, 1, seed=1), tf.Variable)
    assert K.random_normal_variable((2,), 0, 1, dtype="float64").dtype == tf.float64
    with pytest.warns(UserWarning, match="random_bernoulli"):
        K.random_binomial((2,), 0.5, seed=1)
    d = K.dropout(tf.ones((1000,)), 0.5, seed=1).numpy()
    assert set(np.unique(d)) == {0.0, 2.0}


def test_errors_name_what_was_wrong():
    with pytest.raises(ValueError, match="1D"):
        K.softmax(tf.ones(3))
    with pytest.raises(ValueError, match="rank < 2"):
        K.batch_dot(tf.ones((2,)), tf.ones((2, 3)))
    with pytest.raises(ValueError, match="different batch sizes"):
        K.batch_dot(tf.ones((2, 3)), tf.ones((3, 3)))
    with pytest.raises(ValueError, match="axis 0"):
        K.batch_dot(tf.ones((2, 3)), tf.ones((2, 3)), axes=0)
    with pytest.raises(ValueError, match=r"x.shape\[2\] != y.shape\[1\]"):
        K.batch_dot(tf.ones((2, 3, 4)), tf.ones((2, 5, 4)), axes=(2, 1))
    with pytest.raises(ValueError, match="Invalid padding"):
        K.conv2d(tf.ones((1, 3, 3, 1)), tf.ones((2, 2, 1, 1)), padding="full")
    with pytest.raises(ValueError, match="Unknown data_format"):
        K.pool2d(tf.ones((1, 3, 3, 1)), (2, 2), data_format="nhwc")
    with pytest.raises(ValueError, match="Invalid pooling mode"):
        K.pool2d(tf.ones((1, 3, 3, 1)), (2, 2), pool_mode="sum")
    with pytest.raises(ValueError, match="interpolation"):
        K.resize_images(tf.ones((1, 2, 2, 1)), 2, 2, "channels_last", "cubic")
    with pytest.raises(ValueError, match="Rank of `condition`"):
        K.switch(tf.ones((2, 2, 2)) > 0, tf.ones((2, 2)), tf.zeros((2, 2)))
    with pytest.raises(ValueError, match="2-D"):
        K.repeat(tf.ones(3), 2)
    with pytest.raises(ValueError, match="Unrolling requires"):
        K.rnn(lambda x, s: (x, s), tf.ones((2, 0, 3)), [tf.zeros((2, 3))], unroll=True)
