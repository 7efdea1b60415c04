"""The safetensors weights file: round trip, readable by safetensors, damage always detected."""

import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file

from layerflow._src.saving import weights_file
from layerflow._src.saving.weights_file import WeightsFileError

ARRAYS = {
    "hidden/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    "hidden/bias": np.array([1.5, -2.0, 0.0, 3.25], np.float32),
    "layers/0/kernel": np.arange(6, dtype=np.float64).reshape(2, 3),
    "step": np.array(7, np.int64),
    "mask": np.array([True, False]),
}


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "w.safetensors"
    weights_file.write(path, ARRAYS, {"names": {"hidden/kernel": "dense/kernel:0"}})
    return path


def _assert_same(loaded):
    assert set(loaded) == set(ARRAYS)
    for k, v in ARRAYS.items():
        assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape
        np.testing.assert_array_equal(loaded[k], v)


def test_round_trip_and_metadata(good_file):
    arrays, info = weights_file.read(good_file)
    _assert_same(arrays)
    assert info["names"] == {"hidden/kernel": "dense/kernel:0"}
    assert info["format_version"] == weights_file.FORMAT_VERSION


def test_plain_safetensors_reads_our_files(good_file):
    _assert_same(load_file(str(good_file)))


def test_reads_plain_safetensors_files(tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "other.safetensors"
    save_file(ARRAYS, str(path))
    arrays, info = weights_file.read(path)
    _assert_same(arrays)
    assert info == {}


def test_overwrite_false_refuses_and_keeps_the_file(good_file):
    before = good_file.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite=False"):
        weights_file.write(good_file, {"x": np.zeros(2, np.float32)}, overwrite=False)
    assert good_file.read_bytes() == before


def test_failed_write_leaves_old_file_and_no_temp(good_file):
    before = good_file.read_bytes()
    with pytest.raises(TypeError, match="dtype"):
        weights_file.write(good_file, {"x": np.array(["a"])})
    assert good_file.read_bytes() == before
    assert os.listdir(good_file.parent) == [good_file.name]


def test_missing_folder_is_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        weights_file.write(tmp_path / "nope" / "w", ARRAYS)


def _file(header, n_data):
    return struct.pack("<Q", len(header)) + header + b"\0" * n_data


@pytest.mark.parametrize(
    "data, what",
    [
        (b"", "fewer than the 8-byte"),
        (b"\x93NUMPY\x01\x00v\x00{'descr'", "header length"),  # an .npy file
        (struct.pack("<Q", 2**62) + b"{}", "header length"),  # a lying, huge length
        (struct.pack("<Q", 5) + b"nope!", "does not parse"),
        (struct.pack("<Q", 2) + b"[]", "not an object"),
        (
            _file(b'{"a":{"dtype":"F32","shape":[1000000],"data_offsets":[0,4]}}', 4),
            "needs 4000000 bytes",
        ),  # fmt: skip
        (_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 2), "data bytes"),
        (_file(b'{"a":{"dtype":"Q99","shape":[1],"data_offsets":[0,4]}}', 4), "unknown dtype"),
        (_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8), "start at 4"),
        (_file(b'{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', 4), "invalid shape"),
    ],
)
def test_damaged_files_name_the_file_and_the_problem(tmp_path, data, what):
    path = tmp_path / "bad.params"
    path.write_bytes(data)
    with pytest.raises(WeightsFileError, match=what) as info:
        weights_file.read(path)
    assert str(path) in str(info.value)


def test_flipped_data_byte_fails_its_checksum(good_file):
    raw = bytearray(good_file.read_bytes())
    raw[-3] ^= 0x40  # inside the last tensor's bytes
    good_file.write_bytes(bytes(raw))
    with pytest.raises(WeightsFileError, match="checksum"):
        weights_file.read(good_file)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="No weights file"):
        weights_file.read(tmp_path / "absent.params")


_FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_FUZZ
@given(cut=st.integers(min_value=0))
def test_every_truncation_is_detected(good_file, cut):
    raw = good_file.read_bytes()
    cut %= len(raw)
    damaged = good_file.with_name("cut.params")
    damaged.write_bytes(raw[:cut])
    with pytest.raises(WeightsFileError):
        weights_file.read(damaged)


@_FUZZ
@given(flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), min_size=1,
                      max_size=4))  # fmt: skip
def test_byte_flips_are_detected_or_harmless(good_file, flips):
    raw = bytearray(good_file.read_bytes())
    for pos, mask in flips:
        raw[pos % len(raw)] ^= mask
    damaged = good_file.with_name("flipped.params")
    damaged.write_bytes(bytes(raw))
    try:
        arrays, _ = weights_file.read(damaged)
    except WeightsFileError:
        return
    _assert_same(arrays)  # a flip that passed every check changed nothing that matters
