"""`tf.io.parse_tensor` on bytes from anywhere: any corruption is `InvalidArgumentError`, never a
raw TypeError/ValueError, and a claimed size is checked against the bytes before allocating."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layerflow as tf
from layerflow._src.saving.io import _field, _varint

OUT_TYPES = [tf.float32, tf.float64, tf.int32, tf.int64, tf.uint8, tf.bool, tf.string, tf.complex64]
VALID = [
    tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4)),
    tf.constant(np.array([1, -2, 3], np.int64)),
    tf.constant([b"abc", b"", b"\xff\x00"]),
    tf.constant(True),
    tf.constant(np.array([[1 + 2j]], np.complex64)),
]
SERIALIZED = [tf.io.serialize_tensor(t).numpy() for t in VALID]


def _parse_or_invalid(data, out_type):
    try:
        out = tf.io.parse_tensor(data, out_type=out_type)
    except tf.errors.InvalidArgumentError:
        return None
    assert out.dtype == out_type
    return out


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=64), out_type=st.sampled_from(OUT_TYPES))
def test_random_bytes_parse_or_raise_invalid_argument(data, out_type):
    _parse_or_invalid(data, out_type)


@settings(max_examples=400, deadline=None)
@given(
    which=st.integers(0, len(VALID) - 1),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["set", "insert", "delete"]), st.integers(0), st.integers(0, 255)
        ),
        min_size=1,
        max_size=4,
    ),  # fmt: skip
    cut=st.none() | st.integers(0),
)
def test_mutated_tensors_parse_or_raise_invalid_argument(which, edits, cut):
    raw = bytearray(SERIALIZED[which])
    for op, pos, byte in edits:
        pos %= len(raw) + 1
        if op == "insert":
            raw.insert(pos, byte)
        elif raw and op == "set":
            raw[pos % len(raw)] = byte
        elif raw:
            del raw[pos % len(raw)]
    if cut is not None:
        raw = raw[: cut % (len(raw) + 1)]
    _parse_or_invalid(bytes(raw), VALID[which].dtype)


def _proto(enum, dims, *rest):
    shape = b"".join(_field(2, _varint(1 << 3) + _varint(d)) for d in dims)
    return _varint(1 << 3) + _varint(enum) + _field(2, shape) + b"".join(rest)


FLOAT, STRING = 1, 7


@pytest.mark.parametrize(
    "data, what",
    [
        (_varint(2 << 3) + _varint(5), "tensor_shape .* wire type 0"),  # a varint, not a message
        (_proto(FLOAT, [1]) + _varint(4 << 3) + _varint(7), "tensor_content .* wire type 0"),
        (_proto(STRING, [1]) + _varint(8 << 3) + _varint(7), "string_val .* wire type 0"),
        (_varint(0) + _varint(0), "number 0"),
        (_proto(FLOAT, [2**32, 2**32]), "more elements than an array can hold"),  # 2**64: wraps
        (_proto(FLOAT, [0, 2**62]), "more elements than an array can hold"),
        (_proto(FLOAT, [2**64 - 1]), "size -1"),
        (_proto(FLOAT, [1] * 65), "rank 65"),
        (_varint(1 << 3) + b"\xff" * 11, "longer than 10 bytes"),
        (_varint(1 << 3 | 5) + b"\x00", "fixed-size field runs past the end"),
        (_varint(1 << 3 | 3), "wire type 3"),
    ],
)
def test_corrupt_protos_name_the_problem(data, what):
    out_type = tf.string if data.startswith(_proto(STRING, [])[:2]) else tf.float32
    with pytest.raises(tf.errors.InvalidArgumentError, match=what):
        tf.io.parse_tensor(data, out_type=out_type)


@pytest.mark.parametrize("enum, out_type", [(FLOAT, tf.float32), (STRING, tf.string)])
def test_a_claimed_shape_of_2_to_the_40_is_refused_before_allocating(enum, out_type):
    data = _proto(enum, [2**20, 2**20], _field(4 if enum == FLOAT else 8, b"\0\0\0\0"))
    tracemalloc.start()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"for shape \[1048576, 1048576\]"):
            tf.io.parse_tensor(data, out_type=out_type)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing near 4 TiB (or even 1 MiB) was asked for


def test_valid_tensors_round_trip():
    for t, data in zip(VALID, SERIALIZED):
        out = tf.io.parse_tensor(data, out_type=t.dtype)
        assert out.shape == t.shape
        np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_zero_sized_shapes_parse():
    out = tf.io.parse_tensor(_proto(FLOAT, [0, 3]), out_type=tf.float32)
    assert out.shape == (0, 3)
