"""Loading reads one tensor at a time, yet stays all-or-nothing: damage in the last tensor of
the file leaves the first one untouched."""

import numpy as np
import pytest

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.saving import restore, weights_file
from layerflow._src.saving.weights_file import WeightsFileError


class Holder(Trackable):
    def __init__(self, fill):
        self.vs = [Variable(np.full((64, 32), fill + i, np.float32)) for i in range(3)]

    def _trackable_children(self):
        return {"layers": self.vs}


def test_damage_in_the_last_tensor_assigns_nothing(tmp_path):
    path = tmp_path / "w.safetensors"
    restore.save(Holder(1.0), path)
    header, _ = weights_file.read_header(path)
    last = max(header, key=lambda k: header[k]["data_offsets"][0])
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF  # inside the last tensor's bytes
    path.write_bytes(bytes(raw))
    target = Holder(0.0)
    with pytest.raises(WeightsFileError, match=last):
        restore.load(target, path)
    for i, v in enumerate(target.vs):
        np.testing.assert_array_equal(v.numpy(), np.full((64, 32), i, np.float32))


def test_open_checked_reads_what_was_written(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float64).reshape(2, 3), "s": np.array(3, np.int32),
              "e": np.zeros((0, 4), np.float32)}  # fmt: skip
    weights_file.write(tmp_path / "x.safetensors", arrays)
    with weights_file.open_checked(tmp_path / "x.safetensors") as get:
        for k, v in arrays.items():
            got = get(k)
            assert got.dtype == v.dtype and got.shape == v.shape
            np.testing.assert_array_equal(got, v)
