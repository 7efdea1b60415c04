"""tf.sets against a Python-set oracle on random dense and sparse operands; layouts, errors and
validate_indices as TF 2.21 (the fixed values were checked against it)."""

import itertools

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.ops.ctc_ops import SparseTensorValue

rng = np.random.default_rng(7)
OPS = {
    "union": lambda x, y: x | y,
    "intersection": lambda x, y: x & y,
    "difference": lambda x, y: x - y,
}


def parts(st):
    assert isinstance(st, tf.SparseTensor)
    return st.indices.numpy().tolist(), st.values.numpy().tolist(), st.dense_shape.numpy().tolist()


def to_sparse(dense, keep):
    """The entries of `dense` where `keep`, as a row-major SparseTensorValue."""
    idx = np.argwhere(keep)
    return tf.SparseTensor(idx, dense[keep], list(dense.shape)), idx


def groups_of(dense, keep):
    out = {}
    for pos in itertools.product(*map(range, dense.shape[:-1])):
        out[pos] = {v for v, k in zip(dense[pos], keep[pos]) if k}
    return out


def oracle(ga, gb, fn, group_shape):
    res = {pos: sorted(fn(ga[pos], gb[pos])) for pos in ga}
    width = max((len(r) for r in res.values()), default=0)
    idx = [[*pos, j] for pos in sorted(res) for j in range(len(res[pos]))]
    vals = [v for pos in sorted(res) for v in res[pos]]
    return idx, vals, [*group_shape, width]


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("kinds", ["dense-dense", "dense-sparse", "sparse-dense", "sparse-sparse"])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "string"])
def test_set_ops_match_python_sets(name, kinds, dtype):
    shape_a, shape_b = (3, 2, 5), (3, 2, 4)
    a = rng.integers(0, 6, shape_a)
    b = rng.integers(0, 6, shape_b)
    if dtype == "string":
        a, b = (np.vectorize(lambda v: b"w%d" % v, otypes=[object])(x) for x in (a, b))
    else:
        a, b = a.astype(dtype), b.astype(dtype)
    keep_a = np.ones(shape_a, bool) if kinds.startswith("dense") else rng.random(shape_a) < 0.5
    keep_b = np.ones(shape_b, bool) if kinds.endswith("dense") else rng.random(shape_b) < 0.5
    opa = tf.constant(a) if kinds.startswith("dense") else to_sparse(a, keep_a)[0]
    opb = tf.constant(b) if kinds.endswith("dense") else to_sparse(b, keep_b)[0]
    out = getattr(tf.sets, name)(opa, opb)
    want = oracle(groups_of(a, keep_a), groups_of(b, keep_b), OPS[name], shape_a[:-1])
    assert parts(out) == want
    assert out.indices.dtype == tf.int64 and out.dense_shape.dtype == tf.int64
    assert out.values.dtype == tf.as_dtype(dtype)


def test_values_checked_against_tf():
    a = tf.constant([[[1, 2, 3], [4, 5, 6]], [[1, 2, 2], [7, 3, 3]]])
    b = tf.constant([[[2, 3, 9], [5, 5, 5]], [[1, 1, 1], [3, 3, 3]]])
    assert parts(tf.sets.intersection(a, b)) == (
        [[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 0]],
        [2, 3, 5, 1, 3],
        [2, 2, 2],
    )
    assert parts(tf.sets.difference(a, b)) == (
        [[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 1, 0]],
        [1, 4, 6, 2, 7],
        [2, 2, 2],
    )
    assert parts(tf.sets.difference(a, b, aminusb=False)) == ([[0, 0, 0]], [9], [2, 2, 1])
    assert parts(tf.sets.union([[3, 1], [2, 2]], [[9], [0]])) == (
        [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]],
        [1, 3, 9, 0, 2],
        [2, 3],
    )
    sa = tf.SparseTensor([[0, 2], [1, 0]], [5, 2], [2, 3])
    assert parts(tf.sets.difference(sa, tf.constant([[5], [1]]))) == ([[1, 0]], [2], [2, 1])
    assert parts(tf.sets.union([["a", ""]], [["b"]]))[1] == [b"", b"a", b"b"]


