"""Structural save/load on hand-made trackables: deferred restore, tied weights, mismatches."""

import numpy as np
import pytest
from safetensors.numpy import load_file

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.saving import keras_weights
from layerflow._src.saving import restore

from .fakes import FakeModel

X = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)


def _values(model):
    return {p: np.asarray(v).copy() for p, v in restore.variables_by_path(model)}


def test_keys_are_structural_paths_and_names_are_metadata(tmp_path):
    net = FakeModel()
    net(X)
    path = tmp_path / "mlp.params"
    keras_weights.save_weights(net, path)
    assert sorted(load_file(str(path))) == [
        "hidden/bias", "hidden/kernel", "layers/0/bias", "layers/0/kernel",
    ]  # fmt: skip
    assert restore.describe(path)["hidden/kernel"] == {
        "shape": [5, 4], "dtype": "F32", "name": "kernel:0",
    }  # fmt: skip


def test_unbuilt_clone_computes_with_the_file_values(tmp_path):
    net = FakeModel(seed=1)
    y = net(X)
    keras_weights.save_weights(net, tmp_path / "mlp.params")
    clone = FakeModel(seed=99)
    status = keras_weights.load_weights(clone, tmp_path / "mlp.params")
    assert sorted(status.pending) == sorted(_values(net))
    np.testing.assert_array_equal(clone(X), y)
    assert status.pending == []
    status.assert_consumed()


def test_built_model_loads_in_place(tmp_path):
    net, other = FakeModel(seed=1), FakeModel(seed=2)
    y = net(X)
    other(X)
    keras_weights.save_weights(net, tmp_path / "w")
    status = keras_weights.load_weights(other, tmp_path / "w")
    assert sorted(status.loaded) == sorted(_values(net))
    np.testing.assert_array_equal(other(X), y)


def test_every_mismatch_is_named_and_nothing_is_assigned(tmp_path):
    net = FakeModel(sizes=(4, 3))
    net(X)
    keras_weights.save_weights(net, tmp_path / "w")
    wrong = FakeModel(sizes=(4, 2, 6), seed=5)
    wrong(X)
    before = _values(wrong)
    with pytest.raises(ValueError) as info:
        keras_weights.load_weights(wrong, tmp_path / "w")
    msg = str(info.value)
    assert "4 problem(s)" in msg and str(tmp_path / "w") in msg
    assert "'layers/0/kernel' (kernel:0): the model has shape (4, 2) float32" in msg
    assert "of shape (4, 3) float32" in msg
    assert "'layers/1/kernel': the model has this variable, the file does not" in msg
    assert "'layers/1/bias'" in msg and "'layers/0/bias'" in msg
    for p, v in _values(wrong).items():
        np.testing.assert_array_equal(v, before[p])


def test_unexpected_file_entries_are_named(tmp_path):
    big = FakeModel(sizes=(4, 3, 2))
    big(X)
    keras_weights.save_weights(big, tmp_path / "w")
    small = FakeModel(sizes=(4, 3))
    small(X)
    with pytest.raises(ValueError, match="'layers/1/kernel': the file has this entry"):
        keras_weights.load_weights(small, tmp_path / "w")


def test_dtype_mismatch_is_named(tmp_path):
    a = FakeModel()
    a(X)
    keras_weights.save_weights(a, tmp_path / "w")
    b = FakeModel()
    b.hidden.dtype = np.float64
    b(X.astype(np.float64))
    with pytest.raises(ValueError, match=r"'hidden/kernel'.*float64.*float32"):
        keras_weights.load_weights(b, tmp_path / "w")


def test_skip_mismatch_loads_the_rest_and_reports(tmp_path):
    net = FakeModel(sizes=(4, 3))
    net(X)
    keras_weights.save_weights(net, tmp_path / "w")
    other = FakeModel(sizes=(4, 2), seed=3)
    other(X)
    status = keras_weights.load_weights(other, tmp_path / "w", skip_mismatch=True)
    assert sorted(status.loaded) == ["hidden/bias", "hidden/kernel"]
    assert sorted(p for p, _ in status.skipped) == ["layers/0/bias", "layers/0/kernel"]
    np.testing.assert_array_equal(np.asarray(other.hidden._vars["kernel"]),
                                  np.asarray(net.hidden._vars["kernel"]))  # fmt: skip
    with pytest.raises(AssertionError):
        status.assert_consumed()


