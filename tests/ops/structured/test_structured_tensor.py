"""tf.experimental.StructuredTensor against TF 2.21: each expression of
tests/ops/fixtures/make_structured_fixtures.py runs on layerflow and must give what TF gave
(to_pyval, shape, nrows, row partitions, repr, field values, spec reprs, nest components, and
error classes and messages), recorded in tests/ops/fixtures/structured_tensor.json."""

import importlib.util
import json
import pathlib

import pytest

import layerflow as tf

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
_spec = importlib.util.spec_from_file_location(
    "make_structured_fixtures", FIXTURES / "make_structured_fixtures.py"
)
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)
CASES = json.loads((FIXTURES / "structured_tensor.json").read_text())["cases"]

# TF errors that come from TF's own runtime, for which layerflow raises its own class (an
# out-of-range row fails in whichever field comes first: a ragged one in TF, a dense one here)
ERROR_CLASSES = {
    "InvalidArgumentError": {"InvalidArgumentError", "ValueError"},
    "IndexError": {"IndexError", "InvalidArgumentError"},
}
# Where layerflow differs from TF on purpose (each checked by its own test below)
DEVIATIONS = {"merge_same": "TF fails an internal assert; layerflow returns the value"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_tensorflow(case):
    if case["name"] in DEVIATIONS:
        pytest.skip(DEVIATIONS[case["name"]])
    want = case["tf"]
    got = maker.evaluate(case["expr"], tf)
    if want["kind"] == "error":
        assert got["kind"] == "error", got
        assert got["type"] in ERROR_CLASSES.get(want["type"], {want["type"]}), got
        if case["message_exact"]:
            assert got["message"] == want["message"]
        return
    assert got == want


def test_fixture_covers_the_case_list():
    assert [c["name"] for c in CASES] == [name for name, _, _ in maker.CASES]


def test_lazy_import_and_spec_alias():
    from layerflow._src.ops.structured.structured_spec import StructuredTensorSpec

    st = tf.experimental.StructuredTensor.from_pyval([{"a": 1}, {"a": 2}])
    assert tf.experimental.StructuredTensor.Spec is StructuredTensorSpec
    spec = StructuredTensorSpec([2], {"a": tf.TensorSpec([2], tf.int32)})
    assert spec == st._type_spec and spec.is_compatible_with(st)
    assert not spec.is_compatible_with(tf.experimental.StructuredTensor.from_pyval([{"a": 1}]))
    with pytest.raises(TypeError, match="field_specs must be a dictionary"):
        StructuredTensorSpec([2], [("a", tf.TensorSpec([2]))])
    with pytest.raises(ValueError, match="Rank of field a is 0, but must be at least 1"):
        StructuredTensorSpec([2], {"a": tf.TensorSpec([], tf.int32)})


def test_ragged_field_spec_and_typespec_from_pyval():
    # TF 2.21's StructuredTensorSpec fails on a ragged field spec (int32 shape against the
    # field's int64 partitions); layerflow builds it and from_pyval follows it.
    from layerflow._src.ops.structured.structured_spec import StructuredTensorSpec

    spec = StructuredTensorSpec([None], {"n": tf.RaggedTensorSpec([None, None], tf.float32)})
    st = tf.experimental.StructuredTensor.from_pyval([{"n": [1]}, {"n": []}], typespec=spec)
    assert st.field_value("n").dtype == tf.float32
    assert st.to_pyval() == [{"n": [1.0]}, {"n": []}]


def test_merge_dims_of_one_axis_is_the_value():
    st = tf.experimental.StructuredTensor.from_pyval([[{"a": 1}], [{"a": 2}, {"a": 3}]])
    assert st.merge_dims(1, 1) is st
    assert st.merge_dims(-1, 1) is st


def test_fieldless_partitions_survive_merge_and_pyval():
    st = tf.experimental.StructuredTensor.from_pyval([[[{}, {}], [{}]], [[{}]]])
    assert st.shape.as_list() == [2, None, None]
    merged = st.merge_dims(1, 2)
    assert merged.to_pyval() == [[{}, {}, {}], [{}]]
    assert merged.row_partitions[0].row_splits().numpy().tolist() == [0, 3, 4]


def test_gradient_flows_through_fields():
    x = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        st = tf.experimental.StructuredTensor.from_fields({"x": x * 2.0}, shape=[3])
        y = tf.reduce_sum(st[:, "x"])
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 2.0, 2.0]


def test_equality_and_pickle():
    import pickle

    ST = tf.experimental.StructuredTensor
    a = ST.from_pyval([[{"a": 1, "b": {"c": [1.5]}}], [], [{"a": 2, "b": {"c": []}}]])
    same = ST.from_pyval([[{"a": 1, "b": {"c": [1.5]}}], [], [{"a": 2, "b": {"c": []}}]])
    other = ST.from_pyval([[{"a": 1, "b": {"c": [1.5]}}], [], [{"a": 3, "b": {"c": []}}]])
    assert bool(a == same) and not bool(a == other)
    back = pickle.loads(pickle.dumps(a))
    assert back.to_pyval() == a.to_pyval() and back.shape == a.shape


def test_tf_function_reads_fields_of_a_ragged_structured_tensor():
    ST = tf.experimental.StructuredTensor

    @tf.function
    def f(st):
        return st.field_value("a").flat_values * 2

    assert f(ST.from_pyval([[{"a": 1}], [], [{"a": 2}]])).numpy().tolist() == [2, 4]
    assert f(ST.from_pyval([[{"a": 5}, {"a": 6}], [{"a": 7}]])).numpy().tolist() == [10, 12, 14]


def test_extension_type_fields():
    class Masked(tf.experimental.ExtensionType):
        values: tf.Tensor

    ST = tf.experimental.StructuredTensor
    scalar = ST.from_fields({"m": Masked([1, 2, 3])})
    assert scalar["m"].values.numpy().tolist() == [1, 2, 3]
    assert len(tf.nest.flatten(scalar, expand_composites=True)) == 2  # values, inner shape
    with pytest.raises(ValueError, match="Error in shape of m: a field of a StructuredTensor"):
        ST.from_fields({"m": Masked([1, 2, 3])}, shape=[3])


def test_row_partition_factories():
    RP = tf.experimental.RowPartition
    rp = RP.from_row_lengths([2, 0, 1])
    assert rp.row_splits().numpy().tolist() == [0, 2, 2, 3] and rp.dtype == tf.int64
    assert rp.static_nrows == 3 and rp.uniform_row_length() is None
    uniform = RP.from_uniform_row_length(2, nvals=6)
    assert uniform.static_uniform_row_length == 2 and int(uniform.nvals()) == 6
    assert repr(uniform) == "tf.RowPartition(nrows=3, uniform_row_length=2)"
    assert RP.from_row_splits([0, 1, 3]).row_lengths().numpy().tolist() == [1, 2]
    with pytest.raises(ValueError, match="row_lengths must be non-negative"):
        RP.from_row_lengths([1, -1])


def test_from_shape_of_a_ragged_shape():
    shape = tf.shape(tf.ragged.constant([[1, 2], [3]]))
    st = tf.experimental.StructuredTensor.from_shape(shape)
    assert st.shape.as_list() == [2, None] and st.field_names() == ()
    assert st.to_pyval() == [[{}, {}], [{}]]
