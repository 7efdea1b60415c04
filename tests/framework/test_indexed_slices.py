"""tf.IndexedSlices, tf.IndexedSlicesSpec and the Variable scatter methods, as in TF 2.21."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import numeric_gradient

I = tf.IndexedSlices


def _slices(dense_shape=(3, 2)):
    return I(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([0, 2]), tf.constant(dense_shape))


def test_properties_and_repr():
    s = _slices()
    assert s.dtype == tf.float32 and s.device.endswith("CPU:0")
    assert s.shape == [3, 2] and s.dense_shape.numpy().tolist() == [3, 2]
    assert str(s).startswith("IndexedSlices(indices=tf.Tensor([0 2]")
    with pytest.raises(AttributeError, match="Tensor.name is undefined"):
        s.name  # noqa: B018
    neg = -s
    assert isinstance(neg, I) and neg.values.numpy().tolist() == [[-1, -2], [-3, -4]]
    no_shape = I(tf.constant([[1.0]]), tf.constant([0]))
    assert no_shape.dense_shape is None and no_shape.shape.rank is None
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        I(tf.constant([1.0]), tf.constant([0.0]))


def test_dense_conversion_sums_duplicates():
    s = I(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([2, 2]), tf.constant([3, 2]))
    np.testing.assert_array_equal(tf.convert_to_tensor(s).numpy(), [[0, 0], [0, 0], [4, 6]])
    np.testing.assert_array_equal(np.asarray(s), [[0, 0], [0, 0], [4, 6]])
    assert float(tf.reduce_sum(s)) == 10.0  # ops take it as its dense value
    with pytest.raises(ValueError, match="without dense_shape"):
        tf.convert_to_tensor(I(tf.constant([[1.0]]), tf.constant([0])))
    with pytest.raises(ValueError, match="requested dtype int32"):
        tf.convert_to_tensor(s, tf.int32)


def test_dense_conversion_is_differentiable():
    idx, shape = tf.constant([1, 1, 0]), tf.constant([3, 2])
    w = np.random.default_rng(1).standard_normal((3, 2))
    x0 = np.random.default_rng(0).standard_normal((3, 2))

    def f(x):
        dense = tf.convert_to_tensor(I(x, idx, shape))
        return tf.reduce_sum(dense * w)

    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    numeric = numeric_gradient(lambda a: float(f(tf.constant(a))), x0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_spec():
    assert repr(_slices()._type_spec) == (
        "IndexedSlicesSpec(TensorShape([3, 2]), tf.float32, tf.int32, tf.int32, TensorShape([2]))"
    )
    spec = tf.type_spec_from_value(I(tf.constant([[1.0, 2.0]]), tf.constant([0])))
    assert spec == tf.IndexedSlicesSpec([None, 2], tf.float32, tf.int32, None, [1])
    assert repr(tf.IndexedSlicesSpec()) == (
        "IndexedSlicesSpec(TensorShape(None), tf.float32, tf.int64, None, TensorShape([None]))"
    )
    assert tf.IndexedSlicesSpec().value_type is tf.IndexedSlices
    assert spec.is_compatible_with(I(tf.constant([[1.0, 2.0]]), tf.constant([4])))
    parts = _slices()._type_spec.to_tensors(_slices())
    back = _slices()._type_spec.from_tensors(iter(parts))
    np.testing.assert_array_equal(tf.convert_to_tensor(back), tf.convert_to_tensor(_slices()))


# (method, expected) for v = [[0, 1], [2, 3], [4, 5]] and the slices above; from TF 2.21.
CASES = {
    "scatter_update": [[1, 2], [2, 3], [3, 4]],
    "scatter_add": [[1, 3], [2, 3], [7, 9]],
    "scatter_sub": [[-1, -1], [2, 3], [1, 1]],
    "scatter_mul": [[0, 2], [2, 3], [12, 20]],
    "scatter_div": [[0, 0.5], [2, 3], [4 / 3, 1.25]],
    "scatter_max": [[1, 2], [2, 3], [4, 5]],
    "scatter_min": [[0, 1], [2, 3], [3, 4]],
}


@pytest.mark.parametrize("method", sorted(CASES))
def test_scatter_methods(method):
    v = tf.Variable([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    out = getattr(v, method)(_slices())
    assert out is v
    np.testing.assert_allclose(v.numpy(), CASES[method], rtol=1e-6)


def test_scatter_duplicates_and_scalar_index():
    v = tf.Variable([[0.0, 0.0], [0.0, 0.0]])
    v.scatter_add(I(tf.constant([[1.0, 1.0], [2.0, 2.0]]), tf.constant([0, 0])))
    assert v.numpy().tolist() == [[3, 3], [0, 0]]
    v.scatter_update(I(tf.constant([[1.0, 1.0], [2.0, 2.0]]), tf.constant([1, 1])))
    assert v.numpy().tolist()[1] == [2, 2]  # the last write wins
    v.scatter_update(I(tf.constant([7.0, 8.0]), tf.constant(0)))
    assert v.numpy().tolist()[0] == [7, 8]
    ints = tf.Variable([7, 9])
    ints.scatter_div(I(tf.constant([-2, 2]), tf.constant([0, 1])))
    assert ints.numpy().tolist() == [-3, 4]  # truncation toward zero, as TF


def test_scatter_errors_leave_the_variable_unchanged():
    v = tf.Variable([[0.0, 1.0], [2.0, 3.0]])
    with pytest.raises(TypeError, match="must be a `tf.IndexedSlices`"):
        v.scatter_update([1, 2])
    bad = r"indices\[1\] = 5 is not in \[0, 2\)"
    with pytest.raises(tf.errors.InvalidArgumentError, match=bad):
        v.scatter_add(I(tf.constant([[1.0, 1.0], [1.0, 1.0]]), tf.constant([0, 5])))
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        v.scatter_update(I(tf.constant([[1, 1]]), tf.constant([0])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="needs updates of shape"):
        v.scatter_update(I(tf.constant([[1.0, 1.0, 1.0]]), tf.constant([0])))
    assert v.numpy().tolist() == [[0, 1], [2, 3]]


def test_scatter_nd_and_batch_scatter():
    v = tf.Variable([[1.0, 1.0], [2.0, 2.0], [3.0, 4.0]])
    v.scatter_nd_add([[0, 1], [2, 0], [2, 0]], [10.0, 20.0, 1.0])
    assert v.numpy().tolist() == [[1, 11], [2, 2], [24, 4]]
    v.scatter_nd_sub([[0], [2]], [[1.0, 1.0], [1.0, 1.0]])
    assert v.numpy().tolist() == [[0, 10], [2, 2], [23, 3]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="needs updates of shape"):
        v.scatter_nd_add([[0]], [1.0])
    b = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    b.batch_scatter_update(I(tf.constant([[9.0], [8.0]]), tf.constant([[1], [0]])))
    assert b.numpy().tolist() == [[1, 9], [8, 4]]
    b.batch_scatter_update(I(tf.constant([[5.0, 5.0]]), tf.constant([1])))
    assert b.numpy().tolist() == [[1, 9], [5, 5]]


def test_sparse_read_and_gather_nd_are_differentiable():
    v = tf.Variable([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v.sparse_read([0, 2, 2])) + 10.0 * tf.reduce_sum(v.gather_nd([[1, 0]]))
    assert v.sparse_read([[0], [2]]).shape == [2, 1, 2]
    grad = tf.convert_to_tensor(tape.gradient(y, v)).numpy()
    np.testing.assert_array_equal(grad, [[1, 1], [10, 0], [2, 2]])


def test_scatter_reaches_every_mirrored_copy(two_cpus):
    strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    with strategy.scope():
        v = tf.Variable([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    v.scatter_add(_slices())
    v.scatter_nd_sub([[1, 1]], [3.0])
    for copy in v.values:
        np.testing.assert_array_equal(np.asarray(copy), [[1, 3], [2, 0], [7, 9]])
