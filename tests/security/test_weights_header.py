"""A weights or checkpoint file's JSON header is input: nesting it deeply, or writing numbers
too long to convert, gives the documented `WeightsFileError` naming the file, never a
`RecursionError` or a bare `ValueError`."""

import json
import struct
import zlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.saving import io as lf_io
from layerflow._src.saving import weights_file
from layerflow._src.saving.weights_file import WeightsFileError

DEEP = 100_000


def _file(path, header_text, data=b""):
    raw = header_text.encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def _with_metadata(path, text):
    """A valid file whose layerflow metadata is `text` (with a correct checksum)."""
    meta = {"layerflow": text, "layerflow_crc": str(zlib.crc32(text.encode()))}
    return _file(path, json.dumps({"__metadata__": meta}))


def _loaders(path):
    return {
        "read": lambda: weights_file.read(path),
        "load_weights": lambda: tf.keras.Sequential([tf.keras.layers.Dense(2)]).load_weights(
            str(path)
        ),
        "checkpoint": lambda: tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(path)),
        "io.load": lambda: lf_io.load(path),
    }


HOSTILE = {
    "deep header": lambda p: _file(p, '{"a": ' + "[" * DEEP + "]" * DEEP + "}"),
    "deep metadata": lambda p: _with_metadata(p, '{"x": ' + "[" * DEEP + "]" * DEEP + "}"),
    "huge number": lambda p: _file(
        p, '{"a": {"dtype": "F32", "shape": [1' + "0" * 5000 + '], "data_offsets": [0, 4]}}'
    ),
}


@pytest.mark.parametrize("loader", ["read", "load_weights", "checkpoint", "io.load"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_header_is_a_weights_file_error_naming_the_file(tmp_path, kind, loader):
    path = HOSTILE[kind](tmp_path / "w.params")
    with pytest.raises(WeightsFileError) as info:
        _loaders(path)[loader]()
    assert str(path) in str(info.value)
    assert "does not parse" in str(info.value) or "nested too deeply" in str(info.value)


def _structure_file(path, depth):
    tree = '{"value": 1}'
    for _ in range(depth):
        tree = '{"list": [' + tree + "]}"
    text = '{"crc32": {}, "format": "layerflow.io", "format_version": 1, "structure": ' + tree + "}"
    return _with_metadata(path, text)


def test_deep_io_structure_is_a_weights_file_error(tmp_path):
    path = _structure_file(tmp_path / "s.safetensors", 5_000)
    with pytest.raises(WeightsFileError, match="nested too deeply"):
        lf_io.load(path)


def test_moderate_io_structure_still_loads(tmp_path):
    out = lf_io.load(_structure_file(tmp_path / "s.safetensors", 50))
    for _ in range(50):
        (out,) = out
    assert out == 1


def test_plain_values_still_load(tmp_path):
    path = tmp_path / "ok.safetensors"
    weights_file.write(path, {"a": np.ones(3, np.float32)})
    np.testing.assert_array_equal(weights_file.read(path)[0]["a"], np.ones(3, np.float32))
