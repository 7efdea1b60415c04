"""SparseTensor elements in tf.data. Expected values, specs and errors are TF 2.21's (checked with
the real TensorFlow)."""

import os

import numpy as np
import pytest

import layerflow as tf


def parts(st):
    return st.indices.numpy().tolist(), st.values.numpy().tolist(), st.dense_shape.numpy().tolist()


@pytest.fixture
def st():
    return tf.SparseTensor([[0, 1], [1, 0], [1, 2], [3, 1]], [1.0, 2.0, 3.0, 4.0], [4, 3])


ROWS = [([[1]], [1.0], [3]), ([[0], [2]], [2.0, 3.0], [3]), ([], [], [3]), ([[1]], [4.0], [3])]


def test_from_tensor_slices_yields_rows_of_one_rank_less(st):
    ds = tf.data.Dataset.from_tensor_slices(st)
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([3]), tf.float32)"
    assert int(ds.cardinality()) == 4
    rows = list(ds)
    assert all(isinstance(r, tf.SparseTensor) for r in rows)
    assert [parts(r) for r in rows] == ROWS


def test_rank3_rows_keep_index_order():
    st3 = tf.SparseTensor([[0, 0, 1], [1, 0, 2], [1, 1, 0]], [1, 2, 3], [2, 2, 3])
    ds = tf.data.Dataset.from_tensor_slices(st3)
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([2, 3]), tf.int32)"
    assert [parts(r) for r in ds] == [([[0, 1]], [1], [2, 3]), ([[0, 2], [1, 0]], [2, 3], [2, 3])]
    assert parts(next(iter(ds.batch(2)))) == (
        [[0, 0, 1], [1, 0, 2], [1, 1, 0]],
        [1, 2, 3],
        [2, 2, 3],
    )


def test_sparse_inside_tuples_and_dicts(st):
    ds = tf.data.Dataset.from_tensor_slices((st, tf.range(4)))
    assert repr(ds.element_spec) == (
        "(SparseTensorSpec(TensorShape([3]), tf.float32), "
        "TensorSpec(shape=(), dtype=tf.int32, name=None))"
    )
    got = [(parts(s), int(i)) for s, i in ds]
    assert got == [(r, i) for i, r in enumerate(ROWS)]
    d = tf.data.Dataset.from_tensor_slices({"a": st, "b": tf.range(4)})
    assert isinstance(d.element_spec["a"], tf.SparseTensorSpec)
    assert [parts(e["a"]) for e in d] == ROWS


def test_from_tensors_keeps_the_sparse_tensor(st):
    ds = tf.data.Dataset.from_tensors(st)
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([4, 3]), tf.float32)"
    (only,) = list(ds)
    assert isinstance(only, tf.SparseTensor)
    one = tf.data.Dataset.from_tensors(tf.SparseTensor([[0, 1]], [5], [2, 3])).repeat(2).batch(2)
    assert repr(one.element_spec) == "SparseTensorSpec(TensorShape([None, 2, 3]), tf.int32)"
    assert parts(next(iter(one))) == ([[0, 0, 1], [1, 0, 1]], [5, 5], [2, 2, 3])


def test_batch_and_drop_remainder(st):
    ds = tf.data.Dataset.from_tensor_slices(st)
    b = ds.batch(3)
    assert repr(b.element_spec) == "SparseTensorSpec(TensorShape([None, 3]), tf.float32)"
    assert [parts(x) for x in b] == [
        ([[0, 1], [1, 0], [1, 2]], [1.0, 2.0, 3.0], [3, 3]),
        ([[0, 1]], [4.0], [1, 3]),
    ]
    d = ds.batch(3, drop_remainder=True)
    assert repr(d.element_spec) == "SparseTensorSpec(TensorShape([3, 3]), tf.float32)"
    assert len(list(d)) == 1


def test_batch_takes_the_largest_dense_shape():
    ds = tf.data.Dataset.range(3).map(lambda i: tf.SparseTensor([[0]], [1.0], [i + 1]))
    assert parts(next(iter(ds.batch(3)))) == ([[0, 0], [1, 0], [2, 0]], [1.0] * 3, [3, 3])