def test_deferred_problems_are_reported_after_build(tmp_path):
    net = FakeModel(sizes=(4, 3))
    net(X)
    keras_weights.save_weights(net, tmp_path / "w")
    grown = FakeModel(sizes=(4, 3, 2))
    keras_weights.load_weights(grown, tmp_path / "w")
    with pytest.raises(ValueError, match="'layers/1/kernel': the model has this variable"):
        grown(X)
    quiet = FakeModel(sizes=(4, 3, 2))
    status = keras_weights.load_weights(quiet, tmp_path / "w").expect_partial()
    quiet(X)
    assert ("layers/1/kernel" in str(status.skipped)) and status.missing


class Tied(Trackable):
    """Two paths reach one variable (`encoder/w` and `decoder/w`)."""

    def __init__(self, value):
        self.w = Variable(value, name="shared")
        self.b = Variable(np.zeros(3, np.float32), name="b")

    def _trackable_children(self):
        return {"encoder": {"w": self.w}, "decoder": {"w": self.w, "b": self.b}}


def test_tied_weights_are_stored_once_and_stay_tied(tmp_path):
    src = Tied(np.full((3, 3), 2.0, np.float32))
    keras_weights.save_weights(src, tmp_path / "tied")
    assert sorted(load_file(str(tmp_path / "tied"))) == ["decoder/b", "encoder/w"]
    assert restore.describe(tmp_path / "tied")["decoder/w"]["alias_of"] == "encoder/w"
    dst = Tied(np.zeros((3, 3), np.float32))
    keras_weights.load_weights(dst, tmp_path / "tied").assert_consumed()
    np.testing.assert_array_equal(np.asarray(dst.w), 2.0)
    dst.w.assign_add(np.ones((3, 3), np.float32))
    children = dst._trackable_children()
    assert children["encoder"]["w"] is children["decoder"]["w"]


class Untied(Trackable):
    def __init__(self):
        self.a = Variable(np.zeros((3, 3), np.float32))
        self.b = Variable(np.zeros((3, 3), np.float32))
        self.c = Variable(np.zeros(3, np.float32))

    def _trackable_children(self):
        return {"encoder": {"w": self.a}, "decoder": {"w": self.b, "b": self.c}}


def test_tied_file_restores_both_paths_of_an_untied_model(tmp_path):
    keras_weights.save_weights(Tied(np.full((3, 3), 5.0, np.float32)), tmp_path / "tied")
    dst = Untied()
    keras_weights.load_weights(dst, tmp_path / "tied").assert_consumed()
    np.testing.assert_array_equal(np.asarray(dst.a), 5.0)
    np.testing.assert_array_equal(np.asarray(dst.b), 5.0)


def test_by_name_matches_display_names_and_reports(tmp_path):
    src = Tied(np.full((3, 3), 4.0, np.float32))
    keras_weights.save_weights(src, tmp_path / "w")

    class Renamed(Trackable):
        def __init__(self):
            self.v = Variable(np.zeros((3, 3), np.float32), name="shared")
            self.x = Variable(np.zeros(2, np.float32), name="other")

        def _trackable_children(self):
            return {"somewhere": {"else": self.v}, "x": self.x}

    dst = Renamed()
    status = keras_weights.load_weights(dst, tmp_path / "w", by_name=True)
    np.testing.assert_array_equal(np.asarray(dst.v), 4.0)
    assert status.loaded == ["somewhere/else"] and "x" in dict(status.skipped)


def test_overwrite_false(tmp_path):
    net = FakeModel()
    net(X)
    keras_weights.save_weights(net, tmp_path / "w")
    with pytest.raises(FileExistsError):
        keras_weights.save_weights(net, tmp_path / "w", overwrite=False)


def test_damaged_file_assigns_nothing(tmp_path):
    net = FakeModel()
    net(X)
    keras_weights.save_weights(net, tmp_path / "w")
    raw = bytearray((tmp_path / "w").read_bytes())
    raw[-2] ^= 0xFF
    (tmp_path / "w").write_bytes(bytes(raw))
    other = FakeModel(seed=4)
    other(X)
    before = _values(other)
    with pytest.raises(keras_weights.WeightsFileError, match="checksum"):
        keras_weights.load_weights(other, tmp_path / "w")
    for p, v in _values(other).items():
        np.testing.assert_array_equal(v, before[p])


def test_unknown_save_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="save_format"):
        keras_weights.save_weights(FakeModel(), tmp_path / "w", save_format="pickle")
