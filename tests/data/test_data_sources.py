"""tf.data sources: from_tensor_slices, from_tensors, range, zip, from_generator, iteration."""

import collections

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.data.structure import TensorSpec


def test_slices_of_an_array_yield_layerflow_tensors_row_by_row():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    elements = list(tf.data.Dataset.from_tensor_slices(x))
    assert len(elements) == 4
    for i, e in enumerate(elements):
        assert isinstance(e, tf.Tensor)
        assert e.dtype == tf.float32 and e.shape == (3,)
        np.testing.assert_array_equal(e.numpy(), x[i])


def test_slices_copy_numpy_input_so_later_changes_do_not_leak():
    x = np.zeros(3, dtype=np.int64)
    ds = tf.data.Dataset.from_tensor_slices(x)
    x[:] = 7
    assert [int(v) for v in ds] == [0, 0, 0]


def test_python_lists_follow_tf_dtype_rules_and_are_tensors_not_structures():
    ints = list(tf.data.Dataset.from_tensor_slices([1, 2, 3]))
    floats = list(tf.data.Dataset.from_tensor_slices([[1.0, 2.0], [3.0, 4.0]]))
    assert ints[0].dtype == tf.int32 and ints[0].shape == ()
    assert floats[1].dtype == tf.float32 and floats[1].numpy().tolist() == [3.0, 4.0]


def test_numpy_float64_keeps_its_dtype_as_in_tf():
    (e,) = list(tf.data.Dataset.from_tensor_slices(np.ones((1, 2))))
    assert e.dtype == tf.float64


def test_tuple_dict_and_namedtuple_structures():
    xs, ys = np.arange(6).reshape(3, 2), np.array([10, 20, 30])
    pairs = list(tf.data.Dataset.from_tensor_slices((xs, ys)))
    assert type(pairs[0]) is tuple
    assert [(p[0].numpy().tolist(), int(p[1])) for p in pairs] == [
        ([0, 1], 10), ([2, 3], 20), ([4, 5], 30)]  # fmt: skip
    dicts = list(tf.data.Dataset.from_tensor_slices({"b": ys, "a": xs}))
    assert list(dicts[2]) == ["b", "a"] and int(dicts[2]["b"]) == 30
    Point = collections.namedtuple("Point", "x y")
    (p, *_) = list(tf.data.Dataset.from_tensor_slices(Point(xs, ys)))
    assert isinstance(p, Point) and int(p.y) == 10


def test_slices_of_a_tensor_and_a_variable():
    t = tf.constant([[1, 2], [3, 4]])
    v = tf.Variable([5.0, 6.0])
    assert [e.numpy().tolist() for e in tf.data.Dataset.from_tensor_slices(t)] == [[1, 2], [3, 4]]
    ds = tf.data.Dataset.from_tensor_slices(v)
    v.assign([0.0, 0.0])
    assert [float(e) for e in ds] == [5.0, 6.0]


def test_slices_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"same size in their first dimension.*\(3,\).*\(2,\)"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))
    with pytest.raises(ValueError, match="scalar"):
        tf.data.Dataset.from_tensor_slices(5)


def test_from_tensors_is_one_element():
    ds = tf.data.Dataset.from_tensors(([1, 2, 3], 4.0))
    (e,) = list(ds)
    assert e[0].shape == (3,) and float(e[1]) == 4.0
    assert int(ds.cardinality()) == 1


@pytest.mark.parametrize(
    "args", [(5,), (2, 7), (10, 0, -3), (0, 10, 4), (3, 3), (5, 0)]
)  # fmt: skip
def test_range_matches_python_range(args):
    ds = tf.data.Dataset.range(*args)
    values = [x for x in ds]
    assert [int(x) for x in values] == list(range(*args))
    assert all(x.dtype == tf.int64 for x in values)
    assert int(ds.cardinality()) == len(range(*args))


def test_range_output_type_and_zero_step():
    assert next(iter(tf.data.Dataset.range(3, output_type=tf.int32))).dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match="step"):
        tf.data.Dataset.range(0, 5, 0)


def test_zip_tuple_dict_and_varargs_stop_at_the_shortest():
    a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 20)
    assert [(int(x), int(y)) for x, y in tf.data.Dataset.zip((a, b))] == [(0, 10), (1, 11), (2, 12)]
    assert [(int(x), int(y)) for x, y in tf.data.Dataset.zip(a, b)] == [(0, 10), (1, 11), (2, 12)]
    d = list(tf.data.Dataset.zip({"x": a, "y": b}))
    assert int(d[1]["x"]) == 1 and int(d[1]["y"]) == 11
    assert int(tf.data.Dataset.zip((a, b)).cardinality()) == 3
    assert int(tf.data.Dataset.zip((a, b.repeat())).cardinality()) == 3
    with pytest.raises(TypeError, match="item 1"):
        tf.data.Dataset.zip((a, [1, 2]))


def test_from_generator_is_called_again_for_every_pass():
    calls = []

    def gen(n):
        calls.append(n)
        for i in range(n):
            yield i, [float(i)] * 2

    ds = tf.data.Dataset.from_generator(
        gen, args=(3,), output_signature=(TensorSpec((), "int32"), TensorSpec((2,), "float32"))
    )
    first = [(int(a), b.numpy().tolist()) for a, b in ds]
    second = [(int(a), b.numpy().tolist()) for a, b in ds]
    assert first == second == [(0, [0.0, 0.0]), (1, [1.0, 1.0]), (2, [2.0, 2.0])]
    assert calls == [3, 3]
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY


def test_from_generator_rejects_a_value_of_the_wrong_shape():
    ds = tf.data.Dataset.from_generator(lambda: iter([[1, 2, 3]]), output_types=tf.int32,
                                        output_shapes=(2,))  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        list(ds)


def test_iterator_get_next_and_end_of_sequence():
    it = iter(tf.data.Dataset.range(2))
    assert int(next(it)) == 0 and int(it.get_next()) == 1
    with pytest.raises(tf.errors.OutOfRangeError):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)


def test_as_numpy_iterator_gives_numpy_values():
    ds = tf.data.Dataset.from_tensor_slices(({"a": np.arange(4).reshape(2, 2)}, [1.5, 2.5]))
    out = list(ds.as_numpy_iterator())
    assert isinstance(out[0][0]["a"], np.ndarray) and out[0][0]["a"].tolist() == [0, 1]
    assert isinstance(out[1][1], np.floating) and out[1][1] == np.float32(2.5)


def test_element_spec_static_and_after_map():
    ds = tf.data.Dataset.from_tensor_slices(
        (np.zeros((5, 28, 28), np.uint8), np.zeros(5, np.int32))
    )
    assert ds.element_spec == (TensorSpec((28, 28), "uint8"), TensorSpec((), "int32"))
    batched = ds.batch(2)
    assert batched.element_spec[0].shape == (None, 28, 28)
    assert ds.batch(2, drop_remainder=True).element_spec[1].shape == (2,)
    mapped = ds.map(lambda x, y: tf.cast(x, tf.float32))
    assert mapped.element_spec == TensorSpec((28, 28), "float32")
    assert "TensorSpec(shape=(None, 28, 28), dtype=tf.uint8" in repr(batched)


def test_concatenate_checks_types_and_counts():
    a, b = tf.data.Dataset.range(2), tf.data.Dataset.range(5, 7)
    both = a.concatenate(b)
    assert [int(x) for x in both] == [0, 1, 5, 6] and len(both) == 4
    with pytest.raises(TypeError, match="different element types"):
        a.concatenate(tf.data.Dataset.from_tensor_slices([1.0]))