def test_batch_of_different_ranks_fails():
    a = tf.data.Dataset.range(2).map(lambda i: tf.SparseTensor([[0]], [1.0], [2]))
    b = tf.data.Dataset.range(2).map(lambda i: tf.SparseTensor([[0, 0]], [1.0], [2, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="different ranks"):
        list(a.concatenate(b).batch(4))


def test_unbatch_restores_rows(st):
    u = tf.data.Dataset.from_tensor_slices((st, tf.range(4))).batch(3).unbatch()
    assert repr(u.element_spec[0]) == "SparseTensorSpec(TensorShape([3]), tf.float32)"
    assert [(parts(s), int(i)) for s, i in u] == [(r, i) for i, r in enumerate(ROWS)]


def test_padded_batch_rejects_sparse_as_tf(st):
    with pytest.raises(TypeError, match="`padded_batch` is only supported for datasets that"):
        tf.data.Dataset.from_tensor_slices(st).padded_batch(2)


def test_map_filter_and_pipeline_ops(st):
    ds = tf.data.Dataset.from_tensor_slices(st)
    m = ds.map(lambda s: tf.sparse.map_values(tf.multiply, s, 2.0))
    assert repr(m.element_spec) == "SparseTensorSpec(TensorShape([3]), tf.float32)"
    assert [r.values.numpy().tolist() for r in m] == [[2.0], [4.0, 6.0], [], [8.0]]
    made = tf.data.Dataset.range(3).map(
        lambda i: tf.SparseTensor([[i]], [tf.cast(i, tf.float32)], [5])
    )
    assert [parts(b) for b in made.batch(2)] == [
        ([[0, 0], [1, 1]], [0.0, 1.0], [2, 5]),
        ([[0, 2]], [2.0], [1, 5]),
    ]
    f = ds.filter(lambda s: tf.size(s.values) > 0)
    assert [r.values.numpy().tolist() for r in f] == [[1.0], [2.0, 3.0], [4.0]]
    assert [r.values.numpy().tolist() for r in ds.cache()] == [[1.0], [2.0, 3.0], [], [4.0]]
    chain = ds.skip(1).take(2).repeat(2)
    assert [r.values.numpy().tolist() for r in chain] == [[2.0, 3.0], [], [2.0, 3.0], []]
    shuffled = sorted(parts(r) for r in ds.shuffle(10, seed=1))
    assert shuffled == sorted(ROWS)


def test_cache_to_file(st, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(st).cache(os.path.join(tmp_path, "c"))
    assert [parts(r) for r in ds] == ROWS
    assert [parts(r) for r in ds] == ROWS


def test_concatenate(st):
    ds = tf.data.Dataset.from_tensor_slices(st)
    c = ds.concatenate(ds.take(1))
    assert repr(c.element_spec) == "SparseTensorSpec(TensorShape([3]), tf.float32)"
    assert [r.values.numpy().tolist() for r in c] == [[1.0], [2.0, 3.0], [], [4.0], [1.0]]
    other = tf.data.Dataset.from_tensor_slices(tf.SparseTensor([[0, 4]], [1.0], [1, 5]))
    assert repr(ds.concatenate(other).element_spec) == (
        "SparseTensorSpec(TensorShape([None]), tf.float32)"
    )
    with pytest.raises(TypeError):
        ds.concatenate(tf.data.Dataset.range(3).map(lambda i: tf.ones([3])))


def test_from_generator_with_sparse_signature():
    def gen():
        yield tf.SparseTensor([[0]], [1.0], [3])
        yield tf.SparseTensor([[1], [2]], [2.0, 3.0], [3])

    spec = tf.SparseTensorSpec([3], tf.float32)
    g = tf.data.Dataset.from_generator(gen, output_signature=spec)
    assert g.element_spec == spec
    assert parts(next(iter(g.batch(2)))) == ([[0, 0], [1, 1], [1, 2]], [1.0, 2.0, 3.0], [2, 3])

    def wrong_dtype():
        yield tf.SparseTensor([[0]], [1], [3])

    def dense():
        yield tf.constant([1.0, 2.0, 3.0])

    with pytest.raises(tf.errors.InvalidArgumentError, match="yielded an element of"):
        list(tf.data.Dataset.from_generator(wrong_dtype, output_signature=spec))
    with pytest.raises(tf.errors.InvalidArgumentError, match="did not match the expected"):
        list(tf.data.Dataset.from_generator(dense, output_signature=spec))


def test_from_tensor_slices_errors_as_tf(st):
    with pytest.raises(tf.errors.InvalidArgumentError, match="should be > 1, but saw rank: 1"):
        tf.data.Dataset.from_tensor_slices(tf.SparseTensor([[0]], [1.0], [3]))
    with pytest.raises(ValueError, match="only supported for rank >= 1"):
        tf.data.Dataset.from_tensor_slices(
            tf.SparseTensor(tf.zeros([0, 0], tf.int64), tf.zeros([0]), tf.zeros([0], tf.int64))
        )
    with pytest.raises(ValueError, match="Dimensions 4 and 3 are not compatible"):
        tf.data.Dataset.from_tensor_slices((st, tf.range(3)))
    unordered = tf.SparseTensor([[0, 0, 1], [1, 1, 0], [1, 0, 2]], [1, 2, 3], [2, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[2\] = \[1,0,2\] is out of"):
        tf.data.Dataset.from_tensor_slices(unordered)
    repeated = tf.SparseTensor([[0, 1], [0, 1]], [1.0, 2.0], [2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0,1\] is repeated"):
        tf.data.Dataset.from_tensor_slices(repeated)
    outside = tf.SparseTensor([[0, 5]], [1.0], [2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        tf.data.Dataset.from_tensor_slices(outside)


def test_dense_to_sparse_batch_is_sparse_batch():
    ds = tf.data.Dataset.range(1, 3).map(lambda n: tf.fill([n], n))
    got = next(iter(ds.apply(tf.data.experimental.dense_to_sparse_batch(2, [3]))))
    want = next(iter(ds.sparse_batch(2, [3])))
    assert parts(got) == parts(want) == ([[0, 0], [1, 0], [1, 1]], [1, 2, 2], [2, 3])


def test_save_and_load_round_trip(st, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices((tf.range(4), st, {"s": st}))
    ds.save(str(tmp_path / "rows"))
    back = tf.data.Dataset.load(str(tmp_path / "rows"))
    assert back.element_spec == ds.element_spec
    assert [(int(i), parts(a), parts(d["s"])) for i, a, d in back] == [
        (i, r, r) for i, r in enumerate(ROWS)
    ]
    ds.batch(3).save(str(tmp_path / "batches"))
    batches = tf.data.Dataset.load(str(tmp_path / "batches"))
    assert repr(batches.element_spec[1]) == "SparseTensorSpec(TensorShape([None, 3]), tf.float32)"
    assert [parts(b) for _, b, _ in batches] == [parts(b) for _, b, _ in ds.batch(3)]


def test_load_rejects_out_of_bounds_sparse_indices(st, tmp_path):
    from layerflow._src.saving import weights_file

    folder = tmp_path / "bad"
    tf.data.Dataset.from_tensor_slices(st).save(str(folder))
    shard = str(folder / "shard-00000.safetensors")
    with weights_file.open_file(shard) as reader:
        tensors = {k: np.array(reader.get(k)) for k in reader.header if k != "__metadata__"}
        info = {"format": reader.info["format"]}
    tensors["1/0/indices"] = np.array([[7], [2]], np.int64)  # row 1 of dense shape [3]
    weights_file.write(shard, tensors, info)
    with pytest.raises(tf.errors.DataLossError, match="invalid indices"):
        list(tf.data.Dataset.load(str(folder)))
