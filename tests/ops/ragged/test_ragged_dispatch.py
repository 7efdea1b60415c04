"""Ops over RaggedTensors (elementwise, reductions, concat/stack/gather, where) and gradients
through flat_values; expected values are TF 2.21's."""

import numpy as np
import pytest

import layerflow as tf


def test_elementwise_and_operators():
    x = tf.ragged.constant([[1, 2], [3]])
    assert (x + tf.ragged.constant([[10, 20], [30]])).to_list() == [[11, 22], [33]]
    assert (x * 2).to_list() == [[2, 4], [6]] and (2 - x).to_list() == [[1, 0], [-1]]
    assert (x + tf.constant([[1], [2]])).to_list() == [[2, 3], [5]]  # dense rows broadcast
    assert (x / 2).to_list() == [[0.5, 1.0], [1.5]] and (-x).to_list() == [[-1, -2], [-3]]
    assert (x > 1).to_list() == [[False, True], [True]]
    assert tf.cast(x, tf.float32).dtype == tf.float32
    assert tf.math.exp(tf.cast(x, tf.float32)).flat_values.numpy() == pytest.approx(
        np.exp([1.0, 2.0, 3.0]), rel=1e-6)  # fmt: skip
    assert tf.nn.relu(x - 2).to_list() == [[0, 0], [1]]
    with pytest.raises(ValueError, match="incompatible row partitions"):
        x + tf.ragged.constant([[1], [2, 3]])
    with pytest.raises(ValueError, match="Cannot broadcast"):
        x + tf.constant([1, 2])
    with pytest.raises(ValueError, match="dimension 0 has size 3"):
        x + tf.constant([[1], [2], [3]])
    assert (tf.ragged.constant([[1, 2], [3, 4]]) + tf.constant([[1, 2]])).to_list() == [
        [2, 4], [4, 6]]  # fmt: skip


def test_reductions_over_ragged_axes():
    x = tf.ragged.constant([[1, 2], [3]])
    assert tf.reduce_sum(x, axis=1).numpy().tolist() == [3, 3]
    assert tf.reduce_sum(x, axis=0).numpy().tolist() == [4, 2]
    assert int(tf.reduce_sum(x)) == 6
    mean = tf.reduce_mean(x, axis=1)
    assert mean.dtype == tf.float64 and mean.numpy().tolist() == [1.5, 3.0]
    assert tf.reduce_max(x, axis=0).numpy().tolist() == [3, 2]
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    assert tf.reduce_sum(rt, axis=2).to_list() == [[3, 3], [], [15]]
    assert tf.reduce_sum(rt, axis=1).to_list() == [[4, 2], [], [4, 5, 6]]
    assert tf.reduce_max(rt, axis=[1, 2]).numpy().tolist() == [3, -(2**31), 6]
    assert tf.reduce_any(x > 2, axis=1).numpy().tolist() == [False, True]
    assert tf.reduce_all(x > 0, axis=1).numpy().tolist() == [True, True]
    assert tf.reduce_prod(x, axis=1).numpy().tolist() == [2, 3]


def test_concat_stack_gather_expand_size_where():
    x = tf.ragged.constant([[1, 2], [3]])
    assert tf.concat([x, x], axis=0).to_list() == [[1, 2], [3], [1, 2], [3]]
    assert tf.concat([x, x], axis=1).to_list() == [[1, 2, 1, 2], [3, 3]]
    assert tf.stack([x, x], axis=0).to_list() == [[[1, 2], [3]], [[1, 2], [3]]]
    assert tf.stack([x, x], axis=1).to_list() == [[[1, 2], [1, 2]], [[3], [3]]]
    assert tf.gather(x, [1, 0, 1]).to_list() == [[3], [1, 2], [3]]
    assert int(tf.size(x)) == 3
    assert tf.expand_dims(x, 0).to_list() == [[[1, 2], [3]]]
    assert tf.expand_dims(x, 1).to_list() == [[[1, 2]], [[3]]]
    assert tf.expand_dims(x, 2).to_list() == [[[1], [2]], [[3]]]
    assert tf.where(x > 1).numpy().tolist() == [[0, 1], [1, 0]]
    assert tf.where(x > 1, x, -x).to_list() == [[-1, 2], [3]]


