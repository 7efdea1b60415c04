"""tf.io.parse_example / parse_single_example against real TF's results (fixtures made by
TF 2.21), plus the checks that keep untrusted bytes from crashing or exhausting memory."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layerflow as tf
from layerflow._src.ops import example_parsing_ops
from tests.ops.example_helpers import assert_same, configs, example, load

pytest.importorskip("google.protobuf")
FIX = load()
ERRORS = {"InvalidArgumentError": tf.errors.InvalidArgumentError, "ValueError": ValueError}


def _serialized(names, single):
    data = [bytes.fromhex(FIX["examples"][n]) for n in names]
    return data[0] if single else data


@pytest.mark.parametrize("case", FIX["parses"], ids=lambda c: "-".join(c["examples"]) + "-" +
                         "-".join(c["features"]))  # fmt: skip
def test_parse_matches_tensorflow(case):
    parse = tf.io.parse_single_example if case["single"] else tf.io.parse_example
    ser = _serialized(case["examples"], case["single"])
    feats = configs(case["features"])
    if "error" in case:
        with pytest.raises(ERRORS[case["error"]]):
            parse(ser, feats)
        return
    out = parse(ser, feats)
    assert set(out) == set(case["out"])
    for key, want in case["out"].items():
        assert_same(out[key], want, key)


def test_parse_example_takes_a_string_tensor_and_names_the_failing_example():
    ser = tf.constant(_serialized(["a", "empty"], False))
    feats = {"one": tf.io.FixedLenFeature([], tf.int64)}
    with pytest.raises(tf.errors.InvalidArgumentError, match="Name: second.*one.*required"):
        tf.io.parse_example(ser, feats, example_names=["first", "second"])
    out = tf.io.parse_example(ser[:1], feats)
    assert out["one"].numpy().tolist() == [7]


def test_required_and_type_errors_name_the_feature():
    ser = _serialized(["wrong"], True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Key: ids.*Expected type: int64"):
        tf.io.parse_single_example(ser, {"ids": tf.io.FixedLenFeature([3], tf.int64)})
    ser = _serialized(["a"], True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Key: ids.*3 int64 values.*needs 2"):
        tf.io.parse_single_example(ser, {"ids": tf.io.FixedLenFeature([2], tf.int64)})


@pytest.mark.parametrize(
    "features, error, match",
    [
        ({}, ValueError, "features cannot be empty"),
        ({"x": tf.io.FixedLenFeature([None], tf.int64)}, ValueError, "unknown"),
        ({"x": tf.io.FixedLenFeature([], tf.int32)}, ValueError, "tf.string, tf.int64"),
        ({"x": tf.io.FixedLenSequenceFeature([], tf.int64)}, ValueError, "allow_missing"),
        ({"x": "int64"}, ValueError, "unsupported feature configuration"),
        ({3: tf.io.VarLenFeature(tf.int64)}, ValueError, "keys must be non-empty strings"),
        ({"x": tf.io.FixedLenFeature([2, 2], tf.float32, default_value=1.0)},
         tf.errors.InvalidArgumentError, "default_value has 1 values"),
        ({"x": tf.io.SparseFeature(["i", "j"], "v", tf.float32, 4)}, ValueError, "same length"),
        ({"x": tf.io.SparseFeature("i", None, tf.float32, 4)}, ValueError, "feature names"),
    ],
)  # fmt: skip
def test_bad_configurations_raise_before_parsing(features, error, match):
    with pytest.raises(error, match=match):
        tf.io.parse_single_example(_serialized(["a"], True), features)


def test_serialized_must_have_the_right_rank():
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.io.parse_single_example([b""], {"x": tf.io.VarLenFeature(tf.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar or vector"):
        tf.io.parse_example([[b""]], {"x": tf.io.VarLenFeature(tf.int64)})


def test_feature_config_reprs_and_fields_are_tensorflows():
    assert repr(tf.io.FixedLenFeature([3], tf.int64)) == (
        "FixedLenFeature(shape=[3], dtype=tf.int64, default_value=None)")  # fmt: skip
    assert repr(tf.io.VarLenFeature(tf.int64)) == "VarLenFeature(dtype=tf.int64)"
    assert repr(tf.io.SparseFeature("i", "v", tf.float32, 3)) == (
        "SparseFeature(index_key='i', value_key='v', dtype=tf.float32, size=3, "
        "already_sorted=False)")  # fmt: skip
    assert repr(tf.io.RaggedFeature(tf.int64)) == (
        "RaggedFeature(dtype=tf.int64, value_key=None, partitions=(), "
        "row_splits_dtype=tf.int32, validate=False)")  # fmt: skip
    f = tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)
    assert (f.shape, f.allow_missing, f.default_value) == ([2], True, None)
    with pytest.raises(TypeError, match="RowSplits"):
        tf.io.RaggedFeature(tf.int64, partitions=["rows"])
    with pytest.raises(ValueError, match="row_splits_dtype"):
        tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.float32)


def _ragged_example(**features):
    desc = {k: ["int64" if k != "v" else "float", v] for k, v in features.items()}
    return example(desc).SerializeToString()


R = tf.io.RaggedFeature


@pytest.mark.parametrize(
    "partition, extra, expected",
    [
        (R.RowSplits("p"), {"p": [0, 2, 2, 5]}, [[1, 2], [], [3, 4, 5]]),
        (R.RowLengths("p"), {"p": [1, 0, 4]}, [[1], [], [2, 3, 4, 5]]),
        (R.RowStarts("p"), {"p": [0, 3, 3]}, [[1, 2, 3], [], [4, 5]]),
        (R.RowLimits("p"), {"p": [1, 1, 5]}, [[1], [], [2, 3, 4, 5]]),
        (R.ValueRowIds("p"), {"p": [0, 0, 2, 2, 3]}, [[1, 2], [], [3, 4], [5]]),
    ],
)  # fmt: skip
def test_ragged_partitions(partition, extra, expected):
    ser = _ragged_example(v=[1, 2, 3, 4, 5], **extra)
    rt = tf.io.parse_single_example(ser, {"r": R(tf.float32, "v", [partition])})["r"]
    assert rt.to_list() == expected
    batch = tf.io.parse_example([ser, ser], {"r": R(tf.float32, "v", [partition], tf.int64)})
    assert batch["r"].to_list() == [expected, expected]
    assert batch["r"].row_splits.dtype == tf.int64


@pytest.mark.parametrize(
    "partition, extra",
    [
        (R.RowSplits("p"), {"p": [0, 9]}),
        (R.RowSplits("p"), {"p": [1, 5]}),
        (R.RowLengths("p"), {"p": [-1, 6]}),
        (R.RowLimits("p"), {"p": [3, 2, 5]}),
        (R.ValueRowIds("p"), {"p": [0, 1]}),
        (R.ValueRowIds("p"), {"p": [0, 0, 0, 0, 2**62]}),
        (R.UniformRowLength(2), {}),
    ],
)  # fmt: skip
def test_ragged_partitions_that_do_not_fit_raise(partition, extra):
    ser = _ragged_example(v=[1, 2, 3, 4, 5], **extra)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Key: r"):
        tf.io.parse_single_example(ser, {"r": R(tf.float32, "v", [partition])})


def test_nested_ragged_partitions_outermost_first():
    # TF's RaggedFeature docstring example.
    f3 = R(tf.int64, "v", [R.RowSplits("s2"), R.RowSplits("s1")])
    ser = example({"v": ["int64", [3, 1, 4, 1, 5, 9]], "s1": ["int64", [0, 2, 3, 3, 6]],
                   "s2": ["int64", [0, 2, 3, 4]]}).SerializeToString()  # fmt: skip
    assert tf.io.parse_single_example(ser, {"f3": f3})["f3"].to_list() == [
        [[3, 1], [4]], [[]], [[1, 5, 9]]]  # fmt: skip


def test_sparse_feature_sorts_and_checks_indices():
    ser = example({"i": ["int64", [3, 0]], "v": ["float", [1.0, 2.0]]}).SerializeToString()
    sp = tf.io.parse_single_example(ser, {"s": tf.io.SparseFeature("i", "v", tf.float32, 4)})["s"]
    assert sp.indices.numpy().tolist() == [[0], [3]]
    assert sp.values.numpy().tolist() == [2.0, 1.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.io.parse_single_example(ser, {"s": tf.io.SparseFeature("i", "v", tf.float32, 3)})


def test_a_padded_result_over_the_limit_is_refused_before_allocation(monkeypatch):
    monkeypatch.setattr(example_parsing_ops, "MAX_RESULT_BYTES", 1000)
    big = example({"x": ["int64", list(range(200))]}).SerializeToString()
    small = example({}).SerializeToString()
    feats = {"x": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}
    with pytest.raises(tf.errors.ResourceExhaustedError, match="Key: x"):
        tf.io.parse_example([big] + [small] * 10, feats)
    with pytest.raises(tf.errors.ResourceExhaustedError):
        tf.io.parse_example([small] * 200, {"y": tf.io.FixedLenFeature([1], tf.int64, [0])})


def test_a_huge_fixed_shape_is_refused_not_allocated():
    with pytest.raises(tf.errors.ResourceExhaustedError, match="Key: y"):
        tf.io.parse_single_example(b"", {"y": tf.io.FixedLenFeature([2**40, 2**40], tf.int64)})


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_parse_or_raise_invalid_argument(data):
    feats = {"a": tf.io.VarLenFeature(tf.int64), "b": tf.io.RaggedFeature(tf.string),
             "c": tf.io.FixedLenFeature([], tf.float32, default_value=0.0)}  # fmt: skip
    try:
        out = tf.io.parse_example([data], feats)
    except tf.errors.InvalidArgumentError:
        return
    assert out["c"].shape == (1,)


VALID = bytes.fromhex(FIX["examples"]["c"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=4),
       st.integers(0, len(VALID)))  # fmt: skip
def test_mutated_examples_parse_or_raise_invalid_argument(edits, cut):
    data = bytearray(VALID)
    for pos, byte in edits:
        data[pos] = byte
    feats = {"one": tf.io.FixedLenFeature([], tf.int64, default_value=0),
             "big": tf.io.VarLenFeature(tf.int64),
             "r": tf.io.RaggedFeature(tf.float32, "v", [tf.io.RaggedFeature.RowLengths("rl")]),
             "sp": tf.io.SparseFeature("ix", "vx", tf.float32, 5),
             "img": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True)}  # fmt: skip
    try:
        tf.io.parse_example([bytes(data[:cut]), bytes(data)], feats)
    except tf.errors.InvalidArgumentError:
        pass


def test_corrupt_example_error_shows_the_bytes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example input"):
        tf.io.parse_single_example(b"\x0a\x05zzz", {"z": tf.io.VarLenFeature(tf.float32)})


def test_scalar_string_features_hold_bytes():
    ser = [example({"s": ["bytes", ["6869"]]}).SerializeToString(), b""]
    feats = {"s": tf.io.FixedLenFeature([], tf.string, default_value="none")}
    out = tf.io.parse_example(ser, feats)["s"]
    assert out.dtype == tf.string and out.numpy().tolist() == [b"hi", b"none"]
    one = tf.io.parse_single_example(ser[0], feats)["s"]
    assert one.shape == () and one.numpy() == b"hi"