def test_empty_results_and_empty_sets():
    assert parts(tf.sets.intersection([[1], [2]], [[3], [4]])) == ([], [], [2, 0])
    assert parts(tf.sets.union(tf.zeros([2, 0], tf.int32), tf.zeros([2, 0], tf.int32))) == (
        [],
        [],
        [2, 0],
    )
    assert parts(tf.sets.union(tf.zeros([0, 3], tf.int32), tf.zeros([0, 3], tf.int32))) == (
        [],
        [],
        [0, 0],
    )
    st = tf.SparseTensor([[0, 0]], [1], [2, 3])
    assert parts(tf.sets.union(st, tf.SparseTensor([[0, 0]], [2], [2, 5]))) == (
        [[0, 0], [0, 1]],
        [1, 2],
        [2, 2],
    )


def test_size_counts_unique_values_per_group():
    st = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 1, 3], [3, 3])
    out = tf.sets.size(st)
    assert out.dtype == tf.int32 and out.numpy().tolist() == [1, 1, 0]
    out = tf.sets.size(tf.SparseTensor([[0, 0, 0]], [1], [2, 2, 3]))
    assert out.numpy().tolist() == [[1, 0], [0, 0]]
    assert tf.sets.size(tf.SparseTensor([[0, 1], [0, 2]], ["x", "y"], [1, 3])).numpy() == [2]


def test_size_takes_sparse_only():
    with pytest.raises(TypeError, match="expected a SparseTensor"):
        tf.sets.size(tf.constant([[1, 2]]))


@pytest.mark.parametrize("value", [[[1.0]], [[True]]])
def test_unsupported_dtypes_raise_type_error(value):
    with pytest.raises(TypeError, match="invalid dtype"):
        tf.sets.union(tf.constant(value), tf.constant(value))
    with pytest.raises(TypeError, match="invalid dtype"):
        tf.sets.size(tf.SparseTensor([[0, 0]], value[0], [1, 1]))


def test_mismatched_dtypes_and_shapes():
    with pytest.raises(TypeError, match="types don't match"):
        tf.sets.union(tf.constant([[1]]), tf.constant([[1]], tf.int64))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"mismatched shapes \[2\] vs \[3\]"):
        tf.sets.union(tf.constant([[1], [2]]), tf.constant([[2], [3], [4]]))
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"mismatched shapes \[1\] vs \[1, 1\]"
    ):
        tf.sets.intersection(tf.constant([[1, 2]]), tf.constant([[[3]]]))
    for bad in (tf.constant([1, 2]), tf.constant(1)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="< 2"):
            tf.sets.union(bad, bad)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank 1"):
        tf.sets.size(tf.SparseTensor([[0]], [1], [3]))


def test_validate_indices_checks_order_and_repeats():
    unordered = tf.SparseTensor([[0, 1], [0, 0]], [1, 2], [1, 3])
    repeated = tf.SparseTensor([[0, 0], [0, 0]], [1, 2], [1, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of order"):
        tf.sets.union(unordered, tf.constant([[1]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="is repeated"):
        tf.sets.size(repeated)
    assert parts(tf.sets.union(unordered, unordered, validate_indices=False))[1] == [1, 2]
    assert tf.sets.size(repeated, validate_indices=False).numpy().tolist() == [2]


def test_out_of_bounds_indices_always_raise():
    st = tf.SparseTensor([[0, 5]], [1], [1, 3])
    for validate in (True, False):
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
            tf.sets.union(st, tf.constant([[1]]), validate_indices=validate)


def test_sparse_tensor_value_inputs_are_accepted_as_tf():
    st = SparseTensorValue([[0, 0], [0, 1]], [4, 2], [1, 2])
    assert parts(tf.sets.union(st, [[3]])) == ([[0, 0], [0, 1], [0, 2]], [2, 3, 4], [1, 3])
    assert tf.sets.size(st).numpy().tolist() == [2]


def test_tf1_aliases_behave_as_the_tf2_names():
    a, b = [[1, 2, 3]], [[2, 4]]
    assert parts(tf.sets.set_union(a, b)) == parts(tf.sets.union(a, b))
    assert parts(tf.sets.set_intersection(a, b)) == parts(tf.sets.intersection(a, b))
    assert parts(tf.sets.set_difference(a, b, aminusb=False)) == ([[0, 0]], [4], [1, 1])
    assert tf.sets.set_size(tf.SparseTensor([[0, 0]], [1], [1, 2])).numpy().tolist() == [1]


def test_results_feed_tf_sparse():
    dense = tf.sparse.to_dense(tf.sets.union([[3, 1], [2, 2]], [[9], [0]]))
    assert dense.numpy().tolist() == [[1, 3, 9], [0, 2, 0]]