def test_unsupported_op_names_itself():
    x = tf.ragged.constant([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="RaggedTensor"):
        tf.linalg.matmul(x, x)


def _finite_difference(f, v, eps=1e-6):
    base = v.copy()
    grad = np.zeros_like(base)
    for i in range(base.size):
        plus, minus = base.copy(), base.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad


def test_gradients_flow_through_flat_values():
    values = np.array([0.3, -1.2, 2.0, 0.7, 1.1], np.float64)

    def loss_of(vals):
        v = tf.constant(vals)
        rt = tf.RaggedTensor.from_row_lengths(v, [2, 1, 2])
        y = tf.math.tanh(rt) * rt + 1.0
        rows = tf.reduce_max(y, axis=1) + tf.reduce_sum(rt[:, :2] * 3.0, axis=1)
        dense = rt.to_tensor(default_value=0.5)
        return tf.reduce_sum(rows) + tf.reduce_sum(dense * dense), v

    v = tf.Variable(values)
    with tf.GradientTape() as tape:
        rt = tf.RaggedTensor.from_row_lengths(v, [2, 1, 2])
        y = tf.math.tanh(rt) * rt + 1.0
        rows = tf.reduce_max(y, axis=1) + tf.reduce_sum(rt[:, :2] * 3.0, axis=1)
        dense = rt.to_tensor(default_value=0.5)
        loss = tf.reduce_sum(rows) + tf.reduce_sum(dense * dense)
    got = tape.gradient(loss, v).numpy()
    want = _finite_difference(lambda a: float(loss_of(a)[0]), values)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_shape_rank_add_n_and_keepdims():
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    s = tf.shape(rt)
    assert repr(s) == "<DynamicRaggedShape lengths=[3, (2, 0, 1), (2, 1, 3)] num_row_partitions=2>"
    assert isinstance(s, tf.experimental.DynamicRaggedShape) and s.rank == 3
    assert int(s[0]) == 3 and s.inner_shape.numpy().tolist() == [6]
    with pytest.raises(ValueError, match="Index 1 is not uniform"):
        s[1]
    u = tf.shape(tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4], 2))
    assert u.static_lengths() == [2, 2] and int(u[1]) == 2
    x = tf.ragged.constant([[1, 2], [3]])
    assert int(tf.rank(x)) == 2
    assert tf.add_n([x, x, x]).to_list() == [[3, 6], [9]]
    assert tf.reduce_sum(x, axis=1, keepdims=True).numpy().tolist() == [[3], [3]]
    assert tf.reduce_sum(rt, axis=2, keepdims=True).to_list() == [[[3], [3]], [], [[15]]]


def test_ragged_fill_empty_rows_matches_tf():
    out = tf.ragged_fill_empty_rows([0, 0, 2, 2], [1.0, 2.0, 3.0, 4.0], 4, 9.0)
    assert out.output_value_rowids.numpy().tolist() == [0, 0, 1, 2, 2, 3]
    assert out.output_values.numpy().tolist() == [1.0, 2.0, 9.0, 3.0, 4.0, 9.0]
    assert out.empty_row_indicator.numpy().tolist() == [False, True, False, True]
    assert out.reverse_index_map.numpy().tolist() == [0, 1, 3, 4]
    grad = tf.ragged_fill_empty_rows_grad([0, 1, 3, 4], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert grad.d_values.numpy().tolist() == [1.0, 2.0, 4.0, 5.0]
    assert float(grad.d_default_value) == 9.0


def test_tf_function_takes_ragged_arguments_and_specs():
    @tf.function
    def double(x):
        return x * 2

    assert double(tf.ragged.constant([[1, 2], [3]])).to_list() == [[2, 4], [6]]
    assert double(tf.ragged.constant([[1], [3, 4, 5]])).to_list() == [[2], [6, 8, 10]]

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int32)])
    def row_sums(x):
        return tf.reduce_sum(x, axis=1)

    assert row_sums(tf.ragged.constant([[1, 2], [3]])).numpy().tolist() == [3, 3]
    with pytest.raises(TypeError, match="Binding inputs to tf.function failed"):
        row_sums(tf.ragged.constant([[1.0]]))


def test_tile_and_elementwise_equality():
    x = tf.ragged.constant([[1, 2], [3]])
    assert tf.tile(x, [2, 2]).to_list() == [[1, 2, 1, 2], [3, 3], [1, 2, 1, 2], [3, 3]]
    assert tf.tile(x, [1, 0]).to_list() == [[], []]
    r = tf.ragged.constant([[[1.0], [2.0]], [[3.0]]], ragged_rank=1)
    assert tf.tile(r, [1, 1, 2]).to_list() == [[[1.0, 1.0], [2.0, 2.0]], [[3.0, 3.0]]]
    with pytest.raises(ValueError, match="multiples must hold 2"):
        tf.tile(x, [2])
    assert (x == x).to_list() == [[True, True], [True]]
    assert (x != 1).to_list() == [[False, True], [True]]
    assert (x == None) is False  # noqa: E711 - TF's rule for None
    with pytest.raises(TypeError, match="RaggedTensor is unhashable"):
        hash(x)
