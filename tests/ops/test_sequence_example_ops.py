"""tf.io.parse_sequence_example / parse_single_sequence_example against TF 2.21's results."""

import pytest

import layerflow as tf
from tests.ops.example_helpers import assert_same, configs, load, sequence_example

pytest.importorskip("google.protobuf")
FIX = load()
ERRORS = {"InvalidArgumentError": tf.errors.InvalidArgumentError, "ValueError": ValueError}


def _case_id(case):
    return "-".join(case["sequences"]) + ("-single-" if case["single"] else "-batch-") + "-".join(
        f"{k}:{v['type'][:6]}" for k, v in case["lists"].items())  # fmt: skip


@pytest.mark.parametrize("case", FIX["seq_parses"], ids=_case_id)
def test_parse_sequence_matches_tensorflow(case):
    data = [bytes.fromhex(FIX["sequences"][n]) for n in case["sequences"]]
    ctx, lists = configs(case["context"] or {}) or None, configs(case["lists"])
    if case["single"]:
        call = lambda: tf.io.parse_single_sequence_example(data[0], ctx, lists)  # noqa: E731
    else:
        call = lambda: tf.io.parse_sequence_example(data, ctx, lists)  # noqa: E731
    if "error" in case:
        with pytest.raises(ERRORS[case["error"]]):
            call()
        return
    parts = call()
    assert len(parts) == len(case["out"])
    for got, want in zip(parts, case["out"], strict=True):
        assert set(got) == set(want)
        for key, value in want.items():
            assert_same(got[key], value, key)


def test_missing_required_feature_list_names_it_and_the_fix():
    data = sequence_example({}, {}).SerializeToString()
    seq = {"w": tf.io.FixedLenSequenceFeature([], tf.float32)}
    with pytest.raises(tf.errors.InvalidArgumentError, match="'w' is required.*allow_missing"):
        tf.io.parse_single_sequence_example(data, None, seq)


def test_step_size_and_type_are_checked():
    data = sequence_example({}, {"t": [["int64", [1, 2]], ["int64", [3]]]}).SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Step: 1.*values size: 1"):
        tf.io.parse_single_sequence_example(
            data, None, {"t": tf.io.FixedLenSequenceFeature([2], tf.int64)})  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected type: float"):
        tf.io.parse_single_sequence_example(
            data, None, {"t": tf.io.VarLenFeature(tf.float32)})  # fmt: skip


@pytest.mark.parametrize(
    "context, lists, match",
    [
        (None, None, "at least one"),
        (None, {"t": tf.io.FixedLenFeature([2], tf.int64)}, "Unsupported FixedLenFeature"),
        ({"c": tf.io.FixedLenSequenceFeature([], tf.int64)}, None, "context"),
        (None, {"t": tf.io.FixedLenSequenceFeature([], tf.int64, default_value=1)}, "None"),
    ],
)
def test_bad_configurations(context, lists, match):
    data = sequence_example({}, {}).SerializeToString()
    with pytest.raises(ValueError, match=match):
        tf.io.parse_single_sequence_example(data, context, lists)


def test_batch_needs_a_vector_and_single_a_scalar():
    data = sequence_example({}, {}).SerializeToString()
    seq = {"t": tf.io.VarLenFeature(tf.int64)}
    with pytest.raises(ValueError, match="vector"):
        tf.io.parse_sequence_example(data, None, seq)
    with pytest.raises(ValueError, match="scalar"):
        tf.io.parse_single_sequence_example([data], None, seq)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse sequence example"):
        tf.io.parse_sequence_example([b"\x0a\x09"], None, seq)
    _, lists, lengths = tf.io.parse_sequence_example([data, data], None, seq)
    assert lists["t"].dense_shape.numpy().tolist() == [2, 0, 0] and lengths == {}
